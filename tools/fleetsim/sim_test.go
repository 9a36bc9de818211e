package fleetsim

import (
	"testing"
	"time"
)

// The seeded subset make test runs (make sim runs the whole table): at 128
// nodes × 8 rails, judged by alerts/ as it ships, every injected fault is
// named by its alert within the deadline, nothing else fires, and no
// round loads more than the plan's share of the fabric.
func TestShippedRulesNameTheFault(t *testing.T) {
	rs := loadShippedRules(t)
	cfg := DefaultConfig(128)
	cfg.Warmup, cfg.Deadline = 15*time.Minute, 30*time.Minute
	sim := NewSim(cfg, rs)
	classes := []string{"noise only", "bad NIC", "bad node", "node down"}
	var run []*Class
	for _, name := range classes {
		c, ok := ClassNamed(name)
		if !ok {
			t.Fatalf("no class %q", name)
		}
		run = append(run, c)
	}
	if err := sim.Prepare(run); err != nil {
		t.Fatal(err)
	}
	for _, c := range run {
		for seed := uint64(1); seed <= 2; seed++ {
			t.Run(c.Name, func(t *testing.T) {
				t.Parallel()
				o, err := sim.Run(c, seed)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("seed %d, %v: named after %v by %v; %d evaluations run, %d replayed; %d queries run, %d reused",
					seed, o.Faults, o.Named, o.NamedBy, o.Evaluations, o.Replayed, o.Queries, o.Reused)
				if len(o.Wrong) > 0 {
					t.Errorf("seed %d: wrong suspects %v", seed, o.Wrong)
				}
				if len(o.Faults) > 0 && o.Named < 0 {
					t.Errorf("seed %d: %v not named within %v", seed, o.Faults, cfg.Deadline)
				}
				if o.PeakShare > cfg.Share {
					t.Errorf("seed %d: peak share %.3f above the plan's %v", seed, o.PeakShare, cfg.Share)
				}
			})
		}
	}
}
