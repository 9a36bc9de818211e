package schedule

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

var scheduleSizes = []int{2, 3, 4, 5, 7, 8, 16, 17, 64, 255, 256, 1000, 1001, 4096}

func nodeNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("gpu-%05d", i)
	}
	return names
}

// checkMatching asserts that a round is a matching of the index space
// [0,n): every node at most once, and all but the bye exactly once.
func checkMatching(t *testing.T, names []string, round int, pairs []Pair, index map[string]int, bye string, hasBye bool) []int {
	t.Helper()
	n := len(names)
	seen := make([]bool, n)
	ids := make([]int, 0, 2*len(pairs))
	for _, p := range pairs {
		for _, name := range []string{p.Client, p.Server} {
			i, ok := index[name]
			if !ok {
				t.Fatalf("n=%d round %d: unknown node %q", n, round, name)
			}
			if seen[i] {
				t.Fatalf("n=%d round %d: %q appears twice", n, round, name)
			}
			seen[i] = true
			ids = append(ids, i)
		}
	}
	missing := 0
	for i, s := range seen {
		if !s {
			missing++
			if !hasBye || names[i] != bye {
				t.Fatalf("n=%d round %d: node %d has no peer (bye %q, %v)", n, round, i, bye, hasBye)
			}
		}
	}
	if want := n % 2; missing != want {
		t.Fatalf("n=%d round %d: %d nodes without a peer, want %d", n, round, missing, want)
	}
	return ids
}

func TestScheduleIsAPerfectRoundRobin(t *testing.T) {
	for _, n := range scheduleSizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			names := nodeNames(n)
			index := make(map[string]int, n)
			for i, s := range names {
				index[s] = i
			}
			shuffled := slices.Clone(names)
			rand.New(rand.NewPCG(uint64(n), 1)).Shuffle(n, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			s := newRoundRobin(shuffled)

			k := s.roundsPerCycle()
			if want := n - 1 + n%2; k != want {
				t.Fatalf("RoundsPerCycle = %d, want %d", k, want)
			}
			// met[a*n+b] counts unordered pairs in the first cycle; the
			// ordered pairs over two cycles must cover both directions.
			met := make([]uint8, n*n)
			checkDirections := n <= 1001
			var directed []bool
			if checkDirections {
				directed = make([]bool, n*n)
			}
			for r := 0; r < 2*k; r++ {
				if r >= k && !checkDirections {
					break
				}
				pairs := s.round(r)
				bye, hasBye := s.bye(r)
				ids := checkMatching(t, names, r, pairs, index, bye, hasBye)
				for j := 0; j < len(ids); j += 2 {
					c, v := ids[j], ids[j+1]
					if r < k {
						a, b := min(c, v), max(c, v)
						met[a*n+b]++
					}
					if checkDirections {
						if directed[c*n+v] {
							t.Fatalf("round %d repeats %d→%d within two cycles", r, c, v)
						}
						directed[c*n+v] = true
					}
				}
			}
			for a := 0; a < n; a++ {
				for b := a + 1; b < n; b++ {
					if met[a*n+b] != 1 {
						t.Fatalf("pair (%d,%d) met %d times in one cycle", a, b, met[a*n+b])
					}
					if checkDirections && !(directed[a*n+b] && directed[b*n+a]) {
						t.Fatalf("pair (%d,%d) not tested in both directions over two cycles", a, b)
					}
				}
			}
		})
	}
}

func TestScheduleIgnoresInputOrderAndDuplicates(t *testing.T) {
	sorted := []string{"a", "b", "c", "d", "e"}
	messy := []string{"e", "c", "a", "", "d", "b", "c"}
	for r := -3; r < 12; r++ {
		if got, want := newRoundRobin(messy).round(r), newRoundRobin(sorted).round(r); !slices.Equal(got, want) {
			t.Errorf("round %d: %v != %v", r, got, want)
		}
	}
	if got := newRoundRobin(messy).names(); !slices.Equal(got, sorted) {
		t.Errorf("Nodes() = %v", got)
	}
}

func TestScheduleRolesAlternateAcrossCycles(t *testing.T) {
	s := newRoundRobin(nodeNames(6))
	k := s.roundsPerCycle()
	for r := range k {
		first, second := s.round(r), s.round(r+k)
		if len(first) != len(second) {
			t.Fatalf("round %d: %d vs %d pairs", r, len(first), len(second))
		}
		for i := range first {
			if first[i].Client != second[i].Server || first[i].Server != second[i].Client {
				t.Errorf("round %d: %v is not the reverse of %v", r, second[i], first[i])
			}
		}
		// A third cycle repeats the first.
		if !slices.Equal(first, s.round(r+2*k)) {
			t.Errorf("round %d: schedule is not periodic over two cycles", r)
		}
	}
}

func TestScheduleTinySets(t *testing.T) {
	if pairs := newRoundRobin(nil).round(0); pairs != nil {
		t.Errorf("no nodes: %v", pairs)
	}
	one := newRoundRobin([]string{"solo"})
	if one.roundsPerCycle() != 0 || one.round(5) != nil {
		t.Error("a single node has nothing to test")
	}
	if bye, ok := one.bye(0); !ok || bye != "solo" {
		t.Errorf("Bye = %q %v", bye, ok)
	}
	two := newRoundRobin([]string{"b", "a"}).round(0)
	if len(two) != 1 || (two[0] != Pair{Client: "a", Server: "b"}) {
		t.Errorf("two nodes = %v", two)
	}
	if _, ok := newRoundRobin([]string{"a", "b"}).bye(0); ok {
		t.Error("an even set has no bye")
	}
}

func BenchmarkScheduleRound4096(b *testing.B) {
	s := newRoundRobin(nodeNames(4096))
	for i := 0; b.Loop(); i++ {
		_ = s.round(i)
	}
}

// A node that is down can only be found by a peer that tests it, i.e. when
// it is the server: no node may stay on one side for long, or a down client
// is tested by nobody for a whole cycle (n-1 rounds).
func TestScheduleRolesAlternateWithinACycle(t *testing.T) {
	for _, n := range []int{4, 5, 8, 17, 128, 129, 1024} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s := newRoundRobin(nodeNames(n))
			k := s.roundsPerCycle()
			run := map[string]int{}     // consecutive rounds on the current side
			client := map[string]bool{} // the current side
			longest, who := 0, ""
			for r := 0; r < 2*k; r++ {
				for _, p := range s.round(r) {
					for name, isClient := range map[string]bool{p.Client: true, p.Server: false} {
						if c, ok := client[name]; ok && c == isClient {
							run[name]++
						} else {
							run[name] = 1
						}
						client[name] = isClient
						if run[name] > longest {
							longest, who = run[name], name
						}
					}
				}
				if bye, ok := s.bye(r); ok {
					delete(client, bye) // a bye breaks the run: the next round starts afresh
				}
			}
			// Two rounds at most within a cycle; three where a cycle ends
			// and the roles of the next one swap.
			if longest > 3 {
				t.Fatalf("%s stays on one side for %d rounds in a row (want ≤ 3)", who, longest)
			}
		})
	}
}
