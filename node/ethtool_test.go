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
		case FamilyPriorityDiscards:
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
