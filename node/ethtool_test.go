package node

import (
	"strconv"
	"strings"
	"testing"
)

// TestClassifierConsistency checks every driver name against the meaning
// it is given: the priority and direction come from the name itself.
func TestClassifierConsistency(t *testing.T) {
	for raw, c := range classifier {
		if c.Family == FamilyUnmapped || c.Family >= NumFamilies {
			t.Errorf("%q: family %d", raw, c.Family)
		}
		if c.Priority >= 0 {
			p := strconv.Itoa(c.Priority)
			// The priority digit must be the only digit in the name.
			if c.Priority > 7 || strings.IndexAny(raw, "01234567") != strings.LastIndexAny(raw, "01234567") || !strings.Contains(raw, p) {
				t.Errorf("%q: priority %d does not come from the name", raw, c.Priority)
			}
		} else if c.Priority != -1 {
			t.Errorf("%q: priority %d", raw, c.Priority)
		}
		if c.Direction != "" && (c.Direction != DirRX && c.Direction != DirTX || !strings.Contains(raw, c.Direction)) {
			t.Errorf("%q: direction %q", raw, c.Direction)
		}
		switch c.Family {
		case FamilyPFCPauseStormEvents:
			if c.Label != StormWarning && c.Label != StormError || !strings.Contains(raw, c.Label) {
				t.Errorf("%q: severity %q", raw, c.Label)
			}
		case FamilyPriorityDiscards, FamilyTCDiscards:
			if c.Label != DiscardOther && c.Label != DiscardBuffer && c.Label != DiscardCongestion {
				t.Errorf("%q: discard cause %q", raw, c.Label)
			}
		default:
			if c.Label != "" {
				t.Errorf("%q: label %q on %v", raw, c.Label, c.Family)
			}
		}
	}
}

func TestFamilyNames(t *testing.T) {
	seen := map[string]bool{}
	for f := FamilyUnmapped; f < NumFamilies; f++ {
		n := f.String()
		if n == "" || n == "unknown" || seen[n] {
			t.Errorf("family %d: name %q", f, n)
		}
		seen[n] = true
	}
	if NumFamilies.String() != "unknown" {
		t.Errorf("out of range family named %q", NumFamilies.String())
	}
}

// cosValues lays out bnxt_en's rx CoS counters and its per-priority ones
// from a priority-to-queue map, as bnxt_get_ethtool_stats prints them.
func cosValues(prio2cos [8]int, bytes, packets, discards [8]uint64, withPriorities bool) []EthtoolValue {
	var v []EthtoolValue
	add := func(f Family, p int, x uint64) {
		v = append(v, EthtoolValue{Family: f, Direction: DirRX, Priority: p, Value: x})
	}
	for q := 0; q < 8; q++ {
		add(FamilyCoSBytes, q, bytes[q])
		add(FamilyCoSPackets, q, packets[q])
		add(FamilyCoSDiscards, q, discards[q])
	}
	if withPriorities {
		for p := 0; p < 8; p++ {
			add(FamilyPriorityBytes, p, bytes[prio2cos[p]])
			add(FamilyPriorityPackets, p, packets[prio2cos[p]])
		}
	}
	return v
}

func TestResolveCoSDiscards(t *testing.T) {
	// RoCE on priority 3 in queue 1 (lossless), the rest in queue 0;
	// queues 2-7 idle, one of them with stray drops.
	prio2cos := [8]int{0, 0, 0, 1, 0, 0, 0, 0}
	bytes := [8]uint64{523312871, 3630849337640}
	packets := [8]uint64{1832214, 889012877}
	discards := [8]uint64{12, 4711, 0, 0, 0, 9}
	got := map[int]uint64{}
	for _, v := range ResolveCoSDiscards(cosValues(prio2cos, bytes, packets, discards, true)) {
		switch {
		case !v.Family.Exported():
			t.Errorf("internal value left: %+v", v)
		case v.Family == FamilyPriorityDiscards:
			if v.Direction != DirRX || v.Label != DiscardOther {
				t.Errorf("discard value %+v", v)
			}
			got[v.Priority] = v.Value
		}
	}
	want := map[int]uint64{0: 12, 1: 12, 2: 12, 3: 4711, 4: 12, 5: 12, 6: 12, 7: 12}
	if len(got) != len(want) {
		t.Errorf("discards %v, want %v", got, want)
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("priority %d: %d discards, want %d", p, got[p], w)
		}
	}

	// Priority 5 moved to idle queue 2: queues 2-7 all read 0 bytes, but 5
	// dropped 9 and the others 0, so priority 5's drops are unknown.
	prio2cos[5] = 2
	bytes, packets = [8]uint64{523312871, 3630849337640}, [8]uint64{1832214, 889012877}
	for _, v := range ResolveCoSDiscards(cosValues(prio2cos, bytes, packets, discards, true)) {
		if v.Family == FamilyPriorityDiscards && v.Priority == 5 {
			t.Errorf("priority 5 given %d discards although its queue is ambiguous", v.Value)
		}
	}

	// Without per-priority counters (bnxt's pri2cos not valid) nothing is
	// put on a priority, and the CoS values are gone all the same.
	if out := ResolveCoSDiscards(cosValues(prio2cos, bytes, packets, discards, false)); len(out) != 0 {
		t.Errorf("without priorities: %+v", out)
	}

	// A driver without CoS counters keeps its values untouched.
	mlx5 := []EthtoolValue{{Family: FamilyTCDiscards, Direction: DirRX, Priority: 3, Label: DiscardBuffer, Value: 2}}
	if out := ResolveCoSDiscards(mlx5); len(out) != 1 || &out[0] != &mlx5[0] {
		t.Errorf("mlx5 values changed: %+v", out)
	}
}
