package fleetsim

import (
	"testing"
	"time"
)

// Every layout cables every NIC to one switch of the right size, and names
// every switch once.
func TestTopologies(t *testing.T) {
	for _, c := range []struct {
		layout      Layout
		nodes       int
		switches    int
		nicsPerSwtc int
	}{
		{RailOptimised, 128, 4 * 8, 32},
		{RackOptimised, 128, 16, 64},
		{TwoNICSwitches, 128, 64 * 8, 2},
		{RailOptimised, 1024, 32 * 8, 32},
	} {
		topo := NewTopology(c.layout, c.nodes, 8, 8)
		if got := len(topo.Switches()); got != c.switches {
			t.Errorf("%s %d nodes: %d switches, want %d", c.layout, c.nodes, got, c.switches)
		}
		nics := map[int]int{}
		ids := map[string]bool{}
		ports := map[string]bool{}
		for n := range c.nodes {
			for r := range 8 {
				sw := topo.SwitchOf(n, r)
				nics[sw]++
				if rail := topo.RailOf(sw); rail >= 0 && rail != r {
					t.Fatalf("%s: node %d rail %d cabled to a switch of rail %d", c.layout, n, r, rail)
				}
				port := topo.Switches()[sw].ID + "/" + topo.PortOf(n, r)
				if ports[port] {
					t.Fatalf("%s: two NICs on switch port %s", c.layout, port)
				}
				ports[port] = true
			}
		}
		for sw, s := range topo.Switches() {
			if nics[sw] != c.nicsPerSwtc {
				t.Errorf("%s: switch %s carries %d NICs, want %d", c.layout, s.Name, nics[sw], c.nicsPerSwtc)
			}
			if ids[s.ID] {
				t.Errorf("%s: chassis ID %s twice", c.layout, s.ID)
			}
			ids[s.ID] = true
			for _, n := range topo.NodesUnder(sw) {
				if r := topo.RailOf(sw); r >= 0 && topo.SwitchOf(n, r) != sw {
					t.Errorf("%s: NodesUnder(%s) lists node %d, cabled elsewhere", c.layout, s.Name, n)
				}
			}
		}
	}
}

// The fabric fails what a fault breaks and nothing else: a dead NIC its
// own rail, dead uplinks only the flows between switches hashed onto them,
// a degraded NIC the bandwidth floor while it still connects.
func TestFabricFailsWhatTheFaultBreaks(t *testing.T) {
	fl, err := newFleet(DefaultConfig(128), RailOptimised)
	if err != nil {
		t.Fatal(err)
	}
	onset := time.Unix(1_800_000_000, 0)
	at := onset.Add(time.Minute)
	trialWith := func(f ...Fault) *trial {
		return &trial{fleet: fl, faults: f, onset: onset, seed: 1}
	}

	tr := trialWith(Fault{Kind: faultNIC, Node: 5, Rail: 3})
	if a := tr.run(5, 40, 3, at, 1); a.ok || a.connected {
		t.Errorf("dead NIC, its rail: %+v, want not connected", a)
	}
	if a := tr.run(40, 5, 2, at, 1); !a.ok {
		t.Errorf("dead NIC, another rail: %+v", a)
	}
	if a := tr.run(5, 40, 3, onset.Add(-time.Minute), 1); !a.ok {
		t.Errorf("before the onset: %+v", a)
	}

	tr = trialWith(Fault{Kind: faultDegradedNIC, Node: 5, Rail: 3})
	if a := tr.run(40, 5, 3, at, 1); a.ok || !a.connected || a.reason != "below_threshold" || a.bandwidth != degradedShare*lineRate {
		t.Errorf("degraded NIC: %+v", a)
	}

	// Node 0 sits under leaf p001-r3 with nodes 0–31; node 40 under p002.
	leaf := fl.topo.SwitchOf(0, 3)
	tr = trialWith(Fault{Kind: faultUplinks, Switch: leaf, Uplinks: []int{0, 1, 2, 3, 4, 5, 6, 7}})
	if a := tr.run(0, 1, 3, at, 1); !a.ok {
		t.Errorf("dead uplinks, a flow inside the leaf: %+v", a)
	}
	if a := tr.run(0, 40, 2, at, 1); !a.ok {
		t.Errorf("dead uplinks, another rail's leaf: %+v", a)
	}
	if a := tr.run(0, 40, 3, at, 1); a.ok || a.connected {
		t.Errorf("dead uplinks, a flow across them: %+v", a)
	}
	tr = trialWith(Fault{Kind: faultUplinks, Switch: leaf, Uplinks: []int{0, 1, 2, 3}})
	failed := 0
	for nonce := range uint64(1000) {
		if !tr.run(0, 40, 3, at, nonce).ok {
			failed++
		}
	}
	// Either flow of a run (TCP exchange, RDMA) on a dead half: 3/4.
	if failed < 700 || failed > 800 {
		t.Errorf("half the uplinks dead: %d of 1000 runs failed, want about 750", failed)
	}
}

// A path suspect names a one-uplink fault only between a node under its
// leaf and one under another leaf of the rail.
func TestPathSuspectOfOneBadUplink(t *testing.T) {
	fl, err := newFleet(DefaultConfig(128), RailOptimised)
	if err != nil {
		t.Fatal(err)
	}
	f := Fault{Kind: faultUplinks, Switch: fl.topo.SwitchOf(0, 3), Uplinks: []int{2}}
	path := func(a, b int, dev string) Alert {
		return Alert{Name: AlertPath, Labels: map[string]string{"instance": fl.instance(a), "peer": fl.names[b], "device": dev}}
	}
	for _, c := range []struct {
		alert Alert
		want  bool
	}{
		{path(0, 40, "mlx5_3"), true},
		{path(40, 0, "mlx5_3"), true},
		{path(0, 1, "mlx5_3"), false},  // both under the leaf: no uplink
		{path(0, 40, "mlx5_2"), false}, // another rail
		{path(40, 70, "mlx5_3"), false},
		{Alert{Name: AlertSwitch, Labels: map[string]string{"chassis_id": fl.topo.Switches()[f.Switch].ID}}, true},
		{Alert{Name: AlertSwitch, Labels: map[string]string{"chassis_id": fl.topo.Switches()[f.Switch+1].ID}}, false},
	} {
		if got := f.names(c.alert, fl); got != c.want {
			t.Errorf("%v names the fault: %v, want %v", c.alert, got, c.want)
		}
	}
}
