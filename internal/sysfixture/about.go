package sysfixture

// About says what a scenario models and what the doctor makes of it. The
// README's table of sample nodes is generated from it
// (TestReadmeScenarioTable, `go test ./internal/sysfixture -run
// TestReadmeScenarioTable -update`), and cmd/roce_exporter's
// TestScenariosShowWhatTheySay runs the doctor on every scenario and holds
// it to State and Findings, so the description cannot drift from the
// fixture.
type About struct {
	// Models is the node and the situation it is in.
	Models string
	// Plan is a cluster plan of the repository that fits the node (as
	// node01), "" when none does: the doctor is then run without one.
	Plan string
	// State is the doctor's verdict on the node: failing, warning, healthy
	// or nothing_to_check (health.State).
	State string
	// Findings are the checks that fail or warn on it, the ones the
	// scenario is about (not necessarily all).
	Findings []string
}

// PlanNode01 fits the 8-port sample nodes: node01, one compute subnet per
// rail, MTU 9000, PFC on priority 3, DSCP trust, 400G.
const PlanNode01 = "health/testdata/plan-node01.yaml"

// Abouts holds an About for every scenario of Scenarios.
var Abouts = map[string]About{
	"mlx5-8x400g-healthy": {
		Models: "8× ConnectX-7 400G RoCE, MTU 9000, RoCE v2 GID at index 3, PCIe Gen5 x16: the demo node",
		Plan:   PlanNode01, State: "healthy"},
	"mlx5-degraded": {
		Models: "the same node with one fault per card: a port down, a PCIe link trained x8, MTU 1500, an odd firmware, a garbage counter file, an unreadable `counters/`, trust PCP, PFC on priority 0 with 802.3x pause, ECN off, a hot optic, uncorrected PHY errors",
		Plan:   PlanNode01, State: "failing",
		Findings: []string{"port_active", "mtu_matches_plan", "pcie_link_not_degraded", "trust_mode_matches_plan", "pfc_enabled_on_roce_priority",
			"global_pause_off_with_pfc", "ecn_enabled", "transceiver_within_thresholds", "firmware_consistent", "no_uncorrected_phy_errors", "port_counters_readable"}},
	"mlx5-pfc-storm": {
		Models: "the healthy node after a PFC storm on `ens3f0np0`: since-boot pause duration, storm watchdog events and port-buffer drops; the captures stand still, so the doctor warns about the history and sees no storm now (the health tests move the counters between two samples for the storm in progress)",
		Plan:   PlanNode01, State: "warning", Findings: []string{"no_pfc_storm", "no_packet_discards"}},
	"mlx5-dscp-to-wrong-priority": {
		Models: "the healthy node after `mlnx_qos --dscp2prio set,26,0` on `ens3f0np0` (an `mlnx_qos -i` capture): PFC still on 3, RoCE's DSCP 26 on priority 0, its bytes counted there",
		Plan:   PlanNode01, State: "failing", Findings: []string{"roce_dscp_maps_to_pfc_priority", "rdma_bytes_on_roce_priority"}},
	"mlx5-rdma-on-priority-0": {
		Models: "DSCP map right, but `mlx5_5` has no MLNX_OFED global traffic class and RoCE went out unmarked: its RDMA bytes on priority 0, priority 3 nearly idle (totals since boot, which the capture holds: history, so it warns)",
		Plan:   PlanNode01, State: "warning", Findings: []string{"rdma_bytes_on_roce_priority", "default_traffic_class"}},
	"mlx5-gen5-nics-in-gen4-slots": {
		Models: "8× ConnectX-7 (PCIe Gen5) in Gen4 slots of an Ice Lake / Milan server at 200G: the slot sets the link's speed, which is not a fault",
		State:  "healthy"},
	"dgx-h100-8gpu-8nic": {
		Models: "DGX H100: 8 H100 + 8 ConnectX-7, each GPU/NIC pair at PXB in its own PCIe switch partition, ACS off, IOMMU passthrough, `nvidia_peermem`; `proc/` for `--path.proc` (provenance in its `PROVENANCE.md`)",
		Plan:   PlanNode01, State: "healthy"},
	"dgx-h100-degraded": {
		Models: "the same with ACS on at GPU 2's switch, no `nvidia_peermem` (proprietary driver: no DMA-BUF), GPU 5 at x8, `mlx5_3` on the other socket",
		Plan:   PlanNode01, State: "failing",
		Findings: []string{"gpudirect_rdma_available", "pcie_acs_off_on_gpu_nic_path", "gpu_nic_affinity", "gpu_pcie_link_not_degraded"}},
	"ib-hdr": {
		Models: "two InfiniBand HDR ports (ConnectX-6, IPoIB netdevs without an address)",
		State:  "warning", Findings: []string{"nccl_env"}},
	"bnxt-no-counters": {
		Models: "Broadcom BCM57508: only `hw_counters/`, with the pre-2025 bnxt_re names",
		State:  "healthy"},
	"no-rdma-driver": {
		Models: "a ConnectX-7 on the PCI bus with no RDMA driver loaded",
		State:  "failing", Findings: []string{"rdma_nic_present"}},
	"cpu-node-no-rdma": {
		Models: "a CPU node of a mixed cluster: no RDMA stack, no RDMA-capable NIC, one onboard Intel I350 port",
		State:  "nothing_to_check"},
	"mlx4-ib-counters-ext": {
		Models: "dual-port ConnectX-3 QDR under MLNX_OFED 3.x: 32-bit `counters/` (saturated, or 0) beside 64-bit `counters_ext/`; PCIe Gen3 x8 cannot carry both ports at once",
		State:  "warning", Findings: []string{"pcie_bandwidth_sufficient", "nccl_env"}},
	"iwarp-no-pma": {
		Models: "Intel X722 iWARP (i40iw, 4.x kernel): every `counters/` file reads `N/A (no PMA)`",
		State:  "healthy"},
	"mlx5-sriov-vf": {
		Models: "a ConnectX-7 PF with one SR-IOV VF on the host (`physfn` link, no DCB, no PCIe link of its own)",
		State:  "healthy"},
	"efa": {
		Models: "AWS EFA: link layer `Unknown`, no `counters/`, byte counters in `hw_counters/`, no netdev",
		State:  "healthy"},
	"mlx5-dcqcn-drift": {
		Models: "the healthy node after a firmware upgrade reached rails 4-7: their MLNX_OFED `ecn/roce_rp` and `roce_np` files show `rpg_ai_rate` 10, `rate_reduce_monitor_period` 2 and `min_time_between_cnps` 0 instead of the defaults (`RoCEDCQCNParamsDrift` names them across the fleet)",
		Plan:   PlanNode01, State: "warning", Findings: []string{"dcqcn_parameters_default"}},
	"mlx5-rails-one-subnet-default-sysctls": {
		Models: "the healthy node with all 8 rails in 192.168.100.0/24 and the host as installed: `arp_ignore`/`arp_announce` 0, strict `rp_filter` (`proc/`), no policy rules, the ARP table with node02's rail 0 and 1 addresses both on rail 0 with one MAC (`ip -j` captures in `replay/`)",
		Plan:   "health/testdata/plan-node01-one-subnet.yaml", State: "failing", Findings: []string{"arp_flux_sysctls", "per_rail_source_routing", "neighbor_entries_on_rail"}},
	"mlx5-memlock-default-8mib": {
		Models: "a fresh install: no memlock line in `limits.conf`, systemd's `DefaultLimitMEMLOCK` unset (`rootfs/` for `--path.rootfs`), the exporter itself at 8 MiB without `CAP_IPC_LOCK`",
		Plan:   PlanNode01, State: "warning", Findings: []string{"memlock_for_rdma"}},
	"mlx5-pfc-buffers-misconfigured": {
		Models: "`mlnx_qos -i` with receive buffers and ETS on every rail: `ens3f0np0`'s RoCE priority in buffer 0 with the lossy ones, `ens6f0np0`'s lossless buffer too small for 30 m at 400G, `ens8f0np0`'s RoCE class an ETS class with 0 %",
		Plan:   PlanNode01, State: "failing", Findings: []string{"pfc_buffer_no_lossy_priority", "pfc_headroom_sufficient", "ets_share_for_roce"}},
	"mlx5-switch-port-mtu-1500": {
		Models: "leaf ports announcing MFS, VLAN 100 and their MAU over LLDP (`lldpcli -f json0 show neighbors details`): `ens5f0np0`'s leaf port at MFS 1518, `ens7f0np0`'s at 100G",
		Plan:   PlanNode01, State: "failing", Findings: []string{"switch_port_mtu", "switch_port_speed"}},
	"mlx5-cx6dx-on-rail-3": {
		Models: "a ConnectX-6 Dx (200G, Gen4) in rail 3's slot among the ConnectX-7s: another NIC model on one rail",
		Plan:   PlanNode01, State: "failing", Findings: []string{"nic_model_same_on_rails", "link_rate_matches_plan"}},
	"mlx5-roce-lag": {
		Models: "RoCE LAG: `mlx5_bond_0` over `bond0` (802.3ad of both ports), `bonding_masters` in `/sys/class/net`",
		State:  "healthy"},
}

// CPUNode is a node without RDMA: no RDMA module, no RDMA vendor's NIC on
// the PCI bus, the onboard I350 port it is reached on.
func CPUNode() Node {
	return Node{
		Modules: []string{},
		UnboundNICs: []PCIFunction{
			{Address: "0000:03:00.0", Vendor: "0x8086", Device: "0x1521", Class: "0x020000", Driver: "igb",
				Netdev: "eno1", MAC: "3c:ec:ef:1a:2b:00", MTU: 1500, Speed: "1000"},
		},
	}
}
