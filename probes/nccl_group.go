package probes

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"
)

// KindNCCLGroup is the NCCL all_reduce run on a group of probes.nccl.
// group_size nodes.
const KindNCCLGroup = "nccl_group"

// NCCLGroups cuts the nodes into the groups of one interval (epoch): nodes
// ordered by a hash of their name and the epoch, cut into groups of k (the
// remainder, n mod k nodes, joins the first groups one each, so no group is
// smaller than k). Groups change every epoch, like the pairs, and each is led
// by its first member in that order, so the leaders rotate too; every node
// computes the same groups from the plan and the clock, without a
// coordinator. Each group is returned leader first, then the others by name.
func NCCLGroups(nodes []string, k int, epoch int64) [][]string {
	order := slices.Clone(nodes)
	slices.Sort(order)
	order = slices.Compact(order)
	if k < 2 || len(order) < 2 {
		return nil
	}
	key := func(n string) uint64 {
		h := fnv.New64a()
		fmt.Fprintf(h, "nccl_group/%d/%s", epoch, n)
		return mix64(h.Sum64())
	}
	slices.SortFunc(order, func(a, b string) int {
		ka, kb := key(a), key(b)
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return strings.Compare(a, b)
	})
	count := len(order) / k
	if count == 0 {
		count = 1 // fewer nodes than k: one group of all
	}
	groups := make([][]string, count)
	for i, n := range order {
		g := i / k
		if g >= count {
			g = (i - count*k) % count
		}
		groups[g] = append(groups[g], n)
	}
	for _, g := range groups {
		slices.Sort(g[1:])
	}
	return groups
}

// NCCLGroupOf is node's group in epoch and whether node leads it.
func NCCLGroupOf(nodes []string, k int, epoch int64, node string) (group []string, leads bool) {
	for _, g := range NCCLGroups(nodes, k, epoch) {
		if slices.Contains(g, node) {
			return g, g[0] == node
		}
	}
	return nil, false
}

// mix64 is splitmix64's finaliser: FNV alone orders similar names with a
// fixed stride.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// groupOffset places the group runs in the middle of the NCCL interval, away
// from the whole-cluster run at its start.
func groupOffset(interval time.Duration) time.Duration { return interval / 2 }

// runNCCLGroup runs this node's group of epoch when it leads it. The
// result's peer label is the other members joined with "+", so a slow group
// points at its nodes; the store keeps one group result per leader.
func (s *Scheduler) runNCCLGroup(ctx context.Context, epoch int64) *Result {
	n := s.opts.Plan.Probes.NCCL
	group, leads := NCCLGroupOf(s.opts.Plan.NodeNames(), n.GroupSize, epoch, s.self.Name)
	if !leads {
		return nil
	}
	var devs []string
	for _, l := range s.localLinks() {
		devs = append(devs, l.Device)
	}
	res := s.guarded(ctx, KindNCCLGroup, Link{Peer: strings.Join(group[1:], "+")}, func() *Result {
		r := s.nccl.runOn(ctx, group)
		r.Probe, r.Peer = KindNCCLGroup, strings.Join(group[1:], "+")
		return r
	}, devs...)
	if res != nil {
		s.store.Add(res)
	}
	return res
}
