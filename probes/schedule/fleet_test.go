package schedule

import (
	"fmt"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
)

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("gpu%04d", i)
	}
	return out
}

// Every node is tested exactly once per epoch (one bye per epoch with an odd
// count), the pairs of a round are disjoint, no round holds more than the
// share, and every pair meets within n-1 epochs (n even).
func TestFleetScheduleProperties(t *testing.T) {
	sch := config.Schedule{Enabled: true, Interval: time.Hour, Timeout: 90 * time.Second, Jitter: 6 * time.Minute}
	for _, tc := range []struct {
		nodes int
		share float64
	}{{8, 1}, {8, 0.25}, {9, 0.5}, {128, 0.1}, {130, 0.2}} {
		t.Run(fmt.Sprintf("%d@%v", tc.nodes, tc.share), func(t *testing.T) {
			nodes := names(tc.nodes)
			f := NewFleetSchedule(nodes, sch, tc.share)
			met := map[[2]string]bool{}
			epochs := tc.nodes - 1
			if tc.nodes%2 == 1 {
				epochs = tc.nodes
			}
			for e := int64(1000); e < 1000+int64(epochs); e++ {
				seen := map[string]int{}
				for r := range f.Rounds() {
					pairs := f.Pairs(e, r)
					if share := float64(2*len(pairs)) / float64(tc.nodes); share > tc.share && len(pairs) > 1 {
						t.Fatalf("epoch %d round %d tests %.3f of the nodes, more than %v", e, r, share, tc.share)
					}
					inRound := map[string]bool{}
					for _, p := range pairs {
						for _, n := range []string{p.Client, p.Server} {
							if inRound[n] {
								t.Fatalf("%s twice in epoch %d round %d", n, e, r)
							}
							inRound[n] = true
							seen[n]++
						}
						a, b := min(p.Client, p.Server), max(p.Client, p.Server)
						met[[2]string{a, b}] = true
						// Both ends derive the same turn, on opposite sides.
						tc, okc := f.TurnOf(p.Client, e)
						ts, oks := f.TurnOf(p.Server, e)
						if !okc || !oks || tc.Peer != p.Server || ts.Peer != p.Client || !tc.IsClient || ts.IsClient || tc.Round != r || !tc.Start.Equal(ts.Start) {
							t.Fatalf("turns disagree: %+v %+v for %+v", tc, ts, p)
						}
						// The run lies inside its round, and the epoch of any moment of it names the peer.
						if end := tc.Start.Add(sch.Timeout); end.After(f.RoundEnd(e, r)) {
							t.Fatalf("round %d of epoch %d: a run may end at %v, after the round (%v)", r, e, end, f.RoundEnd(e, r))
						}
						if got, ok := f.PeerAt(p.Server, tc.Start.Add(sch.Timeout-time.Second)); !ok || got.Peer != p.Client {
							t.Fatalf("PeerAt during the run = %+v", got)
						}
					}
				}
				want := tc.nodes - tc.nodes%2
				if len(seen) != want {
					t.Fatalf("epoch %d tests %d nodes, want %d", e, len(seen), want)
				}
			}
			if want := tc.nodes * (tc.nodes - 1) / 2; len(met) != want {
				t.Errorf("%d pairs met in a cycle, want %d", len(met), want)
			}
		})
	}
}

func TestFleetNextTurn(t *testing.T) {
	sch := config.Schedule{Enabled: true, Interval: time.Hour, Timeout: 90 * time.Second}
	f := NewFleetSchedule(names(8), sch, 0.25) // 4 rounds of 15 minutes
	if f.Rounds() != 4 || f.RoundLength() != 15*time.Minute {
		t.Fatalf("rounds %d of %v", f.Rounds(), f.RoundLength())
	}
	now := time.Unix(1_800_000_000, 0)
	prev := now
	for range 10 {
		turn, ok := f.NextTurn("gpu0003", prev)
		if !ok || !turn.Start.After(prev) {
			t.Fatalf("next turn %+v after %v", turn, prev)
		}
		if gap := turn.Start.Sub(prev); prev != now && gap > 2*time.Hour {
			t.Fatalf("gap of %v between two tests of a node", gap)
		}
		prev = turn.Start
	}
	if _, ok := NewFleetSchedule(names(1), sch, 1).NextTurn("gpu0000", now); ok {
		t.Error("a one-node plan has a turn")
	}
}

// A node's consecutive turns are at most an interval and a round apart (plus
// the jitter of the two rounds), so a node that fails just after its turn is
// tested again within that: it bounds the time to name a node that is down.
// Gaps across a bye (odd counts: one epoch without a turn per cycle) are left
// out. The whole cycle is walked for the small fleets, 300 epochs at 1,024.
func TestFleetTurnsAtMostAnIntervalAndARoundApart(t *testing.T) {
	sch := config.Schedule{Enabled: true, Interval: 8 * time.Minute, Timeout: 15 * time.Second, Jitter: 48 * time.Second}
	for _, tc := range []struct {
		nodes  int
		share  float64
		epochs int
	}{{8, 0.25, 7}, {9, 0.5, 9}, {128, 0.25, 127}, {129, 0.1, 129}, {1024, 0.25, 300}, {1024, 0.1, 300}} {
		t.Run(fmt.Sprintf("%d@%v", tc.nodes, tc.share), func(t *testing.T) {
			f := NewFleetSchedule(names(tc.nodes), sch, tc.share)
			limit := sch.Interval + f.RoundLength() + f.jitter
			last := map[string]Turn{}
			worst := time.Duration(0)
			for e := int64(5000); e < 5000+2*int64(tc.epochs); e++ {
				for r := range f.Rounds() {
					start := f.RoundStart(e, r)
					for _, p := range f.Pairs(e, r) {
						for _, node := range []string{p.Client, p.Server} {
							if prev, ok := last[node]; ok && prev.Epoch == e-1 {
								worst = max(worst, start.Sub(prev.Start))
							}
							last[node] = Turn{Epoch: e, Round: r, Start: start}
						}
					}
				}
			}
			if worst > limit {
				t.Errorf("two consecutive turns of a node %v apart, more than %v", worst, limit)
			}
		})
	}
}
