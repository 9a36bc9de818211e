package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// wantError is one expected problem: its line, its field path and a piece of its message.
type wantError struct {
	line  int
	field string
	msg   string
}

// minimalPlan is the smallest valid plan; tests append sections to it. It is 10 lines
// long, so the first appended line is line 11.
const minimalPlan = `networks:
  management: 10.0.0.0/24
  compute: 192.168.100.0/24
nodes:
  - name: node01
    management_ip: 10.0.0.11
    interfaces:
      - netdev: ens1f0
        rdma_device: mlx5_0
        ip: 192.168.100.11/24
`

// twoNodes is minimalPlan with a second node; it is 15 lines long.
const twoNodes = minimalPlan + `  - name: node02
    management_ip: 10.0.0.12
    interfaces:
      - netdev: ens1f0
        ip: 192.168.100.12/24
`

type errorCase struct {
	name string
	yaml string
	want []wantError
}

// checkErrors asserts that Parse reports exactly the wanted problems, no more: a check
// that fires twice for one mistake is a bug too.
func checkErrors(t *testing.T, tc errorCase) {
	t.Helper()
	plan, err := Parse("cluster.yaml", []byte(tc.yaml))
	if len(tc.want) == 0 {
		if err != nil {
			t.Fatalf("Parse failed:\n%v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("Parse accepted the plan; want %d error(s)", len(tc.want))
	}
	if plan != nil {
		t.Errorf("Parse returned a plan together with an error")
	}
	var errs ValidationErrors
	if !errors.As(err, &errs) {
		t.Fatalf("error is %T, want ValidationErrors: %v", err, err)
	}
	unmatched := append(ValidationErrors(nil), errs...)
	for _, w := range tc.want {
		found := false
		for i, e := range unmatched {
			if e.Line == w.line && e.Field == w.field && strings.Contains(e.Msg, w.msg) {
				unmatched = append(unmatched[:i], unmatched[i+1:]...)
				found = true
				break
			}
		}
		if !found {
			t.Errorf("missing error %d: %s: ...%s...", w.line, w.field, w.msg)
		}
	}
	for _, e := range unmatched {
		t.Errorf("unexpected error: %v", e)
	}
	if t.Failed() {
		t.Logf("all errors:\n%v", err)
	}
}

func TestValidationErrors(t *testing.T) {
	for _, tc := range validationCases {
		t.Run(tc.name, func(t *testing.T) { checkErrors(t, tc) })
	}
}

var validationCases = []errorCase{
	{
		name: "minimal plan is valid",
		yaml: minimalPlan,
	},
	{
		name: "empty file",
		yaml: "",
		want: []wantError{{0, "", "the plan is empty"}},
	},
	{
		name: "comments only",
		yaml: "# nothing here yet\n",
		want: []wantError{{0, "", "the plan is empty"}},
	},
	{
		name: "null document",
		yaml: "---\n~\n",
		want: []wantError{{0, "", "the plan is empty"}},
	},
	{
		name: "plan is a list",
		yaml: "- node01\n- node02\n",
		want: []wantError{{1, "", "a plan is a mapping"}},
	},
	{
		name: "no nodes key",
		yaml: "networks:\n  management: 10.0.0.0/24\n  compute: 192.168.100.0/24\n",
		want: []wantError{{0, "nodes", "is required"}},
	},
	{
		name: "empty node list",
		yaml: "networks:\n  management: 10.0.0.0/24\n  compute: 192.168.100.0/24\nnodes: []\n",
		want: []wantError{{4, "nodes", "lists no nodes"}},
	},
	{
		name: "missing networks",
		yaml: `nodes:
  - name: node01
    management_ip: 10.0.0.11
    interfaces:
      - netdev: ens1f0
        ip: 192.168.100.11/24
`,
		want: []wantError{
			{0, "networks.management", "is required"},
			{0, "networks.compute", "is required for RoCE"},
		},
	},
	{
		name: "InfiniBand needs no compute network or IP",
		yaml: `expectations:
  link_layer: InfiniBand
networks:
  management: 10.0.0.0/24
nodes:
  - name: node01
    management_ip: 10.0.0.11
    interfaces:
      - netdev: ib0
`,
	},
	{
		name: "node misses required fields",
		yaml: `networks:
  management: 10.0.0.0/24
  compute: 192.168.100.0/24
nodes:
  - name: node01
  - management_ip: 10.0.0.12
    interfaces: []
`,
		want: []wantError{
			{5, "nodes[0].management_ip", "is required"},
			{5, "nodes[0].interfaces", "is required"},
			{6, "nodes[1].name", "is required"},
			{7, "nodes[1].interfaces", "lists no interfaces"},
		},
	},
	{
		name: "node is not a mapping",
		yaml: `networks:
  management: 10.0.0.0/24
  compute: 192.168.100.0/24
nodes:
  - node01
  -
`,
		want: []wantError{
			{5, "nodes[0]", "must be a mapping"},
			{6, "nodes[1]", "is empty"},
		},
	},
	{
		name: "duplicate node names",
		yaml: twoNodes + `  - name: node01
    management_ip: 10.0.0.13
    interfaces:
      - netdev: ens1f0
        ip: 192.168.100.13/24
`,
		want: []wantError{{16, "nodes[2].name", "node01 is already the name of nodes[0] (line 5)"}},
	},
	{
		name: "duplicate management IPs",
		yaml: minimalPlan + `  - name: node02
    management_ip: 10.0.0.11
    interfaces:
      - netdev: ens1f0
        ip: 192.168.100.12/24
`,
		want: []wantError{{12, "nodes[1].management_ip", "10.0.0.11 is already the management IP of nodes[0] (line 5)"}},
	},
	{
		name: "duplicate compute IPs across nodes",
		yaml: minimalPlan + `  - name: node02
    management_ip: 10.0.0.12
    interfaces:
      - netdev: ens1f0
        ip: 192.168.100.11/24
`,
		want: []wantError{{15, "nodes[1].interfaces[0].ip", "192.168.100.11 is already the compute IP of nodes[0].interfaces[0] (line 8)"}},
	},
	{
		name: "duplicate netdev and rdma_device within a node",
		yaml: minimalPlan + `      - netdev: ens1f0
        rdma_device: mlx5_0
        ip: 192.168.100.21/24
`,
		want: []wantError{
			{11, "nodes[0].interfaces[1].netdev", "ens1f0 is already listed as nodes[0].interfaces[0]"},
			{12, "nodes[0].interfaces[1].rdma_device", "mlx5_0 is already the RDMA device of nodes[0].interfaces[0]"},
		},
	},
	{
		name: "same netdev on two nodes is fine",
		yaml: twoNodes,
	},
	{
		name: "compute IP outside the compute network",
		yaml: `networks:
  management: 10.0.0.0/24
  compute: 192.168.100.0/24
nodes:
  - name: node01
    management_ip: 10.0.0.11
    interfaces:
      - netdev: ens1f0
        ip: 192.168.100.11/24
  - name: node02
    management_ip: 10.0.0.12
    interfaces:
      - netdev: ens1f0
        ip: 192.168.200.12/24
`,
		want: []wantError{{14, "nodes[1].interfaces[0].ip", "192.168.200.12/24 is outside the compute network 192.168.100.0/24"}},
	},
	{
		name: "multi-rail compute networks as a list",
		yaml: `networks:
  management: 10.0.0.0/24
  compute:
    - 192.168.100.0/24
    - 192.168.101.0/24
nodes:
  - name: node01
    management_ip: 10.0.0.11
    interfaces:
      - netdev: ens1f0
        ip: 192.168.100.11/24
      - netdev: ens2f0
        ip: 192.168.101.11/24
      - netdev: ens3f0
        ip: 192.168.102.11/24
`,
		want: []wantError{{15, "nodes[0].interfaces[2].ip", "is outside the compute networks 192.168.100.0/24, 192.168.101.0/24"}},
	},
	{
		name: "management IP outside the management network",
		yaml: strings.Replace(minimalPlan, "management_ip: 10.0.0.11", "management_ip: 10.0.1.11", 1),
		want: []wantError{{6, "nodes[0].management_ip", "10.0.1.11 is outside the management network 10.0.0.0/24"}},
	},
	{
		name: "management IP may carry a prefix length",
		yaml: strings.Replace(minimalPlan, "management_ip: 10.0.0.11", "management_ip: 10.0.0.11/24", 1),
	},
	{
		name: "overlapping networks",
		yaml: strings.Replace(minimalPlan, "compute: 192.168.100.0/24", "compute: [10.0.0.0/16, 10.0.0.128/25]", 1),
		want: []wantError{
			{3, "networks.compute[0]", "10.0.0.0/16 overlaps the management network 10.0.0.0/24"},
			{3, "networks.compute[1]", "10.0.0.128/25 overlaps the management network 10.0.0.0/24"},
			{3, "networks.compute[1]", "10.0.0.128/25 overlaps 10.0.0.0/16 (networks.compute[0])"},
			{10, "nodes[0].interfaces[0].ip", "outside the compute networks"},
		},
	},
	{
		name: "bad CIDRs",
		yaml: `networks:
  management: 10.0.0.5/24
  compute:
    - 192.168.100.0/33
    - 192.168.100.1
    - net-a
nodes:
  - name: node01
    management_ip: 10.0.0.11
    interfaces:
      - netdev: ens1f0
        ip: 192.168.100.11/24
`,
		want: []wantError{
			{2, "networks.management", "10.0.0.5/24 has host bits set; the network is 10.0.0.0/24"},
			{4, "networks.compute[0]", `"192.168.100.0/33" is not a network in CIDR form`},
			{5, "networks.compute[1]", `"192.168.100.1" is an address, not a network`},
			{6, "networks.compute[2]", `"net-a" is not a network in CIDR form`},
		},
	},
	{
		name: "bad IPs",
		yaml: `networks:
  management: 10.0.0.0/24
  compute: 192.168.100.0/24
nodes:
  - name: node01
    management_ip: 10.0.0.300
    interfaces:
      - netdev: ens1f0
        ip: 192.168.100.11
      - netdev: ens1f1
        ip: fe80::1%ens1f1/64
`,
		want: []wantError{
			{6, "nodes[0].management_ip", `"10.0.0.300" is not an IP address`},
			{9, "nodes[0].interfaces[0].ip", `"192.168.100.11" has no prefix length`},
			{11, "nodes[0].interfaces[1].ip", "is not an address with prefix length"},
		},
	},
	{
		name: "interface IP is required on RoCE",
		yaml: strings.Replace(minimalPlan, "        ip: 192.168.100.11/24\n", "", 1),
		want: []wantError{{8, "nodes[0].interfaces[0].ip", "is required for RoCE"}},
	},
	{
		name: "bad names",
		yaml: `networks:
  management: 10.0.0.0/24
  compute: 192.168.100.0/24
nodes:
  - name: node 01
    management_ip: 10.0.0.11
    interfaces:
      - netdev: a-very-long-netdev
        rdma_device: mlx5/0
        ip: 192.168.100.11/24
`,
		want: []wantError{
			{5, "nodes[0].name", `"node 01" is not a host name`},
			{8, "nodes[0].interfaces[0].netdev", "is not a device name (at most 15 characters"},
			{9, "nodes[0].interfaces[0].rdma_device", `"mlx5/0" is not a device name`},
		},
	},
	{
		name: "mtu out of range",
		yaml: minimalPlan + "expectations:\n  mtu: 10000\n",
		want: []wantError{{12, "expectations.mtu", "10000 is above 9216"}},
	},
	{
		name: "mtu below the IPv4 minimum",
		yaml: minimalPlan + "expectations:\n  mtu: 50\n",
		want: []wantError{{12, "expectations.mtu", "50 is outside 68–65520"}},
	},
	{
		name: "IPoIB connected mode MTU on InfiniBand",
		yaml: minimalPlan + "expectations:\n  link_layer: InfiniBand\n  mtu: 65520\n",
	},
	{
		name: "RoCE-only settings on InfiniBand",
		yaml: minimalPlan + `expectations:
  link_layer: infiniband
  roce_mode: v2
  pfc_priority: 3
  trust: dscp
  ecn: true
  roce_dscp: 26
  cnp_dscp: 48
  vlan: 100
`,
		want: []wantError{
			{13, "expectations.roce_mode", "applies to RoCE (link_layer: Ethernet) only"},
			{14, "expectations.pfc_priority", "applies to RoCE"},
			{15, "expectations.trust", "applies to RoCE"},
			{16, "expectations.ecn", "applies to RoCE"},
			{17, "expectations.roce_dscp", "applies to RoCE"},
			{18, "expectations.cnp_dscp", "applies to RoCE"},
			{19, "expectations.vlan", "applies to RoCE"},
		},
	},
	{
		name: "VLAN IDs out of range",
		yaml: minimalPlan + `expectations:
  vlan: 4095
`,
		want: []wantError{
			{12, "expectations.vlan", "4095 is not a VLAN ID (1–4094)"},
		},
	},
	{
		name: "DSCPs out of range, a traffic class written as a DSCP, an SL on RoCE",
		yaml: minimalPlan + `expectations:
  roce_dscp: 106
  cnp_dscp: -1
  ib_service_level: 3
`,
		want: []wantError{
			{12, "expectations.roce_dscp", "106 is not a DSCP (0–63); 106 looks like a traffic class (DSCP<<2 plus the ECN bits), which is DSCP 26"},
			{13, "expectations.cnp_dscp", "-1 is not a DSCP (0–63)"},
			{14, "expectations.ib_service_level", "applies to InfiniBand only"},
		},
	},
	{
		name: "bad enumerations and ranges in expectations",
		yaml: minimalPlan + `expectations:
  link_layer: RoCE
  roce_mode: v3
  pfc_priority: 8
  trust: 802.1p
  ecn: yes
  min_bandwidth_fraction: 1.5
  link_rate_gbps: -400
  firmware_consistent: "true"
`,
		want: []wantError{
			{12, "expectations.link_layer", `"RoCE" must be Ethernet (RoCE) or InfiniBand`},
			{13, "expectations.roce_mode", `"v3" must be v1 or v2`},
			{14, "expectations.pfc_priority", "8 is not an 802.1p priority (0–7)"},
			{15, "expectations.trust", `"802.1p" must be dscp or pcp`},
			{16, "expectations.ecn", `must be true or false, not "yes"`},
			{17, "expectations.min_bandwidth_fraction", "1.5 must be above 0 and at most 1"},
			{18, "expectations.link_rate_gbps", "-400 is not a port rate: write it in Gb/s, between 1 and 3200"},
			{19, "expectations.firmware_consistent", `must be true or false, not "true"`},
		},
	},
	{
		// 1e300 Gb/s loaded, and every floor derived from it was meaningless.
		name: "link_rate_gbps beyond any port",
		yaml: minimalPlan + "expectations:\n  link_rate_gbps: 1e300\n",
		want: []wantError{{12, "expectations.link_rate_gbps", "1e+300 is not a port rate"}},
	},
	{
		// A unit mistake: bits per second where Gb/s are meant.
		name: "link_rate_gbps in bits per second",
		yaml: minimalPlan + "expectations:\n  link_rate_gbps: 400000000000\n",
		want: []wantError{{12, "expectations.link_rate_gbps", "4e+11 is not a port rate"}},
	},
	{
		// 6500h × 100 wrapped time.Duration's product around: the store
		// forgot every result as it was added.
		name: "fresh_rounds times the interval beyond a year",
		yaml: minimalPlan + "probes:\n  enabled: true\n  nic_test_interval: 6500h\n  fresh_rounds: 100\n",
		want: []wantError{{14, "probes.fresh_rounds", "probes.fresh_rounds 100 × probes.ib_write_bw's interval 6500h0m0s is about 27083 days: a result would count for more than 366 days"}},
	},
	{
		name: "an interval of more than half a year with the least fresh_rounds",
		yaml: minimalPlan + "probes:\n  enabled: true\n  ping:\n    interval: 4400h\n    timeout: 10s\n",
		want: []wantError{{14, "probes.ping.interval", "probes.fresh_rounds 3 (the default) × probes.ping's interval 4400h0m0s is about 550 days"}},
	},
	{
		name: "min_bandwidth_fraction of 0",
		yaml: minimalPlan + "expectations:\n  min_bandwidth_fraction: 0\n",
		want: []wantError{{12, "expectations.min_bandwidth_fraction", "0 must be above 0"}},
	},
	{
		name: "min_bandwidth_fraction of 1 and pfc_priority 0 are legal",
		yaml: minimalPlan + "expectations:\n  min_bandwidth_fraction: 1\n  pfc_priority: 0\n",
	},
	{
		name: "bad durations",
		yaml: minimalPlan + `probes:
  ib_write_bw:
    interval: 0s
    timeout: -1m
    jitter: 90
  ping:
    interval: soon
`,
		want: []wantError{
			{13, "probes.ib_write_bw.interval", "must be longer than 0s"},
			{14, "probes.ib_write_bw.timeout", "must not be negative"},
			{15, "probes.ib_write_bw.jitter", `"90" has no unit`},
			{17, "probes.ping.interval", `"soon" is not a duration`},
		},
	},
	{
		name: "timeout and jitter not shorter than the interval",
		yaml: minimalPlan + `probes:
  ib_write_bw:
    interval: 10m
    timeout: 10m
    jitter: 11m
`,
		want: []wantError{
			{14, "probes.ib_write_bw.timeout", "timeout 10m0s must be shorter than interval 10m0s"},
			{15, "probes.ib_write_bw.jitter", "jitter 11m0s must be shorter than interval 10m0s"},
		},
	},
	{
		name: "timeout against the default interval",
		yaml: minimalPlan + "probes:\n  ping:\n    timeout: 2m\n",
		want: []wantError{{13, "probes.ping.timeout", "timeout 2m0s must be shorter than interval 1m0s (the default)"}},
	},
	{
		name: "interval shorter than the default timeout",
		yaml: minimalPlan + "probes:\n  nccl:\n    interval: 10m\n",
		want: []wantError{{13, "probes.nccl.interval", "timeout 15m0s (the default) must be shorter than interval 10m0s"}},
	},
	{
		name: "zero jitter is legal",
		yaml: minimalPlan + "probes:\n  ping:\n    jitter: 0s\n",
	},
	{
		name: "perftest duration and timeout",
		yaml: minimalPlan + `probes:
  ib_write_bw:
    duration: 1500ms
  ib_write_lat:
    duration: 30s
    timeout: 20s
`,
		want: []wantError{
			{13, "probes.ib_write_bw.duration", "not a whole number of seconds"},
			{16, "probes.ib_write_lat.timeout", "timeout 20s must be longer than duration 30s"},
		},
	},
	{
		name: "perftest limits",
		yaml: minimalPlan + `probes:
  ib_write_bw:
    message_size: 4G
    queue_pairs: 0
    gid_index: 256
  ib_write_lat:
    queue_pairs: 2
    gid_index: -1
`,
		want: []wantError{
			{13, "probes.ib_write_bw.message_size", "4G is above perftest's limit"},
			{14, "probes.ib_write_bw.queue_pairs", "0 is outside perftest's range 1–16384"},
			{15, "probes.ib_write_bw.gid_index", "256 is outside 0–255"},
			{17, "probes.ib_write_lat.queue_pairs", "Multiple QPs only available on bw tests"},
			{18, "probes.ib_write_lat.gid_index", "-1 is outside 0–255"},
		},
	},
	{
		name: "bad port ranges",
		yaml: minimalPlan + `probes:
  ib_write_bw:
    port_range: 18515
  ib_write_lat:
    port_range: 18530-18515
  nccl:
    interval: 6h
  ping:
    count: 0
`,
		want: []wantError{
			{13, "probes.ib_write_bw.port_range", `"18515" is not a port range`},
			{15, "probes.ib_write_lat.port_range", "must run from a lower to a higher port"},
			{19, "probes.ping.count", "must be at least 1"},
		},
	},
	{
		name: "port 0 and ports above 65535",
		yaml: minimalPlan + `probes:
  ib_write_bw:
    port_range: 0-10
  ib_write_lat:
    port_range: 65530-65536
`,
		want: []wantError{
			{13, "probes.ib_write_bw.port_range", "within 1–65535"},
			{15, "probes.ib_write_lat.port_range", `"65530-65536" is not a port range`},
		},
	},
	{
		name: "port range too small for the widest node",
		yaml: minimalPlan + `      - netdev: ens2f0
        ip: 192.168.100.21/24
      - netdev: ens3f0
        ip: 192.168.100.31/24
probes:
  enabled: true
  ib_write_bw:
    port_range: 18515-18516
  ib_write_lat:
    enabled: true
`,
		want: []wantError{{18, "probes.ib_write_bw.port_range", "18515-18516 has 2 ports but node node01 has 3 compute interfaces"}},
	},
	{
		name: "port range size is not checked while probes are off",
		yaml: minimalPlan + `      - netdev: ens2f0
        ip: 192.168.100.21/24
probes:
  ib_write_bw:
    port_range: 18515-18515
`,
	},
	{
		name: "ib_write_bw and ib_write_lat ports overlap",
		yaml: minimalPlan + `probes:
  enabled: true
  ib_write_lat:
    enabled: true
    port_range: 18520-18540
`,
		want: []wantError{{15, "probes.ib_write_lat.port_range", "18520-18540 overlaps ib_write_bw's 18515-18530"}},
	},
	{
		name: "nccl leader is not a node",
		yaml: minimalPlan + "probes:\n  nccl:\n    leader: node09\n",
		want: []wantError{{13, "probes.nccl.leader", "node09 is not a node of this plan; the leader must be one of: node01"}},
	},
	{
		// No leader is fine: the groups run without one; a leader adds the whole-cluster run.
		name: "enabled nccl needs command and GPUs",
		yaml: minimalPlan + "probes:\n  enabled: true\n  nccl:\n    enabled: true\n",
		want: []wantError{
			{14, "probes.nccl.command", "is required when the NCCL probe is enabled"},
			{14, "probes.nccl.gpus_per_node", "is required when the NCCL probe is enabled"},
		},
	},
	{
		name: "nccl sizes",
		yaml: minimalPlan + `probes:
  nccl:
    min_bytes: 1G
    max_bytes: 8M
  ib_write_bw:
    message_size: 1.5X
`,
		want: []wantError{
			{13, "probes.nccl.min_bytes", "min_bytes 1G is larger than max_bytes 8M"},
			{16, "probes.ib_write_bw.message_size", `"1.5X" is not a size`},
		},
	},
	{
		// A written threshold above the sweep would judge every run on its largest size.
		name: "nccl large-message threshold above the sweep",
		yaml: minimalPlan + `probes:
  nccl:
    max_bytes: 128M
    large_message_bytes: 1G
`,
		want: []wantError{{14, "probes.nccl.large_message_bytes", "1G is above max_bytes 128M: no message of the sweep reaches it"}},
	},
	{
		name: "nccl large-message threshold above the default sweep",
		yaml: minimalPlan + "probes:\n  nccl:\n    large_message_bytes: 16G\n",
		want: []wantError{{13, "probes.nccl.large_message_bytes", "16G is above max_bytes 8G (the most the default, sized from the GPUs' memory, gives)"}},
	},
	{
		name: "nccl node_env",
		yaml: twoNodes + `probes:
  nccl:
    node_env:
      node01: {NCCL_IB_GID_INDEX: 5}
      node09: {NCCL_IB_GID_INDEX: 3}
      node01: {NCCL_IB_HCA: mlx5_1}
      node02: [NCCL_IB_GID_INDEX]
`,
		want: []wantError{
			{20, "probes.nccl.node_env.node09", "node09 is not a node of this plan; node_env is keyed by the nodes' names: node01, node02"},
			{21, "probes.nccl.node_env.node01", "is set twice"},
			{22, "probes.nccl.node_env.node02", "must be a mapping of NAME: value lines, not a list"},
		},
	},
	{
		name: "nccl node_env is a mapping",
		yaml: minimalPlan + "probes:\n  nccl:\n    node_env: [node01]\n",
		want: []wantError{{13, "probes.nccl.node_env", "must be a mapping (key: value lines), not a list"}},
	},
	{
		name: "extra_args naming the GPU",
		yaml: minimalPlan + "probes:\n  ib_write_bw:\n    extra_args: [--use_cuda_bus_id=0000:1b:00.0, --use_cuda, \"0\"]\n",
		want: []wantError{
			{13, "probes.ib_write_bw.extra_args[0]", "--use_cuda_bus_id is set by the runner: set use_cuda: true instead"},
			{13, "probes.ib_write_bw.extra_args[1]", "--use_cuda is set by the runner"},
		},
	},
	{
		name: "nvidia_smi is an absolute path",
		yaml: minimalPlan + "probes:\n  nccl:\n    nvidia_smi: nvidia-smi\n",
		want: []wantError{{13, "probes.nccl.nvidia_smi", `"nvidia-smi" must be an absolute path`}},
	},
	{
		name: "nccl large-message threshold is a size",
		yaml: minimalPlan + "probes:\n  nccl:\n    large_message_bytes: 256MB\n",
		want: []wantError{{13, "probes.nccl.large_message_bytes", `"256MB" is not a size`}},
	},
	{
		// With the default threshold a short sweep is judged on its largest size, which
		// every result says; the plan itself is fine.
		name: "short sweep with the default threshold",
		yaml: minimalPlan + "probes:\n  nccl:\n    max_bytes: 128M\n",
	},
	{
		name: "bad executables",
		yaml: minimalPlan + `probes:
  ib_write_bw:
    command: ib_write_bw
  ib_write_lat:
    command: /usr/bin/ib_write_lat -F
  nccl:
    mpirun: $HOME/bin/mpirun
    command: ""
`,
		want: []wantError{
			{13, "probes.ib_write_bw.command", `"ib_write_bw" must be an absolute path`},
			{15, "probes.ib_write_lat.command", `contains " ": the program runs without a shell`},
			{17, "probes.nccl.mpirun", `"$HOME/bin/mpirun" must be an absolute path`},
			{18, "probes.nccl.command", "must not be empty"},
		},
	},
	{
		name: "shell metacharacters in an absolute command",
		yaml: minimalPlan + "probes:\n  ib_write_bw:\n    command: /usr/bin/ib_write_bw;reboot\n",
		want: []wantError{{13, "probes.ib_write_bw.command", `contains ";"`}},
	},
	{
		name: "extra_args with flags the runner owns",
		yaml: minimalPlan + `probes:
  ib_write_bw:
    extra_args:
      - --report_gbits
      - -d
      - mlx5_1
      - --port=18600
      - -x3
      - -D
      - "--perform_warm_up"
      - -F
  ib_write_lat:
    extra_args: [--gid-index, "3", -s, "64"]
`,
		want: []wantError{
			{15, "probes.ib_write_bw.extra_args[1]", "-d is set by the runner: the runner picks the RDMA device of each rail"},
			{17, "probes.ib_write_bw.extra_args[3]", "--port is set by the runner: each device's responder listens on its own TCP port"},
			{18, "probes.ib_write_bw.extra_args[4]", "-x is set by the runner: set gid_index instead"},
			{19, "probes.ib_write_bw.extra_args[5]", "-D is set by the runner: set duration instead"},
			{23, "probes.ib_write_lat.extra_args[0]", "--gid-index is set by the runner"},
			{23, "probes.ib_write_lat.extra_args[2]", "-s is set by the runner: set message_size instead"},
		},
	},
	{
		name: "extra_mpirun_args with host and rank flags",
		yaml: minimalPlan + `probes:
  nccl:
    extra_mpirun_args: [--allow-run-as-root, -np, "16", --hostfile=/tmp/hosts, -x, LD_LIBRARY_PATH, -H, "a,b"]
`,
		want: []wantError{
			{13, "probes.nccl.extra_mpirun_args[1]", "-np is set by the runner: the rank count comes from the plan"},
			{13, "probes.nccl.extra_mpirun_args[3]", "--hostfile is set by the runner: the host list comes from the plan's nodes"},
			{13, "probes.nccl.extra_mpirun_args[6]", "-H is set by the runner"},
		},
	},
	{
		// getopt_long takes --tclas for --tclass; a bare word is perftest's
		// server; --app and a program name replace mpirun's command line.
		name: "extra arguments the programs read as owned flags or in place of the command",
		yaml: minimalPlan + `probes:
  ib_write_bw:
    extra_args: [--tclas=0, --report_gbits, 10.0.0.9]
  nccl:
    extra_mpirun_args: [--allow-run-as-root, --app, /tmp/appfile]
  ib_write_lat:
    extra_args: [-F]
`,
		want: []wantError{
			{13, "probes.ib_write_bw.extra_args[0]", "--tclas abbreviates --tclass, which is set by the runner"},
			{13, "probes.ib_write_bw.extra_args[2]", `"10.0.0.9" is no option: perftest takes a lone argument as the server to connect to`},
			{15, "probes.nccl.extra_mpirun_args[1]", "--app is set by the runner: an appfile's command lines replace the runner's whole command line"},
		},
	},
	{
		name: "env keys",
		yaml: minimalPlan + `probes:
  nccl:
    env:
      NCCL_DEBUG: WARN
      NCCL_IB_TIMEOUT: 22
      nccl_debug_subsys: INIT
      1NCCL: x
      NCCL-ALGO: Ring
      NCCL_DEBUG: INFO
      NCCL_PROTO: [Simple]
`,
		want: []wantError{
			{16, "probes.nccl.env", `"nccl_debug_subsys" is not an environment variable name`},
			{17, "probes.nccl.env", `"1NCCL" is not an environment variable name`},
			{18, "probes.nccl.env", `"NCCL-ALGO" is not an environment variable name`},
			{19, "probes.nccl.env.NCCL_DEBUG", "is set twice"},
			{20, "probes.nccl.env.NCCL_PROTO", "must be a single value, not a list"},
		},
	},
	{
		name: "probe settings outside their ranges",
		yaml: minimalPlan + `probes:
  state_dir: var/lib/roce_exporter
  max_port_utilization: 0
  nccl:
    gpus_per_node: 0
    min_bus_bandwidth_gbytes: 0
`,
		want: []wantError{
			{12, "probes.state_dir", "must be an absolute path"},
			{13, "probes.max_port_utilization", "must be above 0 and at most 1"},
			{15, "probes.nccl.gpus_per_node", "must be at least 1"},
			{16, "probes.nccl.min_bus_bandwidth_gbytes", "must be above 0 GB/s"},
		},
	},
	{
		name: "wrong YAML kinds",
		yaml: minimalPlan + `expectations: [mtu, 9000]
probes:
  enabled: 1
  ib_write_bw: true
  ping:
    count: many
`,
		want: []wantError{
			{11, "expectations", "must be a mapping (key: value lines), not a list"},
			{13, "probes.enabled", `must be true or false, not "1"`},
			{14, "probes.ib_write_bw", `must be a mapping (key: value lines), not "true"`},
			{16, "probes.ping.count", `must be a whole number, not "many"`},
		},
	},
}

// TestUnknownKeys: a typo must not silently fall back to a default.
func TestUnknownKeys(t *testing.T) {
	for _, tc := range []errorCase{
		{
			name: "typo at top level",
			yaml: minimalPlan + "expectation:\n  mtu: 9000\n",
			want: []wantError{{11, "expectation", `unknown field "expectation" (did you mean "expectations"?)`}},
		},
		{
			name: "typo deep inside",
			yaml: minimalPlan + "probes:\n  ib_write_bw:\n    durration: 10s\n",
			want: []wantError{{13, "probes.ib_write_bw.durration", `(did you mean "duration"?)`}},
		},
		{
			name: "unrelated key lists the known ones",
			yaml: strings.Replace(minimalPlan, "    management_ip: 10.0.0.11\n", "    management_ip: 10.0.0.11\n    gpus: 8\n", 1),
			want: []wantError{{7, "nodes[0].gpus", `unknown field "gpus"; this section takes: interfaces, management_ip, name`}},
		},
		{
			name: "capitalised key",
			yaml: minimalPlan + "expectations:\n  MTU: 9000\n",
			want: []wantError{{12, "expectations.MTU", `(did you mean "mtu"?)`}},
		},
		{
			name: "key set twice",
			yaml: minimalPlan + "expectations:\n  mtu: 9000\n  mtu: 1500\n",
			want: []wantError{{13, "expectations.mtu", "is set twice (first on line 12)"}},
		},
		{
			name: "merge key",
			yaml: minimalPlan + "defaults: &d {mtu: 9000}\nexpectations:\n  <<: *d\n",
			want: []wantError{
				{11, "defaults", `unknown field "defaults"`},
				{13, "expectations.<<", "merge keys (<<) are not supported"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { checkErrors(t, tc) })
	}
}

func TestSyntaxErrors(t *testing.T) {
	for _, tc := range []errorCase{
		{
			name: "missing colon",
			yaml: "networks:\n  management: 10.0.0.0/24\n  compute 192.168.100.0/24\nnodes: []\n",
			want: []wantError{{3, "", "YAML syntax: could not find expected ':'"}},
		},
		{
			name: "tab indentation",
			yaml: "networks:\n\tmanagement: 10.0.0.0/24\n",
			want: []wantError{{2, "", "YAML syntax: found character that cannot start any token"}},
		},
		{
			name: "two documents",
			yaml: minimalPlan + "---\ncluster: other\n",
			want: []wantError{{11, "", "a second YAML document starts here"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { checkErrors(t, tc) })
	}
}

func TestAliases(t *testing.T) {
	t.Run("an alias reuses a value", func(t *testing.T) {
		plan, err := Parse("cluster.yaml", []byte(minimalPlan+`probes:
  ib_write_bw:
    extra_args: &common [--perform_warm_up]
  ib_write_lat:
    extra_args: *common
`))
		if err != nil {
			t.Fatal(err)
		}
		if got := plan.Probes.IBWriteLat.ExtraArgs; len(got) != 1 || got[0] != "--perform_warm_up" {
			t.Errorf("ib_write_lat.extra_args = %q, want the aliased list", got)
		}
	})
	t.Run("too many aliases", func(t *testing.T) {
		var b strings.Builder
		b.WriteString(minimalPlan + "probes:\n  ib_write_bw:\n    extra_args: &a [-F]\n  ib_write_lat:\n    extra_args:\n")
		for range maxAliasesFollowed {
			b.WriteString("      - *b\n")
		}
		// *b is an alias of a scalar, so each entry costs one alias lookup.
		yaml := strings.Replace(b.String(), "&a [-F]", "[&b -F]", 1)
		_, err := Parse("cluster.yaml", []byte(yaml+"      - *b\n      - *b\n"))
		var errs ValidationErrors
		if !errors.As(err, &errs) || len(errs) != 1 || !strings.Contains(errs[0].Msg, "more than 10000 YAML aliases") {
			t.Fatalf("want one alias-limit error, got %v", err)
		}
	})
}

// TestAllErrorsAtOnce: an operator fixes a file in one pass only if every problem is
// reported, in file order, and the message reads as file:line: field: problem.
func TestAllErrorsAtOnce(t *testing.T) {
	yaml := `networks:
  management: 10.0.0.0/24
  compute: 192.168.100.0/24
expectations:
  pfc_priority: 9
nodes:
  - name: node01
    management_ip: 10.0.0.11
    interfaces:
      - netdev: ens1f0
        ip: 192.168.100.11/24
  - name: node02
    management_ip: 10.0.0.12
    interfaces:
      - netdev: ens1f0
        ip: 192.168.200.12/24
probes:
  nccl:
    leader: node03
  pnig: {}
`
	_, err := Parse("cluster.yaml", []byte(yaml))
	want := strings.Join([]string{
		"cluster.yaml:5: expectations.pfc_priority: 9 is not an 802.1p priority (0–7); leave the key out for lossy RoCE",
		"cluster.yaml:16: nodes[1].interfaces[0].ip: 192.168.200.12/24 is outside the compute network 192.168.100.0/24",
		"cluster.yaml:19: probes.nccl.leader: node03 is not a node of this plan; the leader must be one of: node01, node02",
		`cluster.yaml:20: probes.pnig: unknown field "pnig" (did you mean "ping"?)`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Errorf("error text:\n%v\nwant:\n%s", err, want)
	}
	var one *FieldError
	if !errors.As(err, &one) || one.Line != 5 || one.Column != 17 {
		t.Errorf("errors.As(*FieldError) = %+v, want the first error at 5:17", one)
	}
}

func TestFieldErrorText(t *testing.T) {
	for _, tc := range []struct {
		err  FieldError
		want string
	}{
		{FieldError{File: "c.yaml", Line: 3, Field: "nodes", Msg: "bad"}, "c.yaml:3: nodes: bad"},
		{FieldError{File: "c.yaml", Field: "nodes", Msg: "is required"}, "c.yaml: nodes: is required"},
		{FieldError{File: "c.yaml", Line: 2, Msg: "YAML syntax: x"}, "c.yaml:2: YAML syntax: x"},
		{FieldError{Msg: "bare"}, "bare"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%+v.Error() = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestWarnings(t *testing.T) {
	for _, tc := range []struct {
		mtu  string
		want string
	}{
		{"1500", "expectations.mtu: 1500 is below 4192, so RoCE runs with a 1024-byte path MTU"},
		{"4000", "2048-byte path MTU"},
		{"900", "900 is below 4192, so RoCE runs with a 512-byte path MTU instead of 4096 and loses bandwidth to headers; 9000 is usual on a RoCE fabric (did you mean 9000?)"},
		{"352", "256-byte path MTU"},
		{"351", "351 leaves no room for RoCE"},
		{"4192", ""},
		{"9000", ""},
	} {
		t.Run(tc.mtu, func(t *testing.T) {
			plan, err := Parse("cluster.yaml", []byte(minimalPlan+"expectations:\n  mtu: "+tc.mtu+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprint(plan.Warnings)
			if tc.want == "" && len(plan.Warnings) > 0 || !strings.Contains(got, tc.want) {
				t.Errorf("warnings = %v, want %q", got, tc.want)
			}
			if tc.want != "" && plan.Warnings[0].Line != 12 {
				t.Errorf("warning on line %d, want 12", plan.Warnings[0].Line)
			}
		})
	}
}
