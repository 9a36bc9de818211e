package reader

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/roce-exporter/roce_exporter/node"
)

// TestDSCPMapAndTrafficClass: the DSCP map comes from the `mlnx_qos` capture of
// mlx5-dscp-to-wrong-priority (26 on 0) and the `dcb` captures of the others (26 on
// 3); MLNX_OFED's traffic_class gives the device class, empty when none is set,
// absent where upstream mlx5 has no tc/ directory.
func TestDSCPMapAndTrafficClass(t *testing.T) {
	o := fixtureOptions("mlx5-dscp-to-wrong-priority", node.SourceRDMA, node.SourceNetdev, node.SourceDCB)
	o.ReplayDir = filepath.Join(fixtures, "mlx5-dscp-to-wrong-priority", "replay")
	snap := newTestReader(t, o).Read().Snapshot
	for nd, want := range map[string]int{"ens3f0np0": 0, "ens1f0np0": 3} {
		d := snap.DCB[nd]
		if d == nil || d.Trust != node.TrustDSCP {
			t.Fatalf("%s: DCB %+v", nd, d)
		}
		if p, ok := d.DSCP.Lookup(26); !ok || p != want {
			t.Errorf("%s: DSCP 26 -> %d, %v; want %d", nd, p, ok, want)
		}
		if p, _ := d.DSCP.Lookup(48); p != 6 {
			t.Errorf("%s: DSCP 48 -> %d", nd, p)
		}
		if d.CNPDSCP == nil || *d.CNPDSCP != 48 || d.CNPPrio == nil || *d.CNPPrio != 6 {
			t.Errorf("%s: CNP marking %v %v", nd, d.CNPDSCP, d.CNPPrio)
		}
	}
	p := snap.Device("mlx5_2").Ports[0]
	if p.TrafficClass == nil || *p.TrafficClass != 106 || !p.TrafficClassFile || p.DefaultRoCETOS == nil || *p.DefaultRoCETOS != 106 {
		t.Errorf("mlx5_2: traffic class %v (file %v), rdma_cm ToS %v", p.TrafficClass, p.TrafficClassFile, p.DefaultRoCETOS)
	}

	o = fixtureOptions("mlx5-rdma-on-priority-0", node.SourceRDMA)
	snap = newTestReader(t, o).Read().Snapshot
	if p := snap.Device("mlx5_5").Ports[0]; p.TrafficClass != nil || !p.TrafficClassFile {
		t.Errorf("empty traffic_class: %v (file %v), want nil but present", p.TrafficClass, p.TrafficClassFile)
	}
	o = fixtureOptions("mlx5-8x400g-healthy", node.SourceRDMA)
	snap = newTestReader(t, o).Read().Snapshot
	if p := snap.Device("mlx5_0").Ports[0]; p.TrafficClass != nil || p.TrafficClassFile {
		t.Errorf("upstream mlx5 (no tc/): %v (file %v), want absent", p.TrafficClass, p.TrafficClassFile)
	}
}

// TestBadTrafficClassIsAReadError: a traffic_class the parser cannot read is
// counted as a read error and gives no value, never 0.
func TestBadTrafficClassIsAReadError(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(filepath.Join(fixtures, "mlx5-rdma-on-priority-0"))); err != nil {
		t.Skipf("cannot copy the fixture: %v", err)
	}
	path := filepath.Join(root, "sys", "class", "infiniband", "mlx5_5", "tc", "1", "traffic_class")
	if err := os.WriteFile(path, []byte("Global tclass=999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := Options{SysPath: filepath.Join(root, "sys"), DevPath: filepath.Join(root, "dev"), Sources: []string{node.SourceRDMA}, Timeout: fixtureOptions("x").Timeout}
	r := newTestReader(t, o)
	res := r.Read()
	if p := res.Snapshot.Device("mlx5_5").Ports[0]; p.TrafficClass != nil {
		t.Errorf("bad traffic_class gave %d", *p.TrafficClass)
	}
	if n := r.ReadErrors(node.SourceRDMA); n != 1 {
		t.Errorf("%d rdma read errors, want 1", n)
	}
}
