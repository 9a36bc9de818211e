package reader

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/node"
)

// copyReplay makes a private replay directory from a fixture's.
func copyReplay(t *testing.T, scenario string) string {
	t.Helper()
	src := filepath.Join(fixtures, scenario, "replay")
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// A module is read once per refresh interval: a capture changed in
// between is not seen until the interval has passed.
func TestTransceiverReadOncePerRefresh(t *testing.T) {
	dir := copyReplay(t, "mlx5-8x400g-healthy")
	real, err := os.ReadFile("../node/testdata/transceiver/sff8636-mellanox-mlxsw-640.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ens1f0np0.module.txt"), real, 0o644); err != nil {
		t.Fatal(err)
	}
	o := fixtureOptions("mlx5-8x400g-healthy", node.SourceTransceiver)
	o.ReplayDir = dir
	o.Refresh = time.Hour
	r := newTestReader(t, o)
	res := r.Read()
	tr := res.Snapshot.Transceivers["ens1f0np0"]
	if tr == nil || tr.Vendor != "Mellanox" || tr.Interface != "ens1f0np0" {
		t.Fatalf("transceiver = %+v (%v)", tr, res.Sources)
	}
	// The module is replaced by one whose capture no longer decodes.
	if err := os.WriteFile(filepath.Join(dir, "ens1f0np0.module.txt"), []byte("0x0000: 00\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if tr2 := r.Read().Snapshot.Transceivers["ens1f0np0"]; tr2 != tr {
		t.Error("module read again before the refresh interval")
	}
	r.opts.Refresh = 0
	res = r.Read()
	if res.Snapshot.Transceivers["ens1f0np0"] != nil {
		t.Error("a broken capture still decoded after the interval")
	}
	if r.ReadErrors(node.SourceTransceiver) == 0 {
		t.Error("a capture that does not parse is not counted as a read error")
	}
}

// No capture: the source is absent, not zero.
func TestTransceiverAbsentWithoutCaptures(t *testing.T) {
	dir := t.TempDir()
	o := fixtureOptions("mlx5-8x400g-healthy", node.SourceTransceiver, node.SourcePHY)
	o.ReplayDir = dir
	r := newTestReader(t, o)
	res := r.Read()
	if res.Snapshot.Sources[node.SourceTransceiver] != node.SourceAbsent || res.Snapshot.Sources[node.SourcePHY] != node.SourceAbsent {
		t.Errorf("sources = %v", res.Snapshot.Sources)
	}
	if res.Snapshot.Transceivers != nil || res.Snapshot.PHY != nil {
		t.Error("values without captures")
	}
}

func TestPHYReplay(t *testing.T) {
	dir := copyReplay(t, "mlx5-8x400g-healthy")
	os.WriteFile(filepath.Join(dir, "ens1f0np0.fec.txt"), []byte("FEC parameters for ens1f0np0:\nSupported/Configured FEC encodings: Auto RS\nActive FEC encoding: RS\nStatistics:\n  corrected_blocks: 256\n    Lane 0: 255\n    Lane 1: 1\n  uncorrectable_blocks: 3\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "ens2f0np0.link.txt"), []byte("Settings for ens2f0np0:\n\tLink detected: no (Autoneg, No partner detected)\n"), 0o644)
	o := fixtureOptions("mlx5-8x400g-healthy", node.SourcePHY)
	o.ReplayDir = dir
	r := newTestReader(t, o)
	res := r.Read()
	p := res.Snapshot.PHY["ens1f0np0"]
	if p == nil || p.FECMode != "RS" || p.FECUncorrectable.Total != 3 || !p.LinkKnown || !p.Link {
		t.Fatalf("phy = %+v", p)
	}
	q := res.Snapshot.PHY["ens2f0np0"]
	if q == nil || !q.LinkKnown || q.Link || q.ExtState != "autoneg" || q.ExtSubstate != "no_partner_detected" || q.FECCorrected == nil {
		t.Fatalf("phy = %+v", q)
	}
}

// fakeModuleNL serves a module's pages as MODULE_EEPROM_GET would, and
// records what was asked.
type fakeModuleNL struct {
	m     *node.ModuleEEPROM
	asked []uint8
}

func (f *fakeModuleNL) ModuleEEPROM(_ string, page, bank uint8, offset, length uint32) ([]byte, error) {
	if offset < node.ModulePageLen {
		return f.m.Lower[offset : offset+length], nil
	}
	f.asked = append(f.asked, page)
	p := f.m.Upper[node.ModulePageKey(page, bank)]
	if p == nil {
		return nil, os.ErrInvalid
	}
	return p[offset-node.ModulePageLen : offset-node.ModulePageLen+length], nil
}

func (f *fakeModuleNL) Close() error { return nil }

// Which pages are read follows the module: page 03h for a paged SFF-8636
// module, 01h/02h/11h for a paged CMIS one, nothing more for flat memory.
func TestReadModulePages(t *testing.T) {
	b, err := os.ReadFile("../node/testdata/transceiver/sff8636-mellanox-mlxsw-640.txt")
	if err != nil {
		t.Fatal(err)
	}
	m, err := node.ParseModuleHex(bytesReader(b))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeModuleNL{m: m}
	got, err := readModulePages(f, "eth0")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := node.DecodeModule(got)
	if err != nil || tr.TempThresholds == nil || tr.Vendor != "Mellanox" {
		t.Fatalf("%+v %v", tr, err)
	}
	if len(f.asked) != 2 || f.asked[0] != 0 || f.asked[1] != 3 {
		t.Errorf("pages asked %v, want [0 3]", f.asked)
	}

	cm := &node.ModuleEEPROM{Lower: make([]byte, node.ModulePageLen)}
	cm.Lower[0] = node.ModuleIDOSFP
	cm.SetPage(0, 0, nil)
	cm.SetPage(1, 0, nil)
	f = &fakeModuleNL{m: cm}
	if _, err := readModulePages(f, "eth0"); err != nil {
		t.Fatal(err)
	}
	if len(f.asked) != 4 || f.asked[1] != 1 || f.asked[2] != 2 || f.asked[3] != 0x11 {
		t.Errorf("CMIS pages asked %v", f.asked)
	}
	cm.Lower[2] = 0x80 // flat memory
	f = &fakeModuleNL{m: cm}
	readModulePages(f, "eth0")
	if len(f.asked) != 1 {
		t.Errorf("flat CMIS pages asked %v", f.asked)
	}
}

func bytesReader(b []byte) *strings.Reader { return strings.NewReader(string(b)) }
