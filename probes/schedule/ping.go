package schedule

import (
	"maps"
	"slices"
)

// Ping at scale. Pinging every rail of every peer each round costs a node
// (N-1)·rails targets: at 1,024 nodes × 8 rails about 8,000 a minute, which a
// round of pings cannot finish, and as many series per ping family. Above
// PingMeshPeers peers a node pings a rotating subset instead:
//
//   - PingRotationPeers peers per round from a rotation every node derives
//     alike: the plan's nodes in one hashed order, each node walking the others
//     from its own place, PingRotationPeers further each round. Every node
//     pings and is pinged by exactly PingRotationPeers others per round, and
//     pings every peer within ceil((N-1)/PingRotationPeers) rounds;
//   - up to PingPinnedPeers pinned peers the scheduler names: the pair
//     schedule's peer of the interval, the latest witnesses, and peers whose
//     last ping failed (kept until they answer again).
//
// Only the pinned peers' results are kept as link series (see the probes
// scheduler), so the ping series of a node stay below PingPinnedPeers × rails
// links whatever N is.
const (
	// PingMeshPeers is the largest number of peers pinged all in every round:
	// 32 peers × 8 rails is 256 targets, about 16 s of a one-minute round
	// with 16 pings in flight.
	PingMeshPeers = 32
	// PingRotationPeers is how many peers of the rotation one round pings.
	PingRotationPeers = 16
	// PingPinnedPeers bounds the pinned peers of one round.
	PingPinnedPeers = 8
)

// PingRotates reports whether a plan of nodes pings a rotating subset rather
// than the full mesh.
func PingRotates(nodes int) bool { return nodes-1 > PingMeshPeers }

// PingPlan is the ping rotation of one plan; build it once (NewPingPlan), it
// does not change with the clock.
type PingPlan struct {
	sorted []string       // the plan's nodes, sorted
	order  []string       // the same, in the rotation's hashed order
	place  map[string]int // a node's index in order
}

// NewPingPlan orders the plan's nodes for the rotation; every node derives
// the same order.
func NewPingPlan(nodes []string) *PingPlan {
	sorted := slices.Clone(nodes)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	sorted = slices.DeleteFunc(sorted, func(n string) bool { return n == "" })
	order := slices.Clone(sorted)
	hashOrder(order, func(name string) string { return "ping/" + name })
	place := make(map[string]int, len(order))
	for i, n := range order {
		place[n] = i
	}
	return &PingPlan{sorted: sorted, order: order, place: place}
}

// Peers returns the peers self pings in ping round round (the interval's
// number since the Unix epoch): every other node while the plan has at most
// PingMeshPeers peers, else the rotation's PingRotationPeers plus the first
// PingPinnedPeers distinct plan nodes of pinned. Sorted, without self.
func (p *PingPlan) Peers(self string, round int64, pinned []string) []string {
	me, ok := p.place[self]
	if !ok {
		return nil
	}
	n := len(p.order)
	if !PingRotates(n) {
		out := slices.Clone(p.sorted)
		return slices.DeleteFunc(out, func(x string) bool { return x == self })
	}
	out := make(map[string]bool, PingRotationPeers+PingPinnedPeers)
	others := int64(n - 1)
	start := ((round%others)*PingRotationPeers%others + others) % others
	for j := range int64(PingRotationPeers) {
		offset := 1 + (start+j)%others // 1 … n-1: never self
		out[p.order[(int64(me)+offset)%int64(n)]] = true
	}
	kept := map[string]bool{}
	for _, x := range pinned {
		if len(kept) == PingPinnedPeers {
			break
		}
		if _, inPlan := p.place[x]; inPlan && x != self {
			kept[x] = true
			out[x] = true
		}
	}
	return slices.Sorted(maps.Keys(out))
}

// CoverRounds is within how many rounds the rotation alone pings every peer
// at least once.
func (p *PingPlan) CoverRounds() int {
	n := len(p.order)
	if !PingRotates(n) {
		return 1
	}
	return (n - 1 + PingRotationPeers - 1) / PingRotationPeers
}
