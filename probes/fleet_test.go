package probes

import (
	"fmt"
	"strings"
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

func TestFreshnessDropsOldResults(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := NewStore()
	s.SetClock(func() time.Time { return now })
	s.SetFreshness(KindIBWriteBW, 3*time.Hour)
	s.Add(&Result{Probe: KindIBWriteBW, Peer: "old", Device: "mlx5_0", Start: now.Add(-4 * time.Hour), Success: false})
	s.Add(&Result{Probe: KindIBWriteBW, Peer: "b", Device: "mlx5_0", Start: now.Add(-2 * time.Hour), Success: false})
	s.Add(&Result{Probe: KindIBWriteBW, Peer: "c", Device: "mlx5_0", Start: now.Add(-time.Hour), Success: true})
	s.Add(&Result{Probe: KindPing, Peer: "b", Device: "mlx5_0", Start: now.Add(-100 * time.Hour), Success: true}) // no bound
	var keys []string
	for _, r := range s.Latest() {
		keys = append(keys, r.Key())
	}
	if got := strings.Join(keys, " "); got != "ib_write_bw|b|mlx5_0 ib_write_bw|c|mlx5_0 ping|b|mlx5_0" {
		t.Errorf("fresh results %s", got)
	}
	kinds := s.Kinds()
	if len(kinds) != 2 || kinds[0].Probe != KindIBWriteBW || kinds[0].Stale != 1 || !kinds[0].LastCompleted.Equal(now.Add(-time.Hour)) {
		t.Errorf("kinds %+v", kinds)
	}
	j := s.Judge()
	if len(j) != 1 || j[0].PeersFailed != 1 || j[0].PeersPassed != 1 || j[0].FailedPeers[0] != "b" {
		t.Errorf("judgement %+v: the stale failure must not count", j)
	}
	// The failing link passes on its next test: it stops counting as failed at once.
	s.Add(&Result{Probe: KindIBWriteBW, Peer: "b", Device: "mlx5_0", Start: now, Success: true})
	if j := s.Judge(); j[0].PeersFailed != 0 || j[0].PeersPassed != 2 {
		t.Errorf("after the fix %+v", j)
	}
	// Results four bounds old are forgotten.
	now = now.Add(13 * time.Hour)
	s.Add(&Result{Probe: KindIBWriteBW, Peer: "d", Device: "mlx5_0", Start: now, Success: true})
	if k := s.Kinds(); k[0].Stale != 0 {
		t.Errorf("old results kept: %+v", k)
	}
}

func TestLocalVerdict(t *testing.T) {
	nic := []DeviceJudgement{
		{Probe: KindIBWriteBW, Device: "mlx5_0", PeersPassed: 2},
		{Probe: KindIBWriteBW, Device: "mlx5_3", Rail: 3, PeersFailed: 2, FailedPeers: []string{"b", "c"}},
	}
	if v := LocalVerdict(nic, KindIBWriteBW); !strings.Contains(v, "mlx5_3 (rail 3) fails with 2 peers (b, c)") || !strings.Contains(v, "RoCEProbeSuspectNICPort") {
		t.Errorf("NIC: %s", v)
	}
	node := []DeviceJudgement{
		{Probe: KindIBWriteBW, Device: "mlx5_0", PeersFailed: 2},
		{Probe: KindIBWriteBW, Device: "mlx5_1", PeersFailed: 3},
	}
	if v := LocalVerdict(node, KindIBWriteBW); !strings.Contains(v, "suspect this node") {
		t.Errorf("node: %s", v)
	}
	path := []DeviceJudgement{{Probe: KindIBWriteBW, Device: "mlx5_0", PeersFailed: 1, PeersPassed: 2, FailedPeers: []string{"b"}}}
	if v := LocalVerdict(path, KindIBWriteBW); !strings.Contains(v, "fails with b only") {
		t.Errorf("path: %s", v)
	}
	ok := []DeviceJudgement{{Probe: KindIBWriteBW, Device: "mlx5_0", PeersPassed: 2}}
	if v := LocalVerdict(ok, KindIBWriteBW); !strings.Contains(v, "every rail passes") {
		t.Errorf("healthy: %s", v)
	}
	if v := LocalVerdict(nil, KindIBWriteBW); !strings.Contains(v, "no fresh") {
		t.Errorf("empty: %s", v)
	}
}
