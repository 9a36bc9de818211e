package schedule

import (
	"fmt"
	"slices"
	"time"
)

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
	hashOrder(order, func(n string) string { return fmt.Sprintf("nccl_group/%d/%s", epoch, n) })
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

// GroupOffset places the group runs in the middle of the NCCL interval, away
// from the whole-cluster run at its start.
func GroupOffset(interval time.Duration) time.Duration { return interval / 2 }
