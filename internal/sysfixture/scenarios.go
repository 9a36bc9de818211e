package sysfixture

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/roce-exporter/roce_exporter/node"
)

// Scenario is a committed fixture: the node and, where the exporter should
// read ethtool/DCB captures, the NICs of its replay directory.
type Scenario struct {
	Node Node
	// NoRDMAClass removes /sys/class/infiniband (RDMA stack not loaded).
	NoRDMAClass bool
	// Replay lists NICs that differ from DefaultNIC; nil means the
	// scenario has no replay directory.
	Replay map[string]NIC
	// Host is the host configuration beside the NICs (procfs, `ip -j`
	// captures, rootfs/); nil for none.
	Host *HostSide
}

// Scenarios names every committed fixture and how to build it.
var Scenarios = map[string]func() Scenario{
	"mlx5-8x400g-healthy": func() Scenario { return Scenario{Node: HealthyCX7(8), Replay: map[string]NIC{}} },
	"mlx5-pfc-storm": func() Scenario {
		return Scenario{Node: HealthyCX7(8), Replay: qsfp112NICs(8, map[string]NIC{"mlx5_2": StormNIC(2)})}
	},
	"mlx5-degraded": func() Scenario { return Scenario{Node: DegradedCX7(), Replay: DegradedNICs()} },
	"mlx5-gen5-nics-in-gen4-slots": func() Scenario {
		return Scenario{Node: Gen5NICsInGen4Slots(), Replay: map[string]NIC{}}
	},
	"ib-hdr":                      func() Scenario { return Scenario{Node: IBHDR()} },
	"bnxt-no-counters":            func() Scenario { return Scenario{Node: BnxtNoCounters()} },
	"no-rdma-driver":              func() Scenario { return Scenario{Node: NoRDMADriver(), NoRDMAClass: true} },
	"cpu-node-no-rdma":            func() Scenario { return Scenario{Node: CPUNode(), NoRDMAClass: true} },
	"mlx4-ib-counters-ext":        func() Scenario { return Scenario{Node: MLX4CountersExt()} },
	"iwarp-no-pma":                func() Scenario { return Scenario{Node: IWARPNoPMA()} },
	"mlx5-sriov-vf":               SRIOVVFScenario,
	"efa":                         func() Scenario { return Scenario{Node: EFA()} },
	"mlx5-roce-lag":               func() Scenario { return Scenario{Node: RoCELAG()} },
	"mlx5-dscp-to-wrong-priority": DSCPToWrongPriority,
	"mlx5-dcqcn-drift":            DCQCNDrift,
	"mlx5-rdma-on-priority-0":     RDMAOnPriority0,
	"dgx-h100-8gpu-8nic":          func() Scenario { return Scenario{Node: DGXH100(), Replay: map[string]NIC{}} },
	"dgx-h100-degraded":           func() Scenario { return Scenario{Node: DGXH100Degraded(), Replay: map[string]NIC{}} },
	// Issue 26: the multi-NIC host, host prerequisites, buffers and the
	// switch's own view.
	"mlx5-rails-one-subnet-default-sysctls": RailsOneSubnetDefaultSysctls,
	"mlx5-memlock-default-8mib":             MemlockDefault8MiB,
	"mlx5-pfc-buffers-misconfigured":        PFCBuffersMisconfigured,
	"mlx5-switch-port-mtu-1500":             SwitchPortMTU1500,
	"mlx5-cx6dx-on-rail-3":                  CX6DxOnRail3,
}

// DCQCNDrift is the healthy node after a firmware upgrade reached half its
// NICs: rails 4-7 run DCQCN with other parameters than rails 0-3 (and the
// other nodes of the fleet): a faster additive increase, a shorter rate
// reduction period and one CNP per marked packet. Every check but the DCQCN
// one passes; the fleet's RoCEDCQCNParamsDrift compares the sets.
func DCQCNDrift() Scenario {
	nics := map[string]NIC{}
	for i := 4; i < 8; i++ {
		nic := DefaultNIC(i)
		nic.DCQCN = map[string]uint64{"rpg_ai_rate": 10, "rate_reduce_monitor_period": 2, "min_time_between_cnps": 0}
		nics[fmt.Sprintf("mlx5_%d", i)] = nic
	}
	return Scenario{Node: HealthyCX7(8), Replay: nics}
}

// DSCPToWrongPriority is a node where someone ran `mlnx_qos --dscp2prio
// set,26,0` on rail 2 (the usual slip: the priority of the lossy class
// instead of 3): PFC is still on priority 3, so every PFC check passes, but
// RoCE marked DSCP 26 lands on priority 0 and its byte counters say so. Its DCB
// state is an `mlnx_qos -i` capture; the device class is the default RoCE one.
func DSCPToWrongPriority() Scenario {
	n := HealthyCX7(8)
	for i := range n.Devices {
		n.Devices[i].TrafficClass = ptr(globalRoCETrafficClass)
	}
	nic := DefaultNIC(2)
	nic.MlnxQos = true
	nic.DSCPPrio = map[int]int{node.DefaultRoCEDSCP: 0}
	nic.RDMAPriority = ptr(0)
	return Scenario{Node: n, Replay: map[string]NIC{"mlx5_2": nic}}
}

// globalRoCETrafficClass is MLNX_OFED's tc/1/traffic_class once
// `echo 106 > .../traffic_class` (the default RoCE DSCP with ECT(0)) set it.
var globalRoCETrafficClass = fmt.Sprintf("Global tclass=%d\n", node.DefaultRoCETrafficClass)

// RDMAOnPriority0 is a node whose DCB map is right (DSCP 26 → 3, PFC on 3) but
// whose RDMA traffic was sent unmarked: MLNX_OFED's global traffic class is not
// set on rail 5 and the jobs do not set NCCL_IB_TC, so RoCE goes out with DSCP 0
// and its bytes grow on priority 0, lossy, while priority 3 stays nearly idle.
func RDMAOnPriority0() Scenario {
	n := HealthyCX7(8)
	for i := range n.Devices {
		n.Devices[i].TrafficClass = ptr(globalRoCETrafficClass)
	}
	n.Devices[5].TrafficClass = ptr("")
	nic := DefaultNIC(5)
	nic.RDMAPriority = ptr(0)
	return Scenario{Node: n, Replay: map[string]NIC{"mlx5_5": nic}}
}

func ptr[T any](v T) *T { return &v }

// ScenarioNames lists the scenarios in order.
func ScenarioNames() []string { return slices.Sorted(maps.Keys(Scenarios)) }

// WriteScenario writes a named scenario under root: root/sys, root/dev and,
// if it has captures, root/replay (and root/proc, root/rootfs of its host
// side).
func WriteScenario(root, name string) error {
	build, ok := Scenarios[name]
	if !ok {
		return fmt.Errorf("unknown scenario %q", name)
	}
	return build().Write(root)
}

// Write writes the scenario under root: root/sys, root/dev and, if it has
// captures, root/replay.
func (sc Scenario) Write(root string) error {
	write := Write
	if sc.NoRDMAClass {
		write = WriteBare
	}
	if err := write(root, sc.Node); err != nil {
		return err
	}
	if sc.Replay != nil {
		if err := WriteReplay(root, filepath.Join(root, "replay"), sc.Node, sc.Replay); err != nil {
			return err
		}
	}
	if sc.Host != nil {
		return sc.Host.write(root, filepath.Join(root, "replay"))
	}
	return nil
}

// StormNIC is a port that went through a PFC storm on priority 3: its
// since-boot counters show the peer holding it paused for hours, the NIC's
// storm watchdog firing and the port buffer overflowing. A capture is one
// reading, so the counters do not move between two reads: the doctor sees
// the history, not a storm in progress (health's TestFixturePFCStorm moves
// them between two samples for that).
func StormNIC(rail int) NIC {
	n := DefaultNIC(rail)
	n.RXPause, n.RXPauseDurationUS, n.RXPauseTransitions = 912345678, 4812345678901, 456172839
	n.TXPause, n.TXPauseDurationUS = 88123456, 301234567890
	n.StormWarnings, n.StormErrors = 41, 3
	n.RXDiscardsPHY, n.RXPrioDiscards = 1203344, 1203344
	return n
}

// qsfp112NICs puts a QSFP112 optic in every cage of an n-rail node (the
// QSFP112 ConnectX-7 cards; the other scenarios have OSFP ones), over the
// NICs given.
func qsfp112NICs(n int, nics map[string]NIC) map[string]NIC {
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("mlx5_%d", i)
		nic, ok := nics[name]
		if !ok {
			nic = DefaultNIC(i)
		}
		nic.Module = QSFP112Module(i)
		nics[name] = nic
	}
	return nics
}

// DegradedNICs are the DCB/ethtool faults of the degraded node, on cards
// whose sysfs side is otherwise fine.
func DegradedNICs() map[string]NIC {
	trustPCP := DefaultNIC(0)
	trustPCP.Trust = "pcp"
	uncorrected := DefaultNIC(5)
	uncorrected.UncorrectedSymbolErrors, uncorrected.CorrectedBits = 37, 912233445566
	// The same port's send queues timed out four times; mlx5 recovered each.
	uncorrected.TXReporterErrors, uncorrected.TXReporterRecoveries = 4, 4
	noECN := DefaultNIC(6)
	ecn := [8]bool{true, true, true, false, true, true, true, true}
	noECN.ECNEnabled = &ecn
	// mlx5_1's link is down and the driver says why; mlx5_3's optic runs
	// past its high-temperature warning with lane 3 received below the
	// module's low-power alarm (a dirty connector), and mlx5_5's FEC
	// gives up on blocks.
	down := DefaultNIC(1)
	down.LinkDownReason = "Autoneg, No partner detected"
	down.Module.RxPowerMW = []float64{0.0001, 0.0001, 0.0001, 0.0001}
	hot := DefaultNIC(3)
	hot.Module.TempC = 72.4
	hot.Module.RxPowerMW[2] = 0.0912
	uncorrected.FECUncorrectableBlocks = 1873
	wrongPrio := DefaultNIC(7)
	wrongPrio.PFCPriorities = []int{0}
	wrongPrio.GlobalPauseRX, wrongPrio.GlobalPauseTX = true, true
	return map[string]NIC{"mlx5_0": trustPCP, "mlx5_1": down, "mlx5_3": hot, "mlx5_5": uncorrected, "mlx5_6": noECN, "mlx5_7": wrongPrio}
}

var mlx5Modules = []string{"ib_core", "ib_uverbs", "ib_umad", "rdma_cm", "rdma_ucm", "mlx5_core", "mlx5_ib"}

// DGX-like placement: each NIC behind its own PCIe switch/root port.
var cx7Buses = []string{"18", "2a", "3a", "5d", "9a", "ab", "ba", "db"}

// mac returns a ConnectX MAC for rail i of the node.
func mac(i int) [6]byte { return [6]byte{0xb8, 0x3f, 0xd2, 0xa1, 0x2b, byte(0x3c + i)} }

func macString(m [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

// nodeGUID is how mlx5 derives the GUID of an Ethernet port from its MAC.
func nodeGUID(m [6]byte) string {
	return fmt.Sprintf("%02x%02x:%02x03:00%02x:%02x%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

// linkLocalGID is the EUI-64 IPv6 link-local address of the MAC.
func linkLocalGID(m [6]byte) string {
	return fmt.Sprintf("fe80:0000:0000:0000:%02x%02x:%02xff:fe%02x:%02x%02x", m[0]^2, m[1], m[2], m[3], m[4], m[5])
}

// ipv4GID is the IPv4-mapped GID of a.b.c.d.
func ipv4GID(a, b, c, d int) string {
	return fmt.Sprintf("0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", a, b, c, d)
}

// Netdev is the interface name of rail i.
func Netdev(rail int) string { return fmt.Sprintf("ens%df0np0", rail+1) }

// mlx5Counters are the IB PMA counters of a busy CX-7 RoCE port, scaled per
// rail so every device reports distinct values (from the shared sample).
func mlx5Counters(i int) map[string]string {
	k := uint64(i + 1)
	return map[string]string{
		"VL15_dropped": "0", "excessive_buffer_overrun_errors": "0", "link_downed": "1",
		"link_error_recovery": "0", "local_link_integrity_errors": "0",
		"multicast_rcv_packets": "0", "multicast_xmit_packets": "0",
		"port_rcv_constraint_errors": "0", "port_rcv_data": fmt.Sprint(907712334410 * k),
		"port_rcv_errors": "0", "port_rcv_packets": fmt.Sprint(889012877 * k),
		"port_rcv_remote_physical_errors": "0", "port_rcv_switch_relay_errors": "0",
		"port_xmit_constraint_errors": "0", "port_xmit_data": fmt.Sprint(912873467312 * k),
		"port_xmit_discards": "0", "port_xmit_packets": fmt.Sprint(894512331 * k),
		"port_xmit_wait": "0", "symbol_error": "0",
		"unicast_rcv_packets": fmt.Sprint(889012877 * k), "unicast_xmit_packets": fmt.Sprint(894512331 * k),
	}
}

// mlx5HWCounters is the full default-visible mlx5 hw_counters set of a
// ConnectX-6/7 PF (drivers/infiniband/hw/mlx5/counters.c).
func mlx5HWCounters(i int) map[string]string {
	k := uint64(i + 1)
	m := map[string]string{
		"duplicate_request": "3", "implied_nak_seq_err": "0", "lifespan": "10",
		"local_ack_timeout_err": "2", "np_cnp_sent": fmt.Sprint(50110 * k),
		"np_ecn_marked_roce_packets": fmt.Sprint(61877 * k), "out_of_buffer": "0",
		"out_of_sequence": "12", "packet_seq_err": "7", "req_cqe_error": "0",
		"req_cqe_flush_error": "0", "req_remote_access_errors": "0",
		"req_remote_invalid_request": "0", "req_rnr_retries_exceeded": "0",
		"req_transport_retries_exceeded": "0", "resp_cqe_error": "0",
		"resp_cqe_flush_error": "0", "resp_local_length_error": "0",
		"resp_remote_access_errors": "0", "rnr_nak_retry_err": "0",
		"roce_adp_retrans": "0", "roce_adp_retrans_to": "0", "roce_slow_restart": "0",
		"roce_slow_restart_cnps": "0", "roce_slow_restart_trans": "0",
		"rp_cnp_handled": fmt.Sprint(48213 * k), "rp_cnp_ignored": "0",
		"rx_atomic_requests": "0", "rx_dct_connect": "0", "rx_icrc_encapsulated": "0",
		"rx_read_requests": fmt.Sprint(1161608 * k), "rx_write_requests": fmt.Sprint(51234567 * k),
	}
	return m
}

func cx7(i int) Device {
	m := mac(i)
	nd := Netdev(i)
	bus := cx7Buses[i%len(cx7Buses)]
	if i >= len(cx7Buses) {
		bus = fmt.Sprintf("%02x", 0x10+i)
	}
	rootBus := fmt.Sprintf("%02x", parseHex(bus)-1)
	ip := 100 + i
	return Device{
		Name: fmt.Sprintf("mlx5_%d", i), Driver: "mlx5_core",
		PCIAddress: "0000:" + bus + ":00.0", RootPort: "0000:" + rootBus + ":01.0",
		Vendor: "0x15b3", DeviceID: "0x1021", HCAType: "MT4129", BoardID: "MT_0000000838", FWVer: "28.39.1002",
		NodeGUID: nodeGUID(m), MAC: macString(m),
		LinkLayer: "Ethernet", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "400 Gb/sec (4X NDR)",
		Netdev: nd, MTU: 9000, OperState: "up", Carrier: "1", CarrierChanges: 2, Speed: "400000",
		PCIeCurSpeed: "32.0 GT/s PCIe", PCIeMaxSpeed: "32.0 GT/s PCIe", PCIeCurWidth: 16, PCIeMaxWidth: 16,
		RootSpeed: "32.0 GT/s PCIe", RootWidth: 16,
		Counters: mlx5Counters(i), HWCounters: mlx5HWCounters(i),
		GIDs: []GID{
			{0, linkLocalGID(m), "IB/RoCE v1", nd},
			{1, linkLocalGID(m), "RoCE v2", nd},
			{2, ipv4GID(192, 168, ip, 11), "IB/RoCE v1", nd},
			{3, ipv4GID(192, 168, ip, 11), "RoCE v2", nd},
		},
		GIDSlots: 16, RoCEMode: "RoCE v2", Uverbs: i,
	}
}

func parseHex(s string) int {
	var v int
	fmt.Sscanf(s, "%x", &v)
	return v
}

// HealthyCX7 is an n-NIC ConnectX-7 400G RoCE node, set up as NVIDIA
// recommends: MTU 9000, RoCE v2 GID at index 3, Gen5 x16.
func HealthyCX7(n int) Node {
	node := Node{Modules: mlx5Modules}
	for i := 0; i < n; i++ {
		node.Devices = append(node.Devices, cx7(i))
	}
	return node
}

// DegradedCX7 is the healthy node with one fault per device.
func DegradedCX7() Node {
	node := HealthyCX7(8)
	d := node.Devices
	// mlx5_1: link down. mlx5 synthesises DOWN/Disabled from the netdev and
	// a placeholder 40G rate; the netdev reports speed -1.
	d[1].State, d[1].PhysState, d[1].Rate = "1: DOWN", "3: Disabled", "40 Gb/sec (4X QDR)"
	d[1].OperState, d[1].Carrier, d[1].Speed, d[1].CarrierChanges = "down", "0", "-1", 7
	d[1].GIDs = d[1].GIDs[:2] // no IPv4 GIDs without a working address
	// mlx5_2: card trained at x8 in an x16 slot (bad riser / seating).
	d[2].PCIeCurWidth = 8
	d[2].AERCorrectable = 1734
	// mlx5_3: netdev left at the default MTU.
	d[3].MTU = 1500
	// mlx5_4: one card missed the firmware update.
	d[4].FWVer = "28.37.1014"
	// mlx5_5: a counter file returns garbage.
	d[5].HWCounters["out_of_sequence"] = "garbage\x01value"
	// mlx5_6: counters/ cannot be read at all.
	d[6].Counters, d[6].CountersLoop = nil, true
	return node
}

// Gen5NICsInGen4Slots is a server of the PCIe Gen4 generation (Ice Lake,
// Milan) with eight ConnectX-7 cards, Gen5 x16 parts, each running one 200G
// port: every link trains at 16 GT/s x16, the most its slot's root port
// supports, and its 252 Gb/s carries 200G with room. A healthy node: the
// cards sit where they should, and nothing is to be reseated.
func Gen5NICsInGen4Slots() Node {
	n := HealthyCX7(8)
	for i := range n.Devices {
		d := &n.Devices[i]
		d.Rate, d.Speed = "200 Gb/sec (4X HDR)", "200000"
		d.PCIeCurSpeed, d.RootSpeed = gen4, gen4
	}
	return n
}

// IBHDR is a two-port InfiniBand HDR node (ConnectX-6, IPoIB netdevs).
func IBHDR() Node {
	node := Node{Modules: append([]string{"ib_ipoib"}, mlx5Modules...)}
	for i := 0; i < 2; i++ {
		m := mac(i)
		guid := fmt.Sprintf("0c42:a103:00%02x:%02x%02x", 0x6a, 0x10, 0x20+i)
		d := Device{
			Name: fmt.Sprintf("mlx5_%d", i), Driver: "mlx5_core",
			PCIAddress: fmt.Sprintf("0000:%02x:00.0", 0x41+i*0x40), RootPort: fmt.Sprintf("0000:%02x:01.0", 0x40+i*0x40),
			Vendor: "0x15b3", DeviceID: "0x101b", HCAType: "MT4123", BoardID: "MT_0000000223", FWVer: "20.40.1000",
			NodeGUID: guid, MAC: macString(m),
			LinkLayer: "InfiniBand", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "200 Gb/sec (4X HDR)",
			LID:    fmt.Sprintf("0x%x", 0x12+i),
			Netdev: fmt.Sprintf("ibp%ds0", 0x41+i*0x40), MTU: 4092, OperState: "up", Carrier: "1", CarrierChanges: 2, Speed: "200000",
			PCIeCurSpeed: "16.0 GT/s PCIe", PCIeMaxSpeed: "16.0 GT/s PCIe", PCIeCurWidth: 16, PCIeMaxWidth: 16,
			RootSpeed: "16.0 GT/s PCIe", RootWidth: 16,
			Counters: mlx5Counters(i),
			HWCounters: map[string]string{
				"duplicate_request": "0", "implied_nak_seq_err": "0", "lifespan": "10", "local_ack_timeout_err": "0",
				"out_of_buffer": "0", "out_of_sequence": "0", "packet_seq_err": "0", "req_cqe_error": "0",
				"req_cqe_flush_error": "0", "req_remote_access_errors": "0", "req_remote_invalid_request": "0",
				"resp_cqe_error": "0", "resp_cqe_flush_error": "0", "resp_local_length_error": "0",
				"resp_remote_access_errors": "0", "rnr_nak_retry_err": "0", "rx_atomic_requests": "0",
				"rx_dct_connect": "0", "rx_read_requests": "20131", "rx_write_requests": "88121305",
			},
			GIDs:     []GID{{0, "fe80:0000:0000:0000:" + guid, "IB/RoCE v1", ""}},
			GIDSlots: 8, Uverbs: i,
		}
		d.Counters["symbol_error"] = "3"
		node.Devices = append(node.Devices, d)
	}
	return node
}

// BnxtNoCounters is a Broadcom BCM57508 200G RoCE node: bnxt_re has no IB
// PMA, so only hw_counters exist, with the pre-2025 bnxt names.
func BnxtNoCounters() Node {
	m := [6]byte{0x00, 0x0a, 0xf7, 0x51, 0x62, 0x70}
	nd := "ens2f0np0"
	return Node{
		Modules: []string{"ib_core", "ib_uverbs", "rdma_cm", "bnxt_en", "bnxt_re"},
		Devices: []Device{{
			Name: "bnxt_re0", Driver: "bnxt_en",
			PCIAddress: "0000:41:00.0", RootPort: "0000:40:01.1",
			Vendor: "0x14e4", DeviceID: "0x1750", FWVer: "227.1.111.0",
			NodeGUID: "020a:f7ff:fe51:6270", MAC: macString(m),
			LinkLayer: "Ethernet", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "200 Gb/sec (4X HDR)",
			Netdev: nd, MTU: 9000, OperState: "up", Carrier: "1", CarrierChanges: 1, Speed: "200000",
			PCIeCurSpeed: "16.0 GT/s PCIe", PCIeMaxSpeed: "16.0 GT/s PCIe", PCIeCurWidth: 16, PCIeMaxWidth: 16,
			RootSpeed: "16.0 GT/s PCIe", RootWidth: 16,
			HWCounters: map[string]string{
				"active_pds": "3", "active_ahs": "2", "active_qps": "130", "active_srqs": "0",
				"active_cqs": "131", "active_mrs": "65", "active_mws": "0",
				"rx_pkts": "912004113", "rx_bytes": "3734529101824", "tx_pkts": "899120554", "tx_bytes": "3682120120320",
				"recoverable_errors": "0", "rx_roce_errors": "0", "rx_roce_discards": "0",
				"to_retransmits": "4", "seq_err_naks_rcvd": "9", "max_retry_exceeded": "0",
				"rnr_naks_rcvd": "0", "missing_resp": "0", "unrecoverable_err": "0", "bad_resp_err": "0",
				"local_qp_op_err": "0", "local_protection_err": "0", "mem_mgmt_op_err": "0",
				"remote_invalid_req_err": "0", "remote_access_err": "0", "remote_op_err": "0",
				"dup_req": "1", "res_exceed_max": "0", "res_length_mismatch": "0", "oos_drop_count": "17",
				"rx_out_of_buffer": "0", "tx_atomic_req": "0", "tx_read_req": "0", "tx_read_resp": "0",
				"tx_write_req": "51200", "tx_send_req": "220", "rx_atomic_req": "0", "rx_read_req": "0",
				"rx_read_resp": "0", "rx_write_req": "50112", "rx_send_req": "219",
				"rx_roce_good_pkts": "912004113", "rx_roce_good_bytes": "3734529101824",
				"tx_cnp_pkts": "2210", "rx_cnp_pkts": "1983", "rx_ecn_marked_pkts": "2301",
			},
			GIDs: []GID{
				{0, linkLocalGID(m), "IB/RoCE v1", nd},
				{1, linkLocalGID(m), "RoCE v2", nd},
				{2, ipv4GID(192, 168, 100, 21), "IB/RoCE v1", nd},
				{3, ipv4GID(192, 168, 100, 21), "RoCE v2", nd},
			},
			GIDSlots: 8, Uverbs: 0,
		}},
	}
}

// NoRDMADriver has a ConnectX-7 on the PCI bus with mlx5_core unbound and
// no RDMA modules: what an operator sees before installing the driver.
func NoRDMADriver() Node {
	return Node{
		Modules: []string{},
		UnboundNICs: []PCIFunction{
			{Address: "0000:18:00.0", Vendor: "0x15b3", Device: "0x1021", Class: "0x020000"},
			{Address: "0000:03:00.0", Vendor: "0x8086", Device: "0x1533", Class: "0x020000", Driver: "igb"},
		},
	}
}

// ScaleNode is a node with n ConnectX-7 ports and full 256-slot GID tables,
// for benchmarks.
func ScaleNode(n int) Node {
	node := Node{Modules: mlx5Modules}
	for i := 0; i < n; i++ {
		// cx7 names the device, netdev and GIDs after i already; only the
		// PCI placement and the IPv4 GIDs need room for more than 8 ports.
		d := cx7(i)
		d.PCIAddress = fmt.Sprintf("0000:%02x:00.0", 0x10+2*i)
		d.RootPort = fmt.Sprintf("0000:%02x:01.0", 0x0f+2*i)
		for j := range d.GIDs {
			if strings.HasPrefix(d.GIDs[j].GID, "0000:") {
				d.GIDs[j].GID = ipv4GID(10, i/256, i%256, 11)
			}
		}
		d.GIDSlots = 256
		node.Devices = append(node.Devices, d)
	}
	return node
}

// WriteScaleNode writes ScaleNode(ports) under root with its ethtool/DCB
// captures in root/replay: the tree benchmarks and load tests scrape.
func WriteScaleNode(root string, ports int) error {
	return Scenario{Node: ScaleNode(ports), Replay: map[string]NIC{}}.Write(root)
}
