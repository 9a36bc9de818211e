package schedule

import (
	"slices"
	"testing"
)

// Every node is in exactly one group per epoch, groups have k or more
// members, the leader is a member, and leaders and groups rotate.
func TestNCCLGroups(t *testing.T) {
	nodes := names(10)
	leaders := map[string]bool{}
	for e := int64(0); e < 20; e++ {
		groups := NCCLGroups(nodes, 3, e)
		if len(groups) != 3 {
			t.Fatalf("epoch %d: %d groups of 10 nodes by 3, want 3", e, len(groups))
		}
		seen := map[string]bool{}
		for _, g := range groups {
			if len(g) < 3 || len(g) > 4 {
				t.Fatalf("group %v", g)
			}
			for _, n := range g {
				if seen[n] {
					t.Fatalf("%s in two groups", n)
				}
				seen[n] = true
			}
			leaders[g[0]] = true
			if got, leads := NCCLGroupOf(nodes, 3, e, g[0]); !leads || !slices.Equal(got, g) {
				t.Fatalf("NCCLGroupOf(%s) = %v %v", g[0], got, leads)
			}
			if _, leads := NCCLGroupOf(nodes, 3, e, g[1]); leads {
				t.Fatalf("%s is not the leader of %v", g[1], g)
			}
		}
		if len(seen) != 10 {
			t.Fatalf("epoch %d covers %d nodes", e, len(seen))
		}
	}
	if len(leaders) < 8 {
		t.Errorf("only %d different leaders in 20 epochs: the leader does not rotate", len(leaders))
	}
	if g := NCCLGroups(names(3), 4, 1); len(g) != 1 || len(g[0]) != 3 {
		t.Errorf("fewer nodes than k: %v", g)
	}
	if g := NCCLGroups(names(1), 2, 1); g != nil {
		t.Errorf("one node: %v", g)
	}
}
