package config

import (
	"strings"
	"testing"
	"time"
)

// threeNodes is twoNodes with a third node and PFC on priority 3; it is 22 lines long.
const threeNodes = twoNodes + `  - name: node03
    management_ip: 10.0.0.13
    interfaces:
      - netdev: ens1f0
        ip: 192.168.100.13/24
expectations:
  pfc_priority: 3
`

func TestIncastValidation(t *testing.T) {
	for _, tc := range []errorCase{
		{name: "incast on three nodes", yaml: threeNodes + `probes:
  enabled: true
  incast: {enabled: true, senders: 2}
`},
		{name: "off, nothing is required", yaml: minimalPlan + `probes:
  enabled: true
  incast: {senders: 2, port_range: 18547-18547}
`},
		{name: "no lossless priority to prove", yaml: twoNodes + `  - name: node03
    management_ip: 10.0.0.13
    interfaces:
      - netdev: ens1f0
        ip: 192.168.100.13/24
probes:
  enabled: true
  incast:
    enabled: true
`, want: []wantError{{24, "probes.incast.enabled", "the plan names none (expectations.pfc_priority)"}}},
		{name: "too few nodes", yaml: twoNodes + `expectations:
  pfc_priority: 3
probes:
  enabled: true
  incast:
    enabled: true
    senders: 3
`, want: []wantError{{22, "probes.incast.senders", "an incast of 3 senders needs 4 nodes"}}},
		{name: "one sender", yaml: threeNodes + `probes:
  incast:
    senders: 1
`, want: []wantError{{25, "probes.incast.senders", "must be 2–16"}}},
		{name: "ports for every sender on every rail", yaml: threeNodes + `probes:
  enabled: true
  incast:
    enabled: true
    senders: 2
    port_range: 18547-18547
`, want: []wantError{{28, "probes.incast.port_range", "18547-18547 has 1 ports but the receiver runs one server per sender on each rail"}}},
		{name: "ports apart from the responders'", yaml: threeNodes + `probes:
  enabled: true
  incast:
    enabled: true
    port_range: 18530-18540
`, want: []wantError{{27, "probes.incast.port_range", "overlaps probes.ib_write_bw's 18515-18530"}}},
		{name: "rounds shorter than a run", yaml: twoNodes + `  - name: node03
    management_ip: 10.0.0.13
    interfaces: [{netdev: ens1f0, ip: 192.168.100.13/24}]
  - name: node04
    management_ip: 10.0.0.14
    interfaces: [{netdev: ens1f0, ip: 192.168.100.14/24}]
  - name: node05
    management_ip: 10.0.0.15
    interfaces: [{netdev: ens1f0, ip: 192.168.100.15/24}]
  - name: node06
    management_ip: 10.0.0.16
    interfaces: [{netdev: ens1f0, ip: 192.168.100.16/24}]
expectations: {pfc_priority: 3}
probes:
  enabled: true
  max_fabric_share: 0.1
  incast:
    enabled: true
    interval: 1m
    timeout: 40s
    jitter: 0s
    duration: 5s
`, want: []wantError{{31, "probes.max_fabric_share", "splits the incast interval 1m0s into 2 rounds of 30s for 6 nodes in groups of 3"}}},
		{name: "results counting for years", yaml: threeNodes + `probes:
  enabled: true
  incast:
    enabled: true
    interval: 1000h
`, want: []wantError{{27, "probes.incast.interval", "fresh_rounds × (senders + 1) = 9 of its intervals of 1000h0m0s, about 375 days"}}},
		{name: "timeout shorter than the test", yaml: threeNodes + `probes:
  incast:
    duration: 30s
    timeout: 20s
`, want: []wantError{{26, "probes.incast.timeout", "must be longer than duration 30s"}}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkErrors(t, tc) })
	}
}

func TestIncastRounds(t *testing.T) {
	for _, tc := range []struct {
		nodes, senders int
		share          float64
		want           int
	}{
		{100, 2, 0.25, 5}, // 33 groups, 8 per round
		{100, 2, 1, 1},
		{3, 2, 0.1, 1},  // one group, at least one per round
		{2, 2, 0.5, 1},  // no group at all
		{64, 3, 0.5, 2}, // 16 groups, 8 per round
	} {
		if got := IncastRounds(tc.nodes, tc.senders, tc.share); got != tc.want {
			t.Errorf("IncastRounds(%d, %d, %v) = %d, want %d", tc.nodes, tc.senders, tc.share, got, tc.want)
		}
	}
	plan, err := Parse("p.yaml", []byte(threeNodes+"probes:\n  incast: {enabled: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if in := plan.Probes.Incast; in.Enabled != true || in.Interval != 24*time.Hour || in.Senders != 2 || in.Timeout != time.Minute {
		t.Errorf("incast defaults: %+v", in)
	}
}

// A share smaller than one incast group warns that each incast loads more than
// the share; a share that holds a group, and the whole fleet, do not.
func TestIncastGroupLargerThanShareWarns(t *testing.T) {
	warning := func(nodes int, probes string) string {
		t.Helper()
		plan, err := Parse("cluster.yaml", []byte(fleetPlan(nodes, nil, "expectations:\n  pfc_priority: 3\n"+probes)))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range plan.Warnings {
			if strings.Contains(w.Error(), "less than one incast") {
				return w.Error()
			}
		}
		return ""
	}
	// 8 nodes at a quarter: 2 nodes, but a group is 3.
	w := warning(8, "probes:\n  enabled: true\n  max_fabric_share: 0.25\n  incast: {enabled: true}\n")
	if !strings.Contains(w, "probes.max_fabric_share") || !strings.Contains(w, "0.25 of 8 nodes is 2.0 nodes") || !strings.Contains(w, "loads 3 nodes (38%)") {
		t.Errorf("warning %q", w)
	}
	for _, ok := range []struct {
		nodes  int
		probes string
	}{
		{12, "probes:\n  enabled: true\n  max_fabric_share: 0.25\n  incast: {enabled: true}\n"},
		{8, "probes:\n  enabled: true\n  incast: {enabled: true}\n"},
		{8, "probes:\n  enabled: true\n  max_fabric_share: 0.25\n"},
	} {
		if w := warning(ok.nodes, ok.probes); w != "" {
			t.Errorf("%d nodes, %q: %s", ok.nodes, ok.probes, w)
		}
	}
}
