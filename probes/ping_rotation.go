package probes

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/roce-exporter/roce_exporter/probes/schedule"
)

// pingState is ping at scale (schedule.PingPlan): which peers are pinned
// (pinged every round and kept as link series) besides the rotation.
type pingState struct {
	plan    *schedule.PingPlan
	rotates bool
	mu      sync.Mutex
	// failing are peers whose last ping failed on some rail, with when it
	// did: pinned until every rail answers again.
	failing map[string]time.Time
	// witnesses are the peers this node last triangulated with, with when.
	witnesses map[string]time.Time
}

func newPingState(nodes []string) *pingState {
	return &pingState{plan: schedule.NewPingPlan(nodes), rotates: schedule.PingRotates(len(nodes)),
		failing: map[string]time.Time{}, witnesses: map[string]time.Time{}}
}

// notePingWitness pins a witness of a triangulation for the next rounds.
func (s *Scheduler) notePingWitness(peer string) {
	s.pings.mu.Lock()
	defer s.pings.mu.Unlock()
	s.pings.witnesses[peer] = s.opts.Now()
}

// pinnedPingPeers are the peers pinged every round, most wanted first: the
// pair schedule's peer of this interval, the witnesses of the last
// interval, the peers whose pings fail (longest failing first). Peers caps
// them at schedule.PingPinnedPeers.
func (s *Scheduler) pinnedPingPeers(now time.Time) []string {
	var out []string
	if fleet := s.fleet[KindIBWriteBW]; pairKindRuns(s.opts.Plan.Probes, KindIBWriteBW) {
		if turn, ok := fleet.TurnOf(s.self.Name, fleet.Epoch(now)); ok {
			out = append(out, turn.Peer)
		}
	}
	s.pings.mu.Lock()
	defer s.pings.mu.Unlock()
	keepFor := max(s.opts.Plan.Probes.NICTestInterval, time.Hour)
	for w, at := range s.pings.witnesses {
		if now.Sub(at) > keepFor {
			delete(s.pings.witnesses, w)
		}
	}
	byAge := func(m map[string]time.Time) []string {
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		slices.SortFunc(names, func(a, b string) int {
			if c := m[a].Compare(m[b]); c != 0 {
				return c
			}
			return strings.Compare(a, b)
		})
		return names
	}
	out = append(out, byAge(s.pings.witnesses)...)
	return append(out, byAge(s.pings.failing)...)
}

// pingRound is one scheduled round of pings: every peer while the plan is
// small, else the rotation and the pinned peers. With the rotation, only
// the pinned peers' results, and the failures that pin their peer, are kept
// as link results, so the ping series stay within PingPinnedPeers × rails
// links whatever the plan's size; a passing ping of a rotating peer is
// counted in roce_probe_runs_total only.
func (s *Scheduler) pingRound(ctx context.Context, round int64) []*Result {
	if s.judgeIdentity(s.configOfNode(ctx, KindPing)) == identityMismatch {
		return nil
	}
	now := s.opts.Now()
	pinned := s.pinnedPingPeers(now)
	peers := s.pings.plan.Peers(s.self.Name, round, pinned)
	if !s.pings.rotates {
		return s.pingTargets(ctx, peers, func(*Result) bool { return true })
	}
	kept := map[string]bool{}
	for _, p := range pinned {
		if len(kept) == schedule.PingPinnedPeers {
			break
		}
		if p != s.self.Name {
			kept[p] = true
		}
	}
	// A peer no longer pinned (the pair schedule moved on, a witness expired)
	// goes before the round, so that the kept links never outnumber the pins.
	s.store.ForgetLinks(KindPing, func(peer string) bool { return kept[peer] })
	var mu sync.Mutex
	results := s.pingTargets(ctx, peers, func(r *Result) bool {
		mu.Lock()
		defer mu.Unlock()
		if !kept[r.Peer] && !r.Success && !r.Skipped && len(kept) < schedule.PingPinnedPeers {
			kept[r.Peer] = true // a new failure: pinned from now on
		}
		return kept[r.Peer]
	})
	s.pings.mu.Lock()
	failed := map[string]bool{}
	answered := map[string]bool{}
	for _, r := range results {
		switch {
		case r.Skipped:
		case r.Success:
			answered[r.Peer] = true
		default:
			failed[r.Peer] = true
		}
	}
	for p := range answered {
		if !failed[p] {
			delete(s.pings.failing, p)
		}
	}
	for p := range failed {
		if _, already := s.pings.failing[p]; !already && kept[p] {
			s.pings.failing[p] = now
		}
	}
	s.pings.mu.Unlock()
	// The series kept from now on are those of the peers pinned for the next
	// round: a peer pinned only for its failure goes with its series once it
	// answers on every rail again.
	stay := map[string]bool{}
	for _, p := range s.pinnedPingPeers(now) {
		if len(stay) < schedule.PingPinnedPeers && p != s.self.Name {
			stay[p] = true
		}
	}
	s.store.ForgetLinks(KindPing, func(peer string) bool { return stay[peer] })
	return results
}
