package schedule

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
)

// fastSchedule is the README's schedule for diagnosis in minutes at 1,024
// nodes: nic_test_interval 8m, ib_write_bw timeout 15s (duration 5s).
var fastSchedule = config.Schedule{Enabled: true, Interval: 8 * time.Minute, Timeout: 15 * time.Second, Jitter: 48 * time.Second}

// Every witness test of a round, whoever runs it and however many pairs
// failed, involves only the round's own nodes and ends before the next round
// starts: the share the schedule set aside is never exceeded, even when every
// pair of every round fails (both ends triangulating at once).
func TestTriangulationStaysWithinTheRound(t *testing.T) {
	for _, tc := range []struct {
		nodes int
		share float64
		sch   config.Schedule
	}{
		{1024, 0.25, fastSchedule},
		{1024, 0.25, config.Schedule{Enabled: true, Interval: time.Hour, Timeout: 90 * time.Second, Jitter: 6 * time.Minute}},
		{130, 0.2, config.Schedule{Enabled: true, Interval: time.Hour, Timeout: 90 * time.Second, Jitter: 6 * time.Minute}},
		{9, 1, config.Schedule{Enabled: true, Interval: time.Hour, Timeout: 90 * time.Second, Jitter: 6 * time.Minute}},
	} {
		t.Run(fmt.Sprintf("%d@%v/%v", tc.nodes, tc.share, tc.sch.Interval), func(t *testing.T) {
			nodes := names(tc.nodes)
			f := NewFleetSchedule(nodes, tc.sch, tc.share)
			for e := int64(5000); e < 5003; e++ {
				for r := range f.Rounds() {
					from, until, ok := f.TriangulationWindow(e, r)
					if !ok {
						t.Fatalf("epoch %d round %d: no window (round %v, phase %v, test %v)", e, r, f.RoundLength(), f.ScheduledPhase(), f.WitnessTestLength())
					}
					next := f.RoundStart(e, r+1)
					if r+1 == f.Rounds() {
						next = f.RoundStart(e+1, 0)
					}
					if until.After(next) || from.Before(f.RoundStart(e, r).Add(f.ScheduledPhase())) {
						t.Fatalf("window %v–%v overlaps a scheduled phase (round start %v, next %v)", from, until, f.RoundStart(e, r), next)
					}
					mates := f.RoundNodes(e, r)
					if limit := max(2, int(tc.share*float64(tc.nodes))); len(mates) > limit {
						t.Fatalf("%d nodes in a round, share allows %d", len(mates), limit)
					}
					loaded := map[string]bool{}
					for _, p := range f.Pairs(e, r) {
						for _, end := range []Pair{{p.Client, p.Server}, {p.Server, p.Client}} {
							turn, _ := f.TurnOf(end.Client, e)
							plan, ok := f.Triangulate(end.Client, turn, []int{0, 3}, nil, nil)
							if !ok {
								if tc.nodes > 2 {
									t.Fatalf("%s: no triangulation", end.Client)
								}
								continue
							}
							loaded[end.Client] = true
							if len(plan.Witnesses) > WitnessAttempts || plan.Attempts > WitnessAttempts {
								t.Fatalf("%d witnesses, %d attempts: over the budget", len(plan.Witnesses), plan.Attempts)
							}
							for _, w := range plan.Witnesses {
								if w == end.Client || w == end.Server {
									t.Fatalf("%s witnesses its own test with %s: %v", end.Client, end.Server, plan.Witnesses)
								}
								loaded[w] = true
							}
						}
					}
					for n := range loaded {
						if !slices.Contains(mates, n) {
							t.Fatalf("%s is loaded by a triangulation of epoch %d round %d but is not in the round", n, e, r)
						}
					}
				}
			}
		})
	}
}

// A round too short for a witness test after its retests has no window; the
// jitter shrinks before the window does.
func TestTriangulationWindowNeedsRoom(t *testing.T) {
	slow := fastSchedule
	slow.Timeout = 90 * time.Second
	f := NewFleetSchedule(names(1024), slow, 0.25) // 4 rounds of 2m: not even the retest fits
	if _, _, ok := f.TriangulationWindow(100, 0); ok {
		t.Error("a 2m round has room for 90s tests, their retests and a witness")
	}
	if plan, ok := f.Triangulate("gpu0001", Turn{Epoch: 100, Peer: "gpu0002"}, []int{1}, nil, nil); ok {
		t.Errorf("triangulation without a window: %+v", plan)
	}
	f = NewFleetSchedule(names(1024), fastSchedule, 0.25)
	for e := int64(0); e < 50; e++ {
		for r := range f.Rounds() {
			if end := f.RoundStart(e, r).Add(f.ScheduledPhase() + f.WitnessTestLength()); end.After(f.RoundEnd(e, r)) {
				t.Fatalf("the jitter leaves no room for a witness test: epoch %d round %d ends %v, test would end %v", e, r, f.RoundEnd(e, r), end)
			}
		}
	}
}

// The witnesses: round-mates only; known-good ones (recent passes on the
// failing rails) first, newest first; never the failed peer, self, or a node
// self failed with on those rails; behind another switch than the failed peer
// (and than self) first when switches are known.
func TestWitnessOrder(t *testing.T) {
	f := NewFleetSchedule(names(64), config.Schedule{Enabled: true, Interval: time.Hour, Timeout: 90 * time.Second}, 1)
	const self = "gpu0000"
	turn, ok := f.TurnOf(self, 7)
	if !ok {
		t.Fatal("no turn")
	}
	now := time.Unix(1_800_000_000, 0)
	view := []Outcome{
		{Peer: "gpu0010", Rail: 2, Passed: true, At: now.Add(-2 * time.Hour)},
		{Peer: "gpu0011", Rail: 2, Passed: true, At: now.Add(-time.Hour)},
		{Peer: "gpu0012", Rail: 5, Passed: true, At: now},                     // another rail: no evidence for rail 2
		{Peer: "gpu0013", Rail: 2, Passed: false, At: now},                    // failed with it: not a witness
		{Peer: turn.Peer, Rail: 2, Passed: true, At: now.Add(-3 * time.Hour)}, // the failed peer: never
	}
	plan, ok := f.Triangulate(self, turn, []int{2}, view, nil)
	if !ok {
		t.Fatal("no plan")
	}
	if !slices.Equal(plan.Witnesses[:2], []string{"gpu0011", "gpu0010"}) {
		t.Errorf("known-good witnesses not first, newest first: %v", plan.Witnesses)
	}
	for _, w := range plan.Witnesses {
		if w == self || w == turn.Peer || w == "gpu0013" {
			t.Errorf("witness %s in %v", w, plan.Witnesses)
		}
	}
	if len(plan.Witnesses) != WitnessAttempts || plan.Tests != WitnessTests || !slices.Equal(plan.Rails, []int{2}) {
		t.Errorf("plan %+v", plan)
	}

	// Switches: gpu0010 sits behind the failed peer's switch, gpu0011 behind
	// self's; the rest behind a third.
	switchOf := func(n string, rail int) (string, bool) {
		switch n {
		case turn.Peer, "gpu0010":
			return "leaf-b", true
		case self, "gpu0011":
			return "leaf-a", true
		case "gpu0020":
			return "", false
		}
		return "leaf-c", true
	}
	view = append(view, Outcome{Peer: "gpu0020", Rail: 2, Passed: true, At: now.Add(-4 * time.Hour)})
	plan, _ = f.Triangulate(self, turn, []int{2}, view, switchOf)
	if !slices.Equal(plan.Witnesses[:3], []string{"gpu0020", "gpu0011", "gpu0010"}) {
		t.Errorf("with switches: %v, want the unknown-switch witness, then self's switch, then the peer's", plan.Witnesses)
	}

	// Without any evidence, two nodes of one round start with different witnesses.
	firsts := map[string]bool{}
	for _, p := range f.Pairs(7, 0)[:10] {
		turn, _ := f.TurnOf(p.Client, 7)
		plan, _ := f.Triangulate(p.Client, turn, []int{0}, nil, nil)
		firsts[plan.Witnesses[0]] = true
	}
	if len(firsts) < 6 {
		t.Errorf("10 actors share %d first witnesses: they would queue at the same responders", len(firsts))
	}
	if _, ok := f.Triangulate(self, turn, nil, view, nil); ok {
		t.Error("a plan without failing rails")
	}
}

// FarEndRails are the rails the far end triangulates; Unreached those of
// them that are silence from a client that reached another rail.
func TestFarEndRails(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	turn := Turn{Peer: "gpu0002", Start: start}
	at := func(d time.Duration) time.Time { return start.Add(d) }
	for _, tc := range []struct {
		name            string
		served          []Outcome
		want, unreached []int
	}{
		{"all passed", []Outcome{{"gpu0002", 0, true, at(1)}, {"gpu0002", 1, true, at(1)}, {"gpu0002", 2, true, at(1)}}, nil, nil},
		{"one failed", []Outcome{{"gpu0002", 0, true, at(1)}, {"gpu0002", 1, false, at(1)}, {"gpu0002", 2, true, at(1)}}, []int{1}, nil},
		{"failed, then passed its retest", []Outcome{{"gpu0002", 0, true, at(1)}, {"gpu0002", 1, false, at(1)}, {"gpu0002", 1, true, at(20 * time.Second)}, {"gpu0002", 2, true, at(1)}}, nil, nil},
		{"one never reached: silence", []Outcome{{"gpu0002", 0, true, at(1)}, {"gpu0002", 2, false, at(1)}}, []int{1, 2}, []int{1}},
		{"nothing reached: the client did not run, or no rail of ours answers", nil, []int{0, 1, 2}, nil},
		{"only an older epoch's results", []Outcome{{"gpu0002", 0, false, at(-time.Hour)}, {"gpu0002", 1, true, at(1)}, {"gpu0002", 2, true, at(1)}}, []int{0}, []int{0}},
		{"reached only in an older epoch", []Outcome{{"gpu0002", 0, true, at(-time.Hour)}, {"gpu0002", 1, true, at(-time.Hour)}}, []int{0, 1, 2}, nil},
		{"another peer's test", []Outcome{{"gpu0003", 0, true, at(1)}, {"gpu0003", 1, false, at(1)}, {"gpu0002", 0, true, at(1)}, {"gpu0002", 1, true, at(1)}, {"gpu0002", 2, true, at(1)}}, nil, nil},
		{"another peer reached us", []Outcome{{"gpu0003", 0, true, at(1)}, {"gpu0002", 1, true, at(1)}}, []int{0, 2}, []int{0, 2}},
	} {
		if got := FarEndRails(turn, tc.served, 3); !slices.Equal(got, tc.want) {
			t.Errorf("%s: FarEndRails %v, want %v", tc.name, got, tc.want)
		}
		if got := Unreached(turn, tc.served, 3); !slices.Equal(got, tc.unreached) {
			t.Errorf("%s: Unreached %v, want %v", tc.name, got, tc.unreached)
		}
		absent := len(tc.want) == 3 && tc.unreached == nil
		if got := ClientAbsent(turn, tc.served, 3); got != absent {
			t.Errorf("%s: ClientAbsent %v, want %v", tc.name, got, absent)
		}
	}
	if ClientAbsent(Turn{Peer: "gpu0002", Start: start, IsClient: true}, nil, 3) {
		t.Error("the client of a turn is never absent from its own turn")
	}
}

// How long a fault waits for its node's next scheduled test, plus the retest
// and the witness tests, at 1,024 nodes and max_fabric_share 0.25: with the
// README's schedule for minutes (nic_test_interval 8m, ib_write_bw timeout
// 15s) and with the defaults (1h, 90s). This is the node-side part of the time
// to name a suspect (Prometheus' scrape and rule evaluation come on top;
// tools/fleetsim measures the whole). go test -run TimeToTriangulate -v
// prints the figures.
func TestTimeToTriangulateAtScale(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sch   config.Schedule
		bound time.Duration
	}{
		{"8m/15s", fastSchedule, 12 * time.Minute},
		{"default 1h/90s", config.Schedule{Enabled: true, Interval: time.Hour, Timeout: 90 * time.Second, Jitter: 6 * time.Minute}, 85 * time.Minute},
	} {
		f := NewFleetSchedule(names(1024), tc.sch, 0.25)
		base := time.Unix(1_800_000_000, 0)
		step := tc.sch.Interval*9/10 + 13*time.Second
		var waits []time.Duration
		for i, n := range names(1024) {
			for k := range 40 {
				onset := base.Add(time.Duration(k)*step + time.Duration(i)*time.Second)
				turn, ok := f.NextTurn(n, onset)
				if !ok {
					t.Fatal("no turn")
				}
				waits = append(waits, turn.Start.Add(f.ScheduledPhase()+WitnessTests*f.WitnessTestLength()).Sub(onset))
			}
		}
		sort.Slice(waits, func(a, b int) bool { return waits[a] < waits[b] })
		p50, p95, worst := waits[len(waits)/2], waits[len(waits)*95/100], waits[len(waits)-1]
		t.Logf("%s: onset to triangulated: p50 %v, p95 %v, max %v", tc.name, p50, p95, worst)
		if p95 > tc.bound {
			t.Errorf("%s: p95 %v, over %v", tc.name, p95, tc.bound)
		}
	}
}

// Walk: measured tests stop it at Tests, busy ones cost an attempt and a
// pause, no test starts that could not end by Until, Attempts caps the tries.
func TestTriangulationWalk(t *testing.T) {
	from := time.Unix(1_800_000_000, 0)
	plan := Triangulation{Witnesses: []string{"a", "b", "c", "d", "e"}, From: from, Until: from.Add(10 * time.Minute),
		TestLength: time.Minute, Tests: 2, Attempts: 4}
	run := func(plan Triangulation, busy map[string]bool) ([]string, []time.Time) {
		var starts []time.Time
		tried := plan.Walk("self", func(w string, at time.Time) (bool, time.Time) {
			starts = append(starts, at)
			return !busy[w], at.Add(30 * time.Second)
		}, func(string, string) time.Duration { return 5 * time.Second })
		return tried, starts
	}
	if tried, starts := run(plan, nil); !slices.Equal(tried, []string{"a", "b"}) || !starts[1].Equal(from.Add(30*time.Second)) {
		t.Errorf("all free: tried %v at %v", tried, starts)
	}
	if tried, starts := run(plan, map[string]bool{"a": true, "c": true}); !slices.Equal(tried, []string{"a", "b", "c", "d"}) || !starts[1].Equal(from.Add(35*time.Second)) {
		t.Errorf("busy a and c: tried %v at %v", tried, starts)
	}
	if tried, _ := run(plan, map[string]bool{"a": true, "b": true, "c": true, "d": true}); len(tried) != 4 {
		t.Errorf("all busy: tried %v, want the 4 attempts", tried)
	}
	short := plan
	short.Until = from.Add(80 * time.Second) // the second would start at 30s and may last a minute
	if tried, _ := run(short, nil); !slices.Equal(tried, []string{"a"}) {
		t.Errorf("short window: tried %v", tried)
	}
	if p := BusyPause("x", "y"); p < time.Second || p >= 5*time.Second || p != BusyPause("x", "y") {
		t.Errorf("busy pause %v", p)
	}
}
