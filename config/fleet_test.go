package config

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPairRounds(t *testing.T) {
	for _, tc := range []struct {
		nodes int
		share float64
		want  int
	}{
		{8, 1, 1},
		{8, 0.25, 4},     // one pair (2 of 8 nodes) per round
		{8, 0.1, 4},      // never less than one pair per round
		{128, 0.1, 11},   // 6 pairs (12 nodes, 9.4%) per round
		{1024, 0.1, 11},  // 51 pairs (102 nodes, 9.96%) per round
		{1024, 0.25, 4},  // 128 pairs per round
		{1024, 0.05, 21}, // 25 pairs per round
		{1, 0.1, 1},
		{0, 0.5, 1},
	} {
		got := PairRounds(tc.nodes, tc.share)
		if got != tc.want {
			t.Errorf("PairRounds(%d, %v) = %d, want %d", tc.nodes, tc.share, got, tc.want)
		}
		// The promise: no round holds more than share of the nodes.
		if pairs := tc.nodes / 2; pairs > 0 && tc.share < 1 {
			perRound := (pairs + got - 1) / got
			if share := float64(2*perRound) / float64(tc.nodes); share > tc.share && perRound > 1 {
				t.Errorf("%d nodes at %v: a round holds %.3f of the nodes", tc.nodes, tc.share, share)
			}
		}
	}
}

func TestFreshFor(t *testing.T) {
	if got := FreshFor(Schedule{Interval: time.Hour, Timeout: 90 * time.Second}, 3); got != 3*time.Hour+90*time.Second {
		t.Errorf("FreshFor = %v", got)
	}
	if got := FreshFor(Schedule{}, 3); got != 0 {
		t.Errorf("FreshFor without an interval = %v, want 0", got)
	}
	// Beyond what a Duration holds: the longest one, not a wrapped product.
	if got := FreshFor(Schedule{Interval: 2_000_000 * time.Hour, Timeout: time.Minute}, 100); got != math.MaxInt64 {
		t.Errorf("FreshFor of 100 × 2,000,000h = %v, want the longest Duration", got)
	}
}

func TestNICTestIntervalIsThePairProbesInterval(t *testing.T) {
	plan, err := Parse("cluster.yaml", []byte(twoNodes+"probes:\n  nic_test_interval: 30m\n  max_fabric_share: 0.5\n  ib_write_lat:\n    interval: 2h\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := plan.Probes
	if p.IBWriteBW.Interval != 30*time.Minute || p.IBWriteBW.Jitter != 3*time.Minute {
		t.Errorf("ib_write_bw interval %v jitter %v, want nic_test_interval 30m and 10%% jitter", p.IBWriteBW.Interval, p.IBWriteBW.Jitter)
	}
	if p.IBWriteLat.Interval != 2*time.Hour {
		t.Errorf("a written ib_write_lat interval was overridden: %v", p.IBWriteLat.Interval)
	}
	if p.MaxFabricShare != 0.5 || p.FreshRounds != 3 {
		t.Errorf("share %v rounds %d", p.MaxFabricShare, p.FreshRounds)
	}
}

func TestFleetRoundsTooShort(t *testing.T) {
	var b strings.Builder
	b.WriteString("networks:\n  management: 10.0.0.0/16\n  compute: 192.168.0.0/16\nnodes:\n")
	for i := range 64 {
		fmt.Fprintf(&b, "  - name: n%03d\n    management_ip: 10.0.%d.%d\n    interfaces:\n      - netdev: ens1f0\n        ip: 192.168.%d.%d/16\n", i, i/200, 1+i%200, i/200, 1+i%200)
	}
	// 64 nodes at 2%: one pair per round, 32 rounds of 112.5s per hour: fine.
	if _, err := Parse("cluster.yaml", []byte(b.String()+"probes:\n  enabled: true\n  max_fabric_share: 0.02\n")); err != nil {
		t.Fatalf("32 rounds of 112s with a 90s timeout rejected: %v", err)
	}
	// 64 nodes at 2% every 30 minutes: 32 rounds of 56s, shorter than the 90s timeout.
	_, err := Parse("cluster.yaml", []byte(b.String()+"probes:\n  enabled: true\n  nic_test_interval: 30m\n  max_fabric_share: 0.02\n"))
	if err == nil || !strings.Contains(err.Error(), "into 32 rounds of 56.25s") {
		t.Fatalf("want a rounds-too-short error, got %v", err)
	}
	if plan, err := Parse("cluster.yaml", []byte(twoNodes+"probes:\n  nccl:\n    group_size: 0\n")); err != nil || plan.Probes.NCCL.GroupSize != 0 {
		t.Errorf("group_size 0 (no groups): %v", err)
	}
	for _, bad := range []string{"max_fabric_share: 0", "max_fabric_share: 1.5", "fresh_rounds: 1", "nccl: {group_size: 1}", "nccl: {group_size: -2}"} {
		if _, err := Parse("cluster.yaml", []byte(twoNodes+"probes:\n  "+bad+"\n")); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// fleetPlan is a plan of n nodes with rails[i] compute interfaces on node i
// (1 when rails is shorter), and the probes section given.
func fleetPlan(n int, rails []int, probes string) string {
	var b strings.Builder
	b.WriteString("networks:\n  management: 10.0.0.0/16\n  compute: 192.168.0.0/16\nnodes:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - name: n%04d\n    management_ip: 10.0.%d.%d\n    interfaces:\n", i, i/200, 1+i%200)
		r := 1
		if i < len(rails) {
			r = rails[i]
		}
		for k := range r {
			fmt.Fprintf(&b, "      - netdev: ens%df0\n        ip: 192.168.%d.%d/16\n", k+1, (i*8+k)/200, 1+(i*8+k)%200)
		}
	}
	return b.String() + probes
}

// A round that holds a run but not its retest and a witness test warns; the
// README's schedule for minutes at 1,024 nodes and the default at an hour do not.
func TestFleetRoundsWithoutRoomToTriangulate(t *testing.T) {
	warned := func(doc string) string {
		t.Helper()
		plan, err := Parse("cluster.yaml", []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range plan.Warnings {
			if strings.Contains(w.Error(), "to retest a failure") {
				return w.Error()
			}
		}
		return ""
	}
	// 64 nodes at 2%: 32 rounds of 112.5s with a 90s timeout.
	if w := warned(fleetPlan(64, nil, "probes:\n  enabled: true\n  max_fabric_share: 0.02\n")); !strings.Contains(w, "rounds of 1m52.5s") || !strings.Contains(w, "needs 6m20s") {
		t.Errorf("want a warning about 112.5s rounds, got %q", w)
	}
	for _, ok := range []string{
		"probes:\n  enabled: true\n  max_fabric_share: 0.25\n",
		"probes:\n  enabled: true\n  max_fabric_share: 0.25\n  nic_test_interval: 8m\n  ib_write_bw: {duration: 5s, timeout: 15s}\n",
	} {
		if w := warned(fleetPlan(1024, nil, ok)); w != "" {
			t.Errorf("%s: %s", ok, w)
		}
	}
}

// A rail past every other node's last one warns, names the rail, and is what
// Plan.UntestableRails reports; equal nodes, a tie for the most rails, a plan
// without probes and a plan of one node do not.
func TestUntestableRails(t *testing.T) {
	const on = "probes:\n  enabled: true\n"
	warning := func(doc string) (string, *Plan) {
		t.Helper()
		plan, err := Parse("cluster.yaml", []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range plan.Warnings {
			if strings.Contains(w.Error(), "cannot be tested by any peer") {
				return w.Error(), plan
			}
		}
		return "", plan
	}
	w, plan := warning(fleetPlan(4, []int{2, 4, 2, 2}, on))
	if !strings.Contains(w, "nodes[1].interfaces[2]") || !strings.Contains(w, "node n0001 has 4 compute interfaces but no other node has more than 2") || !strings.Contains(w, "rail(s) 2, 3 (ens3f0)") {
		t.Errorf("warning %q", w)
	}
	if got := plan.UntestableRails("n0001"); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("UntestableRails(n0001) = %v", got)
	}
	if got := plan.UntestableRails("n0000"); got != nil {
		t.Errorf("UntestableRails(n0000) = %v, its rails have partners", got)
	}
	for name, doc := range map[string]string{
		"equal":     fleetPlan(4, []int{2, 2, 2, 2}, on),
		"tie":       fleetPlan(4, []int{2, 4, 4, 2}, on),
		"no probes": fleetPlan(4, []int{2, 4, 2, 2}, ""),
		"one node":  fleetPlan(1, []int{4}, on),
	} {
		w, plan := warning(doc)
		var untestable []int
		for _, n := range plan.Nodes {
			untestable = append(untestable, plan.UntestableRails(n.Name)...)
		}
		if w != "" || (name != "no probes" && untestable != nil) {
			t.Errorf("%s: warning %q, untestable rails %v", name, w, untestable)
		}
	}
}
