package reader

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/roce-exporter/roce_exporter/node"
)

// MLNX_OFED's ecn/roce_rp and roce_np files reach the snapshot under their
// own names: the healthy fixture's defaults, the drift fixture's changed
// rails.
func TestDCQCNFromMLNXOFEDFiles(t *testing.T) {
	r := newTestReader(t, fixtureOptions("mlx5-dcqcn-drift", node.SourceDCB))
	snap := r.Read().Snapshot
	for i := 0; i < 8; i++ {
		iface := fmt.Sprintf("ens%df0np0", i+1)
		d := snap.DCB[iface]
		if d == nil || d.DCQCN == nil || d.DCQCN.Source != node.DCQCNSourceSysfs || len(d.DCQCN.Values) != len(node.DCQCNParamNames) {
			t.Fatalf("%s: %+v", iface, d)
		}
		want := maps.Clone(node.DCQCNDefaults)
		if i >= 4 {
			want["rpg_ai_rate"], want["rate_reduce_monitor_period"], want["min_time_between_cnps"] = 10, 2, 0
		}
		if !maps.Equal(d.DCQCN.Values, want) {
			t.Errorf("%s: %v, want %v", iface, d.DCQCN.Values, want)
		}
	}
	if n := r.ReadErrors(node.SourceDCB); n != 0 {
		t.Errorf("%d read errors", n)
	}
}

// copyFixture copies a fixture to change it.
func copyFixture(t *testing.T, scenario string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(filepath.Join(fixtures, scenario))); err != nil {
		t.Skipf("cannot copy the fixture: %v", err)
	}
	return root
}

// Upstream mlx5 shows them in debugfs only, as root, under the PCI function:
// read there when the MLNX_OFED files are absent, under the same names.
func TestDCQCNFromUpstreamDebugfs(t *testing.T) {
	root := copyFixture(t, "mlx5-8x400g-healthy")
	sys := filepath.Join(root, "sys")
	pci, err := filepath.EvalSymlinks(filepath.Join(sys, "class", "net", "ens1f0np0", "device"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(pci, "net", "ens1f0np0", "ecn")); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(sys, "kernel", "debug", "mlx5", filepath.Base(pci), "cc_params")
	os.MkdirAll(dir, 0o755)
	// cong.c's 22 files, upstream's "%u\n", with rp_gd changed.
	files := map[string]string{"rp_clamp_tgt_rate": "0", "rp_clamp_tgt_rate_ati": "1", "rp_time_reset": "300", "rp_byte_reset": "32767",
		"rp_threshold": "1", "rp_ai_rate": "5", "rp_max_rate": "0", "rp_hai_rate": "50", "rp_min_dec_fac": "50", "rp_min_rate": "1",
		"rp_rate_to_set_on_first_cnp": "0", "rp_dce_tcp_g": "1019", "rp_dce_tcp_rtt": "1", "rp_rate_reduce_monitor_period": "4",
		"rp_initial_alpha_value": "1023", "rp_gd": "7", "np_min_time_between_cnps": "4", "np_cnp_dscp": "48", "np_cnp_prio_mode": "1",
		"np_cnp_prio": "6", "rtt_resp_dscp_valid": "0", "rtt_resp_dscp": "0"}
	for name, v := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	o := fixtureOptions("x", node.SourceDCB)
	o.SysPath, o.DevPath = sys, filepath.Join(root, "dev")
	r := newTestReader(t, o)
	p := r.Read().Snapshot.DCB["ens1f0np0"].DCQCN
	want := maps.Clone(node.DCQCNDefaults)
	want["rpg_gd"] = 7
	if p == nil || p.Source != node.DCQCNSourceDebugfs || !maps.Equal(p.Values, want) {
		t.Fatalf("debugfs: %+v, want %v", p, want)
	}
	sysfsSame := &node.DCQCNParams{Source: node.DCQCNSourceSysfs, Values: want}
	if p.Hash() != sysfsSame.Hash() {
		t.Error("the same values hash differently read from debugfs and from sysfs")
	}

	// Not root: every file refuses; unknown, and no read error.
	o.FS = &deniedFS{suffix: "/cc_params/"}
	r = newTestReader(t, o)
	if d := r.Read().Snapshot.DCB["ens1f0np0"]; d != nil && d.DCQCN != nil {
		t.Errorf("denied debugfs: %+v", d.DCQCN)
	}
	if n := r.ReadErrors(node.SourceDCB); n != 0 {
		t.Errorf("denied debugfs counted %d read errors", n)
	}
}

// A file that does not hold a number is a read error of that parameter only.
func TestDCQCNGarbageIsAReadError(t *testing.T) {
	root := copyFixture(t, "mlx5-8x400g-healthy")
	sys := filepath.Join(root, "sys")
	f := filepath.Join(sys, "class", "net", "ens1f0np0", "ecn", "roce_rp", "rpg_gd")
	if err := os.WriteFile(f, []byte("eleven\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := fixtureOptions("x", node.SourceDCB)
	o.SysPath, o.DevPath = sys, filepath.Join(root, "dev")
	r := newTestReader(t, o)
	p := r.Read().Snapshot.DCB["ens1f0np0"].DCQCN
	if _, ok := p.Values["rpg_gd"]; ok || len(p.Values) != len(node.DCQCNParamNames)-1 {
		t.Errorf("garbage rpg_gd: %v", p.Values)
	}
	if n := r.ReadErrors(node.SourceDCB); n != 1 {
		t.Errorf("%d read errors, want 1", n)
	}
}

// deniedFS refuses every attribute whose path holds suffix, as debugfs's 0600
// files refuse a user.
type deniedFS struct {
	OSFS
	suffix string
}

func (f *deniedFS) OpenAttr(path string) (AttrFile, error) {
	if strings.Contains(path, f.suffix) {
		return nil, &fs.PathError{Op: "open", Path: path, Err: syscall.EACCES}
	}
	return f.OSFS.OpenAttr(path)
}
