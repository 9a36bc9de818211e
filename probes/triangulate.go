package probes

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/probes/schedule"
)

// The node's side of the fleet diagnosis: after a confirmed failure in its
// turn, a node retests the failing rails against witnesses of its round
// (schedule.Triangulate decides with whom and when; this file runs it).
// Witness tests are ordinary pair tests, retested on failure like the
// scheduled ones; their results go to the store like any other.

// skipWitnessBusy is why a witness test that found the witness's responder
// closed is set aside: the peer's host answered on that rail, so the link is
// not what failed, and a perftest server serves one client at a time (or
// stands aside while its own node tests the device).
const skipWitnessBusy = "the witness's responder was busy (connection refused): not a measurement of the link"

// skipClientNotListening is why a far end's test of its absent client
// (schedule.ClientAbsent) that was refused is set aside: the client's host
// answered, its responder did not listen (its exporter stopped, or it serves
// another test).
const skipClientNotListening = "the absent client's responder was not listening (connection refused): not a measurement of the link"

// failedRails are the rails whose (retested) result failed.
func failedRails(results []*Result) []int {
	var out []int
	for _, r := range results {
		if r != nil && !r.Success && !r.Skipped {
			out = append(out, r.Rail)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// triangulateAfterTurn runs this node's side of the diagnosis of one turn:
// as the client, against the rails whose test failed (results); as the far
// end, against the rails FarEndRails finds from the tests it served, or,
// when its client never reached it and its rails sit under several switches
// (schedule.TestsAbsentClient), against the rails on which its own test of
// the client failed.
func (s *Scheduler) triangulateAfterTurn(ctx context.Context, r *perftestRunner, turn schedule.Turn, results []*Result) {
	fleet := s.fleet[r.kind()]
	from, until, ok := fleet.TriangulationWindow(turn.Epoch, turn.Round)
	if !ok {
		return
	}
	rails := failedRails(results)
	if !turn.IsClient {
		// The far end learns of the failure from what it served; wait until
		// the round's scheduled tests and their retests are over.
		if !sleepUntil(ctx, s.opts.Now, from) {
			return
		}
		peer, ok := s.opts.Plan.Node(turn.Peer)
		if !ok {
			return
		}
		links := s.links(peer)
		if schedule.TestsAbsentClient(s.self.Name, turn, s.store.Outcomes(r.kind()), len(links), s.opts.Topology) {
			s.logger.Info("testing a client that never reached this node", "probe", r.kind(), "peer", turn.Peer)
			rails = failedRails(s.testLinks(ctx, r, links, until, skipClientNotListening))
			from = s.opts.Now()
		} else {
			rails = s.store.FarEndRails(r.kind(), turn, len(links), func(rail int) string { return links[rail].Device })
		}
	}
	plan, ok := fleet.Triangulate(s.self.Name, turn, rails, s.store.Outcomes(r.kind()), s.opts.Topology)
	if !ok {
		return
	}
	if from.After(plan.From) {
		plan.From = from // after the far end's own test of its absent client
	}
	s.logger.Info("triangulating a failed pair test", "probe", r.kind(), "peer", turn.Peer, "rails", fmt.Sprint(plan.Rails),
		"client", turn.IsClient, "witnesses", fmt.Sprint(plan.Witnesses))
	s.runTriangulation(ctx, r, plan)
}

// runTriangulation tests the plan's rails against its witnesses in order,
// within its window and budget (schedule.Triangulation.Walk): a busy witness
// costs an attempt and a pause, not a test.
func (s *Scheduler) runTriangulation(ctx context.Context, r *perftestRunner, plan schedule.Triangulation) {
	plan.Walk(s.self.Name, func(w string, at time.Time) (bool, time.Time) {
		peer, ok := s.opts.Plan.Node(w)
		if !ok || !sleepUntil(ctx, s.opts.Now, at) {
			return false, s.opts.Now()
		}
		s.notePingWitness(w)
		results := s.testLinks(ctx, r, railLinks(s.links(peer), plan.Rails), plan.Until, skipWitnessBusy)
		return measuredAny(results), s.opts.Now()
	}, s.busyPause)
}

// railLinks keeps the links of rails.
func railLinks(links []Link, rails []int) []Link {
	return slices.DeleteFunc(links, func(l Link) bool { return !slices.Contains(rails, l.Rail) })
}

// measuredAny says whether a test measured at least one rail: neither
// skipped (busy witness, device in use, NCCL window) nor cut off.
func measuredAny(results []*Result) bool {
	for _, r := range results {
		if r != nil && !r.Skipped {
			return true
		}
	}
	return false
}

// sleepUntil waits until at by the scheduler's clock; false when ctx ended.
func sleepUntil(ctx context.Context, now func() time.Time, at time.Time) bool {
	if d := at.Sub(now()); d > 0 {
		return sleepCtx(ctx, d)
	}
	return ctx.Err() == nil
}

// pairKindRuns says whether a pair probe kind runs under the plan.
func pairKindRuns(p config.Probes, kind string) bool {
	switch kind {
	case KindIBWriteBW:
		return p.Enabled && p.IBWriteBW.Enabled
	case KindIBWriteLat:
		return p.Enabled && p.IBWriteLat.Enabled
	}
	return false
}
