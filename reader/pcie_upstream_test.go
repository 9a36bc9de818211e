package reader

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
	"github.com/roce-exporter/roce_exporter/node"
)

// The port above a NIC is read as the other end of its link: its capability
// once per refresh, its AER counters every read. Garbage in its files is
// counted as a read error and leaves the value unknown; a port without AER
// has no counters, not zeros.
func TestPCIeUpstreamPortRead(t *testing.T) {
	n := sysfixture.HealthyCX7(3)
	n.Devices[0].PCIeCurSpeed, n.Devices[0].RootSpeed = "16.0 GT/s PCIe", "16.0 GT/s PCIe"
	n.Devices[0].RootAERCorrectable = 3
	root := filepath.Join(t.TempDir(), "node")
	if err := sysfixture.Write(root, n); err != nil {
		t.Fatal(err)
	}
	sys := filepath.Join(root, "sys", "devices")
	up1 := filepath.Join(sys, "pci0000:29", "0000:29:01.0")
	if err := os.WriteFile(filepath.Join(up1, "max_link_speed"), []byte("fast\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	up2 := filepath.Join(sys, "pci0000:39", "0000:39:01.0")
	for _, f := range []string{"aer_dev_correctable", "aer_dev_fatal", "aer_dev_nonfatal"} {
		if err := os.Remove(filepath.Join(up2, f)); err != nil {
			t.Fatal(err)
		}
	}
	r := newTestReader(t, Options{SysPath: filepath.Join(root, "sys"), DevPath: filepath.Join(root, "dev"), Sources: []string{node.SourceRDMA, node.SourcePCIe}})
	snap := r.Read().Snapshot

	f0 := snap.PCI["0000:18:00.0"]
	if f0 == nil || f0.Upstream == nil {
		t.Fatalf("mlx5_0: %+v", f0)
	}
	if u := f0.Upstream; u.Address != "0000:17:01.0" || u.MaxSpeedGTs != 16 || u.MaxWidth != 16 || u.AER["correctable"] != 3 {
		t.Errorf("mlx5_0's root port: %+v", u)
	}
	if s, w := f0.LinkCapability(); s != 16 || w != 16 || !f0.UpstreamLimits() {
		t.Errorf("Gen5 card in a Gen4 slot: capability %v x%d, upstream limits %v", s, w, f0.UpstreamLimits())
	}

	f1 := snap.PCI["0000:2a:00.0"]
	if f1 == nil || f1.Upstream == nil || f1.Upstream.MaxSpeedGTs != 0 || f1.Upstream.MaxWidth != 16 {
		t.Fatalf("mlx5_1 with a garbage upstream speed: %+v", f1)
	}
	if s, _ := f1.LinkCapability(); s != 32 {
		t.Errorf("an unknown upstream speed leaves the card's: %v", s)
	}
	if n := r.ReadErrors(node.SourcePCIe); n != 1 {
		t.Errorf("%d read errors, want 1 (the garbage max_link_speed)", n)
	}

	if f2 := snap.PCI["0000:3a:00.0"]; f2 == nil || f2.Upstream == nil || f2.Upstream.AER != nil {
		t.Errorf("mlx5_2's root port without AER: %+v", f2.Upstream)
	}
}
