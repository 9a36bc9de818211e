package schedule

import (
	"slices"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
)

var incastDaily = config.Schedule{Enabled: true, Interval: 24 * time.Hour, Timeout: time.Minute, Jitter: 2 * time.Hour}

// Every epoch each node is in at most one incast, groups are a receiver and
// exactly the configured senders, a round loads at most the fabric share, every
// run lies inside its round, and receivers rotate.
func TestIncastGroups(t *testing.T) {
	nodes := names(100)
	s := NewIncastSchedule(nodes, incastDaily, 2, 0.25)
	// 33 groups of 3; a quarter of 100 nodes holds 8 groups: 5 rounds.
	if s.Rounds() != 5 {
		t.Fatalf("rounds = %d, want 5", s.Rounds())
	}
	received := map[string]int{}
	for e := int64(20000); e < 20060; e++ {
		groups := s.Groups(e)
		if len(groups) != 33 {
			t.Fatalf("epoch %d: %d groups, want 33", e, len(groups))
		}
		seen := map[string]bool{}
		perRound := map[int]int{}
		epochStart := time.Unix(0, e*int64(incastDaily.Interval))
		for _, g := range groups {
			if len(g.Senders) != 2 || !slices.IsSorted(g.Senders) {
				t.Fatalf("group %+v", g)
			}
			for _, n := range g.Members() {
				if seen[n] {
					t.Fatalf("epoch %d: %s in two incasts", e, n)
				}
				seen[n] = true
			}
			perRound[g.Round] += len(g.Members())
			roundStart := epochStart.Add(time.Duration(g.Round) * incastDaily.Interval / 5)
			if g.Start.Before(roundStart) || g.Start.Add(incastDaily.Timeout).After(roundStart.Add(incastDaily.Interval/5)) {
				t.Fatalf("group %+v runs outside its round starting %v", g, roundStart)
			}
			if got, ok := s.GroupOf(g.Senders[1], e); !ok || got.Receiver != g.Receiver || got.Slot(g.Senders[1]) != 1 {
				t.Fatalf("GroupOf(%s) = %+v, %v", g.Senders[1], got, ok)
			}
			received[g.Receiver]++
		}
		for r, n := range perRound {
			if n > 25 {
				t.Fatalf("epoch %d round %d loads %d nodes, above the share of 25", e, r, n)
			}
		}
	}
	if len(received) < 90 {
		t.Errorf("only %d of 100 nodes received in 60 epochs: the receiver does not rotate", len(received))
	}
}

func TestIncastGroupsTooFewNodes(t *testing.T) {
	if g := NewIncastSchedule(names(2), incastDaily, 2, 1).Groups(5); g != nil {
		t.Errorf("two nodes cannot hold a 2:1 incast: %v", g)
	}
	s := NewIncastSchedule(names(3), incastDaily, 2, 1)
	if g := s.Groups(5); len(g) != 1 {
		t.Fatalf("three nodes: %v", g)
	}
	// Four nodes: one sits each epoch out, but not always the same.
	s = NewIncastSchedule(names(4), incastDaily, 2, 1)
	out := map[string]bool{}
	for e := int64(0); e < 40; e++ {
		for _, n := range names(4) {
			if _, ok := s.GroupOf(n, e); !ok {
				out[n] = true
			}
		}
	}
	if len(out) < 4 {
		t.Errorf("the node sitting out never changes: %v", out)
	}
}

// NextGroup finds the node's next run; During names an incast a node takes part
// in for the window a pair test would run in, and stays silent outside it.
func TestIncastNextAndDuring(t *testing.T) {
	nodes := names(9)
	s := NewIncastSchedule(nodes, incastDaily, 2, 1)
	now := time.Unix(0, 20000*int64(incastDaily.Interval)).Add(time.Hour)
	g, ok := s.NextGroup("gpu0004", now)
	if !ok || !g.Start.After(now) || (g.Receiver != "gpu0004" && g.Slot("gpu0004") < 0) {
		t.Fatalf("NextGroup = %+v, %v", g, ok)
	}
	member := g.Senders[0]
	if got, ok := s.During(g.Start.Add(-30*time.Second), g.Start.Add(time.Second), member); !ok || got.Receiver != g.Receiver {
		t.Errorf("a pair test of %s reaching into the incast at %v is not told: %+v %v", member, g.Start, got, ok)
	}
	if _, ok := s.During(g.Start.Add(incastDaily.Timeout), g.Start.Add(incastDaily.Timeout+time.Minute), member); ok {
		t.Errorf("a pair test after the incast's timeout is told of it")
	}
	var outsider string
	for _, n := range nodes {
		if !slices.Contains(g.Members(), n) {
			outsider = n
		}
	}
	if other, ok := s.During(g.Start, g.Start.Add(time.Second), outsider); ok && other.Start.Equal(g.Start) && other.Receiver == g.Receiver {
		t.Errorf("%s is not in %+v but is told of it", outsider, g)
	}
	if _, ok := s.During(g.Start, g.Start.Add(time.Second)); !ok {
		t.Errorf("no incast running at %v for anyone", g.Start)
	}
	if _, ok := NewIncastSchedule(nodes, config.Schedule{}, 2, 1).NextGroup("gpu0001", now); ok {
		t.Error("no interval, yet a next incast")
	}
}
