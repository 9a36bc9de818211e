package fleetsim

import (
	"testing"
	"time"
)

// At 128 nodes x 8 rails every injected fault is named, nothing else is,
// and no round loads more than the plan's share of the fabric.
func TestFleetLocalisation128(t *testing.T) {
	cfg := DefaultConfig(128)
	// 16 intervals: the slowest fault (the flapping port) is named after 8 at
	// 128 nodes; make sim runs 48.
	cfg.Epochs = 16
	for _, fault := range Faults {
		t.Run(fault, func(t *testing.T) {
			t.Parallel() // independent runs
			rep := Run(cfg, fault)
			t.Logf("%s: named after %v, wrong %v, peak share %.3f, %d rounds of %v", fault, rep.Named, rep.Wrong, rep.PeakShare, rep.Rounds, rep.RoundLen)
			if len(rep.Wrong) != 0 {
				t.Errorf("wrong suspects: %v", rep.Wrong)
			}
			if rep.PeakShare > cfg.Share {
				t.Errorf("peak share %.3f above the plan's %v", rep.PeakShare, cfg.Share)
			}
			if fault == FaultNone {
				if rep.Named >= 0 {
					t.Errorf("a suspect named without a fault")
				}
				return
			}
			// A NIC or node is named after its second failing test: within three
			// intervals. A broken path needs a pair crossing it to meet, and
			// both ends to pass again: allow the whole run.
			limit := 3 * cfg.Interval
			if fault == FaultPath || fault == FaultFlapping {
				limit = time.Duration(cfg.Epochs-cfg.FaultEpoch) * cfg.Interval
			}
			if rep.Named < 0 || rep.Named > limit {
				t.Errorf("suspect named after %v, want within %v", rep.Named, limit)
			}
		})
	}
}
