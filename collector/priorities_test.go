package collector

import (
	"testing"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/node"
)

func prioSnap(pfc []int, traffic map[int]uint64) *node.Snapshot {
	st := &node.DCBState{Interface: "eth0", PFCKnown: true}
	for _, p := range pfc {
		st.PFCEnabled[p] = true
	}
	et := &node.EthtoolStats{}
	for p := 0; p < 8; p++ {
		et.Values = append(et.Values, node.EthtoolValue{Family: node.FamilyPriorityPackets, Direction: node.DirRX, Priority: p, Value: traffic[p]})
	}
	// A family without a priority label never makes a priority matter.
	et.Values = append(et.Values, node.EthtoolValue{Family: node.FamilyPHYCRCErrors, Priority: 6, Value: 9})
	return &node.Snapshot{DCB: map[string]*node.DCBState{"eth0": st}, Ethtool: map[string]*node.EthtoolStats{"eth0": et}}
}

func prios(m [8]bool) []int {
	var out []int
	for p, on := range m {
		if on {
			out = append(out, p)
		}
	}
	return out
}

func TestPrioritySet(t *testing.T) {
	roce := 4
	o := &Options{Plan: &config.Plan{Expectations: config.Expectations{PFCPriority: &roce}}}
	s := o.priorities()
	if o.priorities() != s {
		t.Fatal("the DCB and ethtool collectors must share one set")
	}
	// Plan priority 4 (idle, PFC off: exactly what an operator must see),
	// PFC on 3, traffic on 0.
	snap := prioSnap([]int{3}, map[int]uint64{0: 10})
	if got := prios(s.of(snap, "eth0")); !equalInts(got, []int{0, 3, 4}) {
		t.Errorf("priorities = %v, want [0 3 4]", got)
	}
	// Next scrape: the counters reset (driver reload), PFC moved to 5.
	// What mattered keeps its series; 5 joins.
	snap = prioSnap([]int{5}, nil)
	if got := prios(s.of(snap, "eth0")); !equalInts(got, []int{0, 3, 4, 5}) {
		t.Errorf("after reset = %v, want [0 3 4 5]", got)
	}
	// Traffic on a new priority joins.
	snap = prioSnap([]int{5}, map[int]uint64{7: 1})
	if got := prios(s.of(snap, "eth0")); !equalInts(got, []int{0, 3, 4, 5, 7}) {
		t.Errorf("new traffic = %v, want [0 3 4 5 7]", got)
	}
	// An unknown interface has none.
	if got := prios(s.of(snap, "eth9")); len(got) != 0 {
		t.Errorf("unknown interface = %v", got)
	}

	all := (&Options{AllPriorities: true}).priorities()
	if got := prios(all.of(prioSnap(nil, nil), "eth0")); len(got) != 8 {
		t.Errorf("--collector.priority.all = %v", got)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestECNUniform(t *testing.T) {
	e := &node.ECNSetting{}
	for p := 0; p < 8; p++ {
		e.Present[p], e.Enabled[p] = true, true
	}
	if !uniform(e) {
		t.Error("all on is uniform")
	}
	e.Enabled[3] = false
	if uniform(e) {
		t.Error("one off is not uniform")
	}
	e.Enabled[3], e.Present[7] = true, false
	if uniform(e) {
		t.Error("an unread file is not uniform")
	}
}
