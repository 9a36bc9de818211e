package schedule

import (
	"slices"
)

// Pair is one test of a round: Client runs ib_write_bw against Server's
// responder.
type Pair struct {
	Client string
	Server string
}

// roundRobin is the round-robin (circle method) pairing of a node set. Every
// node builds it from the same plan, so all agree on who tests whom without
// a coordinator.
//
// With n nodes a cycle has n-1 rounds (n even) or n rounds (n odd, one node
// sits out each round: the bye); every unordered pair meets exactly once
// per cycle. Roles swap on every other cycle, so both directions of every
// link are measured within two cycles.
type roundRobin struct {
	nodes []string // sorted, unique; odd sets get a trailing "" as the bye slot
	real  int      // number of real nodes
}

// newRoundRobin sorts and de-duplicates nodes; the caller's order does not
// matter, so nodes that read the plan in a different order still agree.
func newRoundRobin(nodes []string) *roundRobin {
	sorted := slices.Clone(nodes)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	sorted = slices.DeleteFunc(sorted, func(s string) bool { return s == "" })
	s := &roundRobin{nodes: sorted, real: len(sorted)}
	if len(sorted)%2 == 1 {
		s.nodes = append(s.nodes, "")
	}
	return s
}

// RoundsPerCycle is the number of rounds after which every pair has met
// once: n-1 for even n, n for odd n, 0 with fewer than two nodes.
func (s *roundRobin) roundsPerCycle() int {
	if s.real < 2 {
		return 0
	}
	return len(s.nodes) - 1
}

// Nodes returns the sorted, de-duplicated node list the schedule uses.
func (s *roundRobin) names() []string { return slices.Clone(s.nodes[:s.real]) }

// slot returns the node at circle position p in round r: position 0 is
// fixed and the others rotate by one place per round.
func (s *roundRobin) slot(p, r int) string {
	if p == 0 {
		return s.nodes[0]
	}
	k := len(s.nodes) - 1
	return s.nodes[1+(p-1+r)%k]
}

// round returns the pairs of round number round (any integer; it is taken
// modulo two cycles). It costs O(n).
func (s *roundRobin) round(round int) []Pair {
	k := s.roundsPerCycle()
	if k == 0 {
		return nil
	}
	r, swap := s.position(round)
	m := len(s.nodes)
	pairs := make([]Pair, 0, s.real/2)
	for i := 0; i < m/2; i++ {
		a, b := s.slot(i, r), s.slot(m-1-i, r)
		if a == "" || b == "" {
			continue // the bye
		}
		// Every node but the fixed one moves one circle position per round,
		// so its pair index changes by one (by none where it crosses from
		// one half of the circle to the other, where it also changes side):
		// orienting by the index's parity (the fixed node's pair by the
		// round's) makes a node client and server in turn, so a node that is
		// down is still tested by its peer at least every other epoch.
		// Orienting by i+r kept most nodes on one side for a whole cycle
		// (n-1 epochs): a node down on the client side was never tested.
		flip := i%2 == 1
		if i == 0 {
			flip = r%2 == 1
		}
		if flip {
			a, b = b, a
		}
		if swap {
			a, b = b, a
		}
		pairs = append(pairs, Pair{Client: a, Server: b})
	}
	return pairs
}

// Bye returns the node that sits out round number round: with an odd
// node count exactly one node has no peer each round.
func (s *roundRobin) bye(round int) (string, bool) {
	switch {
	case s.real == 1:
		return s.nodes[0], true
	case s.real < 2 || s.real == len(s.nodes):
		return "", false
	}
	// The bye slot is the last entry; find the circle position it rotated
	// to and return whoever faces it.
	r, _ := s.position(round)
	m, k := len(s.nodes), s.roundsPerCycle()
	p := (k-1-r+k)%k + 1
	return s.slot(m-1-p, r), true
}

// position reduces an absolute round number to the round within the cycle
// and whether this is a role-swapped (odd) cycle.
func (s *roundRobin) position(round int) (r int, swap bool) {
	k := s.roundsPerCycle()
	period := 2 * k
	abs := ((round % period) + period) % period
	return abs % k, abs >= k
}
