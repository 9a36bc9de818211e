package probes

import (
	"context"
	"testing"
)

// TestBandwidthProbeProvesItsPriority: the stand-in ib_write_bw moves 49 GB through
// the fixture's mlx5_0; where its priority counters count them decides the verdict,
// however good the bandwidth.
func TestBandwidthProbeProvesItsPriority(t *testing.T) {
	for _, c := range []struct {
		prio   string
		reason string
	}{{"3", ""}, {"0", ReasonWrongPriority}} {
		t.Run("priority "+c.prio, func(t *testing.T) {
			info, root := fixtureNode(t)
			standinEnv(t, "bw_counts")
			t.Setenv("STANDIN_FIXTURE", root)
			t.Setenv("STANDIN_PRIO", c.prio)
			s := newTestScheduler(t, testPlan(t, "0.9", ""), info)
			res := s.measure(context.Background(), s.bw, linkTarget(link0))
			if res.Reason != c.reason || res.Success != (c.reason == "") {
				t.Fatalf("success %v reason %q, want reason %q; warnings %q", res.Success, res.Reason, c.reason, res.Warnings)
			}
			if res.measuredBandwidth() != 392.34e9/8 || res.PriorityProof == nil {
				t.Fatalf("bandwidth %v, share %v", res.measuredBandwidth(), res.PriorityProof)
			}
			share := res.PriorityProof.RoCEPriorityShare
			switch c.reason {
			case "":
				if share < 1 || share > 1.05 || res.PriorityProof.CarriedOnPriority != nil {
					t.Errorf("share on priority 3 = %v (want the bytes plus 2%% headers), carried on %v", share, res.PriorityProof.CarriedOnPriority)
				}
			default:
				if share != 0 || res.PriorityProof.CarriedOnPriority == nil || *res.PriorityProof.CarriedOnPriority != 0 {
					t.Errorf("share %v, carried on %v; want 0 and priority 0", share, res.PriorityProof.CarriedOnPriority)
				}
				if res.Hint == "" || len(res.Warnings) == 0 {
					t.Errorf("no hint or detail: %+v", res)
				}
				t.Logf("verdict %s: %s", res.Reason, res.Warnings[len(res.Warnings)-1])
			}
		})
	}
}

// TestPriorityNotJudged: without a RoCE priority in the plan, with a node whose
// priority counters are not read, or with counters that do not move, a bandwidth run is
// judged on its bandwidth alone.
func TestPriorityNotJudged(t *testing.T) {
	standinEnv(t, "bw_ok")
	plan := testPlan(t, "0.9", "")
	plan.Expectations.PFCPriority = nil
	info, _ := fixtureNode(t)
	s := newTestScheduler(t, plan, info)
	if res := s.measure(context.Background(), s.bw, linkTarget(link0)); !res.Success || res.PriorityProof != nil {
		t.Errorf("lossy plan: %+v", res)
	}
	s = newTestScheduler(t, testPlan(t, "0.9", ""), fakeNode{rate: 400e9, gid: 3})
	if res := s.measure(context.Background(), s.bw, linkTarget(link0)); !res.Success || res.PriorityProof != nil {
		t.Errorf("no counters: %+v", res)
	}
	// A replayed node whose counters do not move while the stand-in "runs": nothing
	// to prove, not a wrong priority.
	s = newTestScheduler(t, testPlan(t, "0.9", ""), info)
	if res := s.measure(context.Background(), s.bw, linkTarget(link0)); !res.Success || res.PriorityProof != nil {
		t.Errorf("frozen counters: %+v", res)
	}
}
