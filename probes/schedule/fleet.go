package schedule

import (
	"fmt"
	"slices"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
)

// FleetSchedule spreads the round-robin pairing over time so that a fleet is
// tested often enough without loading too much of it at once.
//
// Time is cut into epochs of the probe's interval (probes.nic_test_interval).
// Epoch e uses round e of the circle-method Schedule: a perfect matching, so
// every node meets exactly one peer per epoch and every NIC is tested once
// per interval. The epoch is split into Rounds() rounds (config.PairRounds,
// from probes.max_fabric_share); pair i of the matching runs in round
// roundOf(i). The pairs of a round are disjoint and rail-matched, and no
// round holds more than the share of the nodes. Consecutive epochs walk the
// circle, so every pair meets once in n-1 epochs: the full pair coverage is
// the slow background sweep.
//
// Every node derives all of it from the plan and the clock: no coordinator.
type FleetSchedule struct {
	pairs    *roundRobin
	sch      config.Schedule
	rounds   int
	roundLen time.Duration
	jitter   time.Duration
}

// NewFleetSchedule builds the schedule of one pair probe.
func NewFleetSchedule(nodes []string, sch config.Schedule, share float64) *FleetSchedule {
	pairs := scattered(newRoundRobin(nodes))
	f := &FleetSchedule{pairs: pairs, sch: sch, rounds: config.PairRounds(pairs.real, share)}
	if sch.Interval > 0 {
		f.roundLen = sch.Interval / time.Duration(f.rounds)
		// The jitter must leave the run inside its round and, when the round
		// is long enough, room after the scheduled phase for the witness tests
		// (triangulate.go), as many of WitnessTests as fit: a shorter jitter
		// rather than a witness test fewer.
		room := f.roundLen - sch.Timeout
		for k := WitnessTests; k > 0; k-- {
			if r := f.roundLen - f.ScheduledPhase() - time.Duration(k)*f.WitnessTestLength(); r >= 0 {
				room = r
				break
			}
		}
		f.jitter = max(0, min(sch.Jitter, room))
	}
	return f
}

// Rounds is the number of rounds per epoch.
func (f *FleetSchedule) Rounds() int { return f.rounds }

// RoundLength is how long one round lasts.
func (f *FleetSchedule) RoundLength() time.Duration { return f.roundLen }

// Interval is the epoch: how often every node is tested.
func (f *FleetSchedule) Interval() time.Duration { return f.sch.Interval }

// Epoch is the epoch that contains t (floor division, so clocks before 1970
// still work).
func (f *FleetSchedule) Epoch(t time.Time) int64 { return epochOf(t, f.sch.Interval) }

// epochOf is the number of the interval that contains t, 0 without one.
func epochOf(t time.Time, interval time.Duration) int64 {
	if interval <= 0 {
		return 0
	}
	n := t.UnixNano() / int64(interval)
	if t.UnixNano()%int64(interval) < 0 {
		n--
	}
	return n
}

// matching is the circle round an epoch uses.
func (f *FleetSchedule) matching(epoch int64) []Pair {
	k := int64(2 * f.pairs.roundsPerCycle())
	if k == 0 {
		return nil
	}
	return f.pairs.round(int(((epoch % k) + k) % k))
}

// Pairs returns the pairs that run in round of epoch.
func (f *FleetSchedule) Pairs(epoch int64, round int) []Pair {
	var out []Pair
	for i, p := range f.matching(epoch) {
		if f.roundOf(i) == round {
			out = append(out, p)
		}
	}
	return out
}

// Turn is one node's test in an epoch.
type Turn struct {
	Epoch    int64
	Round    int
	Peer     string
	IsClient bool
	Start    time.Time
}

// TurnOf finds node's test in epoch; ok is false for the bye (odd node
// counts) or a node not in the plan.
func (f *FleetSchedule) TurnOf(node string, epoch int64) (Turn, bool) {
	for i, p := range f.matching(epoch) {
		var t Turn
		switch node {
		case p.Client:
			t = Turn{Peer: p.Server, IsClient: true}
		case p.Server:
			t = Turn{Peer: p.Client}
		default:
			continue
		}
		t.Epoch, t.Round = epoch, f.roundOf(i)
		t.Start = f.RoundStart(epoch, t.Round)
		return t, true
	}
	return Turn{}, false
}

// roundOf is the round of the matching's i-th pair: the rounds up, then back
// down (0 1 2 3 3 2 1 0 …). A node's pair index moves by at most one from
// one epoch to the next (pairs.go), so its round does too and never wraps
// around: consecutive turns are at most an interval and a round apart. With
// i mod Rounds() a node went from round 0 to the last round of the next
// epoch, almost two intervals without a test (14 minutes of an 8-minute
// interval), and a node that died just after its turn waited that long to be
// named. Each round still holds at most ceil(pairs/Rounds()) pairs.
func (f *FleetSchedule) roundOf(i int) int {
	r := i % (2 * f.rounds)
	if r >= f.rounds {
		r = 2*f.rounds - 1 - r
	}
	return r
}

// RoundStart is when a round starts: its slot in the epoch plus a jitter
// every node derives from the epoch and round, so both ends agree.
func (f *FleetSchedule) RoundStart(epoch int64, round int) time.Time {
	at := time.Unix(0, epoch*int64(f.sch.Interval)+int64(round)*int64(f.roundLen))
	return at.Add(Jitter(fmt.Sprintf("pair/%d/%d", epoch, round), f.jitter))
}

// RoundEnd is when round's slot ends (the next round's unjittered start):
// a retest must finish before it.
func (f *FleetSchedule) RoundEnd(epoch int64, round int) time.Time {
	return time.Unix(0, epoch*int64(f.sch.Interval)+int64(round+1)*int64(f.roundLen))
}

// PeerAt is node's peer for a test that was running at t: the turn of the
// epoch containing t. A run starts after its round starts and ends before
// the round does, so the epoch of any moment of the run is the turn's.
func (f *FleetSchedule) PeerAt(node string, t time.Time) (Turn, bool) {
	return f.TurnOf(node, f.Epoch(t))
}

// NextTurn is node's first test starting after t.
func (f *FleetSchedule) NextTurn(node string, t time.Time) (Turn, bool) {
	if f.sch.Interval <= 0 || f.pairs.roundsPerCycle() == 0 {
		return Turn{}, false
	}
	// Look two cycles ahead at most: an odd node count gives each node one bye per cycle.
	for e := f.Epoch(t); e <= f.Epoch(t)+2; e++ {
		if turn, ok := f.TurnOf(node, e); ok && turn.Start.After(t) {
			return turn, true
		}
	}
	return Turn{}, false
}

// scattered reorders a schedule's nodes by a hash of their names. The circle
// method pairs positions whose sum is constant, so with nodes in name order
// the nodes under one leaf (gpu001–gpu032) would meet the nodes under another
// leaf only in a few consecutive epochs per cycle: a path between two leaves
// could go untested for weeks at a thousand nodes. Hashed positions spread
// every leaf pair over the whole cycle. Every node computes the same order.
func scattered(s *roundRobin) *roundRobin {
	order := slices.Clone(s.nodes[:s.real])
	hashOrder(order, func(n string) string { return n })
	out := &roundRobin{nodes: order, real: s.real}
	if len(order)%2 == 1 {
		out.nodes = append(out.nodes, "")
	}
	return out
}
