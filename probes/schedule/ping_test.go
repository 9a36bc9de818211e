package schedule

import (
	"fmt"
	"slices"
	"testing"
)

// Up to PingMeshPeers peers every node pings every peer every round.
func TestPingFullMeshWhenSmall(t *testing.T) {
	nodes := names(PingMeshPeers + 1)
	plan := NewPingPlan(nodes)
	for _, self := range []string{nodes[0], nodes[len(nodes)-1]} {
		got := plan.Peers(self, 12345, []string{"not-in-plan"})
		want := slices.DeleteFunc(slices.Clone(nodes), func(n string) bool { return n == self })
		if !slices.Equal(got, want) {
			t.Errorf("%s pings %v, want every peer", self, got)
		}
	}
	if PingRotates(PingMeshPeers+1) || !PingRotates(PingMeshPeers+2) {
		t.Error("the threshold is not PingMeshPeers peers")
	}
	if got := plan.Peers("stranger", 1, nil); got != nil {
		t.Errorf("a node outside the plan pings %v", got)
	}
}

// Above it: at most PingRotationPeers + PingPinnedPeers peers a round
// whatever the plan's size; every node pings and is pinged by exactly
// PingRotationPeers others of the rotation each round; every peer is pinged
// within PingCoverRounds rounds; pinned peers are added, capped, plan nodes
// only.
func TestPingRotationAtScale(t *testing.T) {
	for _, n := range []int{PingMeshPeers + 2, 1024, 4096} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			nodes := names(n)
			plan := NewPingPlan(nodes)
			cover := plan.CoverRounds()
			if want := (n - 1 + PingRotationPeers - 1) / PingRotationPeers; cover != want {
				t.Fatalf("cover rounds %d, want %d", cover, want)
			}
			const first = int64(29_000_000) // a minute number of 2025
			// Balance, in a few rounds: everyone pings and is pinged by exactly
			// PingRotationPeers of the rotation.
			for round := first; round < first+3; round++ {
				pingedBy := map[string]int{}
				for _, self := range nodes {
					got := plan.Peers(self, round, nil)
					if len(got) != PingRotationPeers || slices.Contains(got, self) {
						t.Fatalf("%s pings %d peers in round %d (self included: %v)", self, len(got), round, slices.Contains(got, self))
					}
					for _, p := range got {
						pingedBy[p]++
					}
				}
				for _, node := range nodes {
					if pingedBy[node] != PingRotationPeers {
						t.Fatalf("round %d: %s pinged by %d nodes, want %d", round, node, pingedBy[node], PingRotationPeers)
					}
				}
			}
			// Coverage: every peer within CoverRounds rounds, from any round on.
			for i, self := range []string{nodes[0], nodes[n/2], nodes[n-1]} {
				seen := map[string]bool{}
				from := first + int64(i*7)
				for round := from; round < from+int64(cover); round++ {
					for _, p := range plan.Peers(self, round, nil) {
						seen[p] = true
					}
				}
				if len(seen) != n-1 {
					t.Errorf("%s pinged %d of %d peers in %d rounds", self, len(seen), n-1, cover)
				}
			}
			pinned := append([]string{"not-in-plan", nodes[0]}, nodes[1:20]...)
			got := plan.Peers(nodes[0], first, pinned)
			if len(got) > PingRotationPeers+PingPinnedPeers {
				t.Errorf("%d peers with pins: over the bound %d", len(got), PingRotationPeers+PingPinnedPeers)
			}
			for _, p := range nodes[1 : 1+PingPinnedPeers] {
				if !slices.Contains(got, p) {
					t.Errorf("pinned %s not pinged", p)
				}
			}
			if slices.Contains(got, "not-in-plan") || slices.Contains(got, nodes[0]) {
				t.Errorf("pings a stranger or itself: %v", got)
			}
		})
	}
}

func BenchmarkPingPeers4096(b *testing.B) {
	nodes := names(4096)
	plan := NewPingPlan(nodes)
	for i := 0; b.Loop(); i++ {
		_ = plan.Peers(nodes[7], int64(i), nodes[:3])
	}
}
