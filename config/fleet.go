package config

import (
	"math"
	"time"
)

// PairRounds is how many rounds one epoch (one pairing of every node, probes.
// nic_test_interval long) is split into so that at most share of the nodes are under
// test at once. An epoch of n nodes holds n/2 disjoint pairs; a round may hold
// floor(share*n/2) of them (at least one), so the epoch needs ceil((n/2)/that) rounds.
// Every node still takes part in exactly one round per epoch.
func PairRounds(nodes int, share float64) int {
	pairs := nodes / 2
	if pairs <= 0 {
		return 1
	}
	if share <= 0 || share >= 1 {
		return 1
	}
	perRound := int(share * float64(nodes) / 2)
	if perRound < 1 {
		perRound = 1
	}
	return (pairs + perRound - 1) / perRound
}

// IncastRounds is how many rounds one incast interval is split into so that at most
// share of the nodes take part in an incast at once. The interval cuts the nodes into
// groups of senders+1 (a receiver and its senders; the remainder sits the interval out);
// a round may hold floor(share*n/(senders+1)) groups (at least one).
func IncastRounds(nodes, senders int, share float64) int {
	size := senders + 1
	groups := nodes / size
	if groups <= 0 || size <= 1 || share <= 0 || share >= 1 {
		return 1
	}
	perRound := max(int(share*float64(nodes)/float64(size)), 1)
	return (groups + perRound - 1) / perRound
}

// IncastFreshRounds is how many incast intervals an incast result counts for: fresh_rounds
// times the group size. A node takes part in an incast only in the intervals it does not
// sit out (n mod (senders+1) of n nodes sit each one out, in a new order every time) and
// receives in about one of senders+1, so fresh_rounds intervals alone would let a small
// plan's node go stale by the luck of the draw.
func (p Probes) IncastFreshRounds() int { return p.FreshRounds * (p.Incast.Senders + 1) }

// FreshFor is how long a result of a probe on schedule s counts: rounds intervals plus
// the run's own timeout (a result is stamped when its run starts). A plan keeps it within
// MaxFreshFor; past what a Duration holds it is the longest Duration, never a wrapped one.
func FreshFor(s Schedule, rounds int) time.Duration {
	if s.Interval <= 0 || rounds <= 0 {
		return 0
	}
	if freshForOverflows(s, rounds, math.MaxInt64) {
		return math.MaxInt64
	}
	return time.Duration(rounds)*s.Interval + s.Timeout
}

// MaxFreshFor bounds how long a probe result may count (probes.fresh_rounds intervals
// plus the timeout): a result more than a year old says nothing about a link, and the
// bound leaves the store's arithmetic on it (it forgets results four bounds old) far
// inside a time.Duration.
const MaxFreshFor = 366 * 24 * time.Hour

// freshForOverflows reports whether rounds × interval + timeout exceeds limit, computed
// without overflowing.
func freshForOverflows(s Schedule, rounds int, limit time.Duration) bool {
	if s.Timeout > limit {
		return true
	}
	return s.Interval > (limit-s.Timeout)/time.Duration(rounds)
}

// UntestableRails are the rails of node name that no other node of the plan can
// test: the pair probes pair rail i with rail i, so a rail past every other node's
// last one has no partner and would go untested without a word. Nil when every
// rail has a partner, the node is not in the plan, or the plan has no other node
// (a plan of one node has nothing to pair with at all).
func (p *Plan) UntestableRails(name string) []int {
	self, ok := p.Node(name)
	if !ok {
		return nil
	}
	return untestable(self, otherWidest(p, self))
}

// otherWidest is the most compute interfaces any node but self has; -1 when
// there is no other node.
func otherWidest(p *Plan, self *Node) int {
	widest := -1
	for _, n := range p.Nodes {
		if n != self && len(n.Interfaces) > widest {
			widest = len(n.Interfaces)
		}
	}
	return widest
}

func untestable(self *Node, otherWidest int) []int {
	if otherWidest < 0 {
		return nil
	}
	var out []int
	for rail := otherWidest; rail < len(self.Interfaces); rail++ {
		out = append(out, rail)
	}
	return out
}

// RetestDelay is the pause before a failed pair-probe rail is tested again: a single
// failure that passes on the retest (a responder restarting, a burst of traffic) is
// noise, not a finding.
const RetestDelay = 5 * time.Second

// runMargin covers what a run costs besides its timeout: reading the node before it,
// waiting for the device lock, starting the process.
const runMargin = 5 * time.Second

// RetestedRunLength is the longest a pair test takes with its retest: a first attempt,
// the pause, the retest, each attempt bounded by timeout. A round's scheduled tests
// take at most that from the round's start; so does each witness test of a
// triangulation after it (probes/schedule/triangulate.go).
func RetestedRunLength(timeout time.Duration) time.Duration {
	return 2*timeout + RetestDelay + runMargin
}
