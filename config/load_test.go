package config

import (
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

const examplePath = "../deploy/examples/cluster.yaml"

func intPtr(v int) *int    { return &v }
func boolPtr(v bool) *bool { return &v }

// TestExamplePlan: the shipped example is what beginners copy, so it must load cleanly
// and mean what its comments say.
func TestExamplePlan(t *testing.T) {
	plan, err := Load(examplePath)
	if err != nil {
		t.Fatalf("example plan does not load:\n%v", err)
	}
	if len(plan.Warnings) > 0 {
		t.Errorf("example plan has warnings: %v", plan.Warnings)
	}
	wantExpectations := Expectations{
		LinkLayer:            LinkLayerEthernet,
		MTU:                  9000,
		RoCEMode:             RoCEv2,
		PFCPriority:          intPtr(3),
		Trust:                TrustDSCP,
		ECN:                  boolPtr(true),
		RoCEDSCP:             intPtr(26),
		CNPDSCP:              intPtr(48),
		MinBandwidthFraction: 0.9,
		LinkRateGbps:         400,
		FirmwareConsistent:   true,
	}
	if !reflect.DeepEqual(plan.Expectations, wantExpectations) {
		t.Errorf("expectations = %+v, want %+v", plan.Expectations, wantExpectations)
	}
	wantNetworks := Networks{
		Management: netip.MustParsePrefix("10.0.0.0/24"),
		Compute:    []netip.Prefix{netip.MustParsePrefix("192.168.100.0/24")},
	}
	if !reflect.DeepEqual(plan.Networks, wantNetworks) {
		t.Errorf("networks = %+v, want %+v", plan.Networks, wantNetworks)
	}
	if got := plan.NodeNames(); !slices.Equal(got, []string{"node01", "node02", "node03"}) {
		t.Errorf("nodes = %v", got)
	}
	for i, node := range plan.Nodes {
		want := &Node{
			Name:         node.Name,
			ManagementIP: netip.AddrFrom4([4]byte{10, 0, 0, byte(11 + i)}),
			Interfaces: []*ComputeInterface{{
				Rail:       0,
				Netdev:     "ens1f0",
				RDMADevice: "mlx5_0",
				Address:    netip.PrefixFrom(netip.AddrFrom4([4]byte{192, 168, 100, byte(11 + i)}), 24),
			}},
		}
		if !reflect.DeepEqual(node, want) {
			t.Errorf("node %d = %+v, want %+v", i, node, want)
		}
	}
	probes := plan.Probes
	if probes.Enabled {
		t.Error("the example must ship with probes off")
	}
	if probes.NCCL.Leader != "node01" || probes.NCCL.Command == "" || probes.NCCL.GPUsPerNode != 8 ||
		probes.NCCL.MaxBytes != 8<<30 || probes.NCCL.Env["NCCL_DEBUG"] != "WARN" || probes.NCCL.MinBusBandwidthGBps != 40 ||
		probes.NCCL.LargeMessageBytes != 256<<20 || probes.NCCL.NodeEnv["node03"]["NCCL_IB_GID_INDEX"] != "5" || len(probes.NCCL.NodeEnv) != 1 ||
		probes.NCCL.NVIDIASMI != "/usr/bin/nvidia-smi" {
		t.Errorf("nccl section = %+v", probes.NCCL)
	}
	if bw := probes.IBWriteBW; bw.GIDIndex == nil || *bw.GIDIndex != 3 || bw.Jitter != 6*time.Minute ||
		!slices.Equal(bw.ExtraArgs, []string{"--perform_warm_up"}) {
		t.Errorf("ib_write_bw section = %+v", bw)
	}
	if ping := probes.Ping; !ping.Enabled || ping.Count != 5 || ping.Interval != time.Minute {
		t.Errorf("ping section = %+v", ping)
	}
}

// TestExampleNamesEveryKey: the example teaches the schema, so every key the decoder
// knows should appear in it (ib_write_lat is shown commented out).
func TestExampleNamesEveryKey(t *testing.T) {
	data, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	example := string(data)
	for _, key := range []string{
		"cluster", "management", "compute", "link_layer", "mtu", "roce_mode", "pfc_priority", "trust",
		"ecn", "roce_dscp", "cnp_dscp", "vlan", "ib_service_level", "min_bandwidth_fraction", "link_rate_gbps", "firmware_consistent", "name",
		"management_ip", "interfaces", "netdev", "rdma_device", "ip", "enabled", "state_dir",
		"max_port_utilization", "ib_write_bw", "ib_write_lat", "interval", "timeout", "jitter",
		"command", "duration", "message_size", "queue_pairs", "gid_index", "port_range",
		"extra_args", "leader", "mpirun", "gpus_per_node", "min_bytes", "max_bytes",
		"extra_mpirun_args", "env", "node_env", "nvidia_smi", "min_bus_bandwidth_gbytes", "large_message_bytes", "count",
		"incast", "senders",
	} {
		if !strings.Contains(example, key+":") {
			t.Errorf("the example never shows %q", key)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.yaml")
	_, err := Load(path)
	if !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, ErrPlanMissing) {
		t.Errorf("Load(absent) = %v, want a not-exist error", err)
	}
	// It says the plan is missing and how to write one, not "open …".
	msg := err.Error()
	for _, want := range []string{"the cluster plan " + path + " does not exist", "deploy/examples/cluster.yaml"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "open ") {
		t.Errorf("error %q still reads like a bare open error", msg)
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(path, []byte(minimalPlan+"expectations:\n  mtu: 99999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+":12: expectations.mtu: ") {
		t.Errorf("Load error = %v, want it to start with %s:12", err, path)
	}
}

func TestDefaults(t *testing.T) {
	plan, err := Parse("cluster.yaml", []byte(minimalPlan))
	if err != nil {
		t.Fatal(err)
	}
	wantExpectations := Expectations{
		LinkLayer:            LinkLayerEthernet,
		RoCEMode:             RoCEv2,
		RoCEDSCP:             intPtr(26),
		CNPDSCP:              intPtr(48),
		MinBandwidthFraction: 0.9,
		FirmwareConsistent:   true,
	}
	if !reflect.DeepEqual(plan.Expectations, wantExpectations) {
		t.Errorf("expectations = %+v\nwant %+v", plan.Expectations, wantExpectations)
	}
	wantProbes := Probes{
		Enabled:            false,
		StateDir:           "/var/lib/roce_exporter",
		MaxPortUtilization: 0.1,
		IBWriteBW: Perftest{
			Schedule:    Schedule{Enabled: true, Interval: time.Hour, Timeout: 90 * time.Second, Jitter: 6 * time.Minute},
			Command:     "/usr/bin/ib_write_bw",
			Duration:    10 * time.Second,
			MessageSize: 1048576,
			QueuePairs:  4,
			PortRange:   PortRange{18515, 18530},
		},
		IBWriteLat: Perftest{
			Schedule:    Schedule{Enabled: false, Interval: time.Hour, Timeout: time.Minute, Jitter: 6 * time.Minute},
			Command:     "/usr/bin/ib_write_lat",
			MessageSize: 2,
			QueuePairs:  1,
			PortRange:   PortRange{18531, 18546},
		},
		NCCL: NCCL{
			Schedule: Schedule{Enabled: false, Interval: 6 * time.Hour, Timeout: 15 * time.Minute, Jitter: 36 * time.Minute},
			MPIRun:   "/usr/bin/mpirun",
			MinBytes: 8,
			// Unset: sized from the GPUs' memory when a run starts, at most 8 GiB.
			MaxBytes:  0,
			NVIDIASMI: "/usr/bin/nvidia-smi",
			// 256 MiB: the judged bus bandwidth starts there, not at nccl-tests' average.
			LargeMessageBytes: 256 << 20,
			GroupSize:         2,
		},
		Ping: Ping{
			Schedule: Schedule{Enabled: true, Interval: time.Minute, Timeout: 10 * time.Second, Jitter: 6 * time.Second},
			Count:    5,
		},
		Incast: Incast{
			Perftest: Perftest{
				Schedule:    Schedule{Enabled: false, Interval: 24 * time.Hour, Timeout: time.Minute, Jitter: 144 * time.Minute},
				Command:     "/usr/bin/ib_write_bw",
				Duration:    10 * time.Second,
				MessageSize: 1048576,
				QueuePairs:  4,
				PortRange:   PortRange{18547, 18578},
			},
			Senders: 2,
		},
		NICTestInterval: time.Hour,
		MaxFabricShare:  1,
		FreshRounds:     3,
	}
	if !reflect.DeepEqual(plan.Probes, wantProbes) {
		t.Errorf("probes = %+v\nwant %+v", plan.Probes, wantProbes)
	}
}

// TestWrittenValuesBeatDefaults: a value in the file wins even when it equals the zero
// value a default would otherwise replace.
func TestWrittenValuesBeatDefaults(t *testing.T) {
	plan, err := Parse("cluster.yaml", []byte(minimalPlan+`expectations:
  firmware_consistent: false
  link_layer: InfiniBand
probes:
  ib_write_bw:
    enabled: false
    interval: 2h
  ping:
    enabled: false
    jitter: 0s
`))
	if err != nil {
		t.Fatal(err)
	}
	e := plan.Expectations
	if e.FirmwareConsistent || e.RoCEMode != "" {
		t.Errorf("expectations = %+v, want firmware_consistent false and no RoCE mode on InfiniBand", e)
	}
	bw := plan.Probes.IBWriteBW
	if bw.Enabled || bw.Interval != 2*time.Hour || bw.Jitter != 12*time.Minute {
		t.Errorf("ib_write_bw schedule = %+v, want disabled, 2h, jitter 10%% of 2h", bw.Schedule)
	}
	if ping := plan.Probes.Ping; ping.Enabled || ping.Jitter != 0 {
		t.Errorf("ping schedule = %+v, want disabled with no jitter", ping.Schedule)
	}
}

func TestNullMeansDefault(t *testing.T) {
	plan, err := Parse("cluster.yaml", []byte(minimalPlan+"cluster:\nexpectations:\n  pfc_priority: null\n  min_bandwidth_fraction: ~\n"))
	if err != nil {
		t.Fatal(err)
	}
	if plan.Expectations.PFCPriority != nil || plan.Expectations.MinBandwidthFraction != 0.9 {
		t.Errorf("expectations = %+v, want null to mean left out", plan.Expectations)
	}
}

func TestPlanHelpers(t *testing.T) {
	plan, err := Parse("cluster.yaml", []byte(`networks:
  management: 10.0.0.0/24
  compute: [192.168.100.0/24, 192.168.101.0/24]
expectations:
  pfc_priority: 3
nodes:
  - name: node03
    management_ip: 10.0.0.13
    interfaces:
      - netdev: ens1f0
        rdma_device: mlx5_0
        ip: 192.168.100.13/24
      - netdev: ens2f0
        ip: 192.168.101.13/24
  - name: node01
    management_ip: 10.0.0.11
    interfaces:
      - netdev: ens1f0
        ip: 192.168.100.11/24
  - name: node02
    management_ip: 10.0.0.12
    interfaces:
      - netdev: ens1f0
        ip: 192.168.100.12/24
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := plan.NodeNames(); !slices.Equal(got, []string{"node01", "node02", "node03"}) {
		t.Errorf("NodeNames() = %v, want sorted", got)
	}
	var peers []string
	for _, n := range plan.Peers("node02") {
		peers = append(peers, n.Name)
	}
	if !slices.Equal(peers, []string{"node01", "node03"}) {
		t.Errorf("Peers(node02) = %v", peers)
	}
	if got := plan.Peers("not-in-plan"); len(got) != 3 {
		t.Errorf("Peers of an unknown node = %d nodes, want all 3", len(got))
	}

	node, ok := plan.Node("node03")
	if !ok || node.ManagementIP != netip.MustParseAddr("10.0.0.13") {
		t.Fatalf("Node(node03) = %+v, %v", node, ok)
	}
	if _, ok := plan.Node("node09"); ok {
		t.Error("Node(node09) found a node")
	}
	second := node.Interfaces[1]
	if second.Netdev != "ens2f0" || second.Rail != 1 || second.IP() != netip.MustParseAddr("192.168.101.13") ||
		second.Address != netip.MustParsePrefix("192.168.101.13/24") || second.Address.Masked() != plan.Networks.Compute[1] {
		t.Errorf("node03's second interface = %+v", second)
	}
}

func TestPortRangeLen(t *testing.T) {
	for _, tc := range []struct {
		r    PortRange
		want int
	}{
		{PortRange{18515, 18530}, 16},
		{PortRange{1, 1}, 1},
		{PortRange{1, 65535}, 65535},
		{PortRange{10, 9}, 0},
	} {
		if got := tc.r.Len(); got != tc.want {
			t.Errorf("%v.Len() = %d, want %d", tc.r, got, tc.want)
		}
	}
}

func TestSelfName(t *testing.T) {
	if got := SelfName("node07"); got != "node07" {
		t.Errorf("SelfName(node07) = %q", got)
	}
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no hostname:", err)
	}
	short, _, _ := strings.Cut(host, ".")
	got := SelfName("")
	if got != short || strings.Contains(got, ".") {
		t.Errorf("SelfName(\"\") = %q, want the short hostname %q", got, short)
	}
}

// TestRoCETrafficClass: the traffic class is the DSCP shifted past the two ECN bits, with
// ECT(0) set; DSCP 26 gives NVIDIA's 106.
func TestRoCETrafficClass(t *testing.T) {
	plan, err := Parse("cluster.yaml", []byte(minimalPlan))
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := plan.Expectations.RoCETrafficClass(); !ok || tc != 106 {
		t.Errorf("default traffic class = %d, %v; want 106", tc, ok)
	}
	plan, err = Parse("cluster.yaml", []byte(minimalPlan+"expectations:\n  roce_dscp: 24\n  cnp_dscp: 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tc, _ := plan.Expectations.RoCETrafficClass(); tc != 98 || *plan.Expectations.CNPDSCP != 0 {
		t.Errorf("DSCP 24: traffic class %d (want 98), cnp_dscp %d (want 0 as written)", tc, *plan.Expectations.CNPDSCP)
	}
	plan, err = Parse("cluster.yaml", []byte(minimalPlan+"expectations:\n  link_layer: InfiniBand\n  ib_service_level: 5\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := plan.Expectations.RoCETrafficClass(); ok || *plan.Expectations.IBServiceLevel != 5 {
		t.Errorf("InfiniBand plan: a RoCE traffic class, or SL %v", plan.Expectations.IBServiceLevel)
	}
}

func TestVLANExpectation(t *testing.T) {
	plan, err := Parse("cluster.yaml", []byte(minimalPlan+"expectations:\n  vlan: 100\n"))
	if err != nil || plan.Expectations.VLAN == nil || *plan.Expectations.VLAN != 100 {
		t.Fatalf("vlan 100: %+v, %v", plan, err)
	}
	if plan, err = Parse("cluster.yaml", []byte(minimalPlan)); err != nil || plan.Expectations.VLAN != nil {
		t.Fatalf("no vlan: VLAN = %v, %v", plan.Expectations.VLAN, err)
	}
}
