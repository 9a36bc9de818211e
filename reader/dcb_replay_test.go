package reader

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/roce-exporter/roce_exporter/node"
)

// A current MLNX_OFED `mlnx_qos -i` capture (max_buffer_size= on the buffer
// line, a shell prompt before it) replays in full: trust, the remapped DSCPs,
// PFC and the buffer split reach the snapshot, with no read error.
func TestMlnxQosMaxBufferSizeReplay(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(filepath.Join(fixtures, "mlx5-8x400g-healthy"))); err != nil {
		t.Skipf("cannot copy the fixture: %v", err)
	}
	capture, err := os.ReadFile("../internal/dcbnl/testdata/mlnx_qos-max_buffer_size-ofed23.10-cx7.txt")
	if err != nil {
		t.Fatal(err)
	}
	replay := filepath.Join(root, "replay")
	if err := os.WriteFile(filepath.Join(replay, "ens1f0np0.dcb.txt"), capture, 0o644); err != nil {
		t.Fatal(err)
	}
	o := Options{SysPath: filepath.Join(root, "sys"), DevPath: filepath.Join(root, "dev"), ReplayDir: replay,
		Sources: []string{node.SourceNetdev, node.SourceDCB}, Timeout: fixtureOptions("x").Timeout}
	r := newTestReader(t, o)
	snap := r.Read().Snapshot
	d := snap.DCB["ens1f0np0"]
	if d == nil {
		t.Fatalf("no DCB state for ens1f0np0: %v", snap.DCB)
	}
	if d.Trust != node.TrustDSCP || !d.PFCKnown || d.PFCEnabled != [8]bool{5: true} {
		t.Errorf("trust %q, PFC known %v on %v; want dscp, PFC on 5 only", d.Trust, d.PFCKnown, d.PFCEnabled)
	}
	for dscp, want := range map[int]int{26: 3, 40: 5, 48: 6, 47: 5} {
		if p, ok := d.DSCP.Lookup(dscp); !ok || p != want {
			t.Errorf("DSCP %d -> %d, %v; want %d", dscp, p, ok, want)
		}
	}
	if b := d.Buffer; b == nil || b.TotalSize != 4151520 || b.Size[1] != 220896 || b.PriorityBuffer[5] != 1 {
		t.Errorf("buffer %+v", d.Buffer)
	}
	if n := r.ReadErrors(node.SourceDCB); n != 0 {
		t.Errorf("%d DCB read errors", n)
	}
}
