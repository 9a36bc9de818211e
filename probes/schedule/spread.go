package schedule

import (
	"cmp"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
)

// Every node must derive the same order and the same delays from the plan and
// the clock alone, with no coordinator, and so must every version of the
// exporter in a fleet being upgraded: the words hashed below are part of the
// schedule's contract.

// hashKey is the 64-bit FNV-1a hash of key.
func hashKey(key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return h.Sum64()
}

// Jitter is a delay in [0, limit) drawn from key, the same on every node; 0
// when limit is not positive.
func Jitter(key string, limit time.Duration) time.Duration {
	if limit <= 0 {
		return 0
	}
	return time.Duration(hashKey(key) % uint64(limit))
}

// hashOrder sorts names by a hash of keyOf(name), ties by name.
func hashOrder(names []string, keyOf func(name string) string) {
	keys := make(map[string]uint64, len(names))
	for _, n := range names {
		keys[n] = mix64(hashKey(keyOf(n)))
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := cmp.Compare(keys[a], keys[b]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
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

// RoundStart is when round (the interval's number since the Unix epoch) of a
// probe kind on its own schedule runs: its wall-clock slot plus the round's
// jitter.
func RoundStart(kind string, sch config.Schedule, round int64) time.Time {
	return time.Unix(0, round*int64(sch.Interval)).Add(Jitter(kind+"/"+strconv.FormatInt(round, 10), sch.Jitter))
}
