package config

import "time"

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

// FreshFor is how long a result of a probe on schedule s counts: rounds intervals plus
// the run's own timeout (a result is stamped when its run starts).
func FreshFor(s Schedule, rounds int) time.Duration {
	if s.Interval <= 0 || rounds <= 0 {
		return 0
	}
	return time.Duration(rounds)*s.Interval + s.Timeout
}
