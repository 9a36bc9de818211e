package sysfixture

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/roce-exporter/roce_exporter/node"
)

// NIC is the ethtool/DCB side of a device: what `ethtool -S/-i/-a` and
// `dcb` would print on the node. Captures of it feed the replay directory.
type NIC struct {
	PFCPriorities []int // priorities with PFC enabled
	Trust         string
	GlobalPauseRX bool
	GlobalPauseTX bool
	// Pause counters on the PFC priorities (the mlx5 driver shows them only
	// while PFC is enabled there).
	RXPause, TXPause                  uint64
	RXPauseDurationUS                 uint64
	TXPauseDurationUS                 uint64
	RXPauseTransitions                uint64
	StormWarnings, StormErrors        uint64
	RXDiscardsPHY                     uint64
	RXPrioDiscards                    uint64
	CorrectedBits                     uint64
	UncorrectedSymbolErrors           uint64
	LinkDownEvents                    uint64
	RXPrioBytes, TXPrioBytes          uint64
	RXPrioPackets, TXPrioPackets      uint64
	ECNEnabled                        *[8]bool // MLNX_OFED ecn/ files; nil = upstream driver
	KernelVersion, FirmwarePSIDSuffix string
	Channels                          int
	// DSCPPrio overrides entries of mlx5's default DSCP map (DSCP d on
	// priority d/8) in DSCP trust.
	DSCPPrio map[int]int
	// MlnxQos captures the DCB state as `mlnx_qos -i X` prints it instead of
	// iproute2's `dcb`.
	MlnxQos bool
	// RDMAPriority, when set, is the priority RDMA bytes actually travel on
	// (its per-priority byte counters carry them), instead of the PFC
	// priority: RoCE sent with the wrong DSCP or mapped to the wrong priority.
	RDMAPriority *int
	// VF is an SR-IOV virtual function's netdev: mlx5 registers DCB
	// netlink on PFs only (mlx5e_dcbnl_build_netdev wants
	// vport_group_manager), so it has no `dcb` capture and no ECN files,
	// and its `ethtool -S` has the software and vport groups but none of
	// the physical port's (_phy, per priority, pause), which are PPCNT
	// registers of the PF.
	VF bool
	// Module is the pluggable module in the cage (<if>.module.txt), nil
	// for none. FEC blocks feed <if>.fec.txt; LinkDownReason is what
	// `ethtool <if>` prints after "Link detected: no" (<if>.link.txt).
	Module                                     *Module
	FECCorrectedBlocks, FECUncorrectableBlocks uint64
	LinkDownReason                             string
	// TXReporter* are the devlink health counts of the port's tx reporter
	// (TX timeouts and error completions the driver recovered from).
	TXReporterErrors, TXReporterRecoveries uint64
	TXReporterInError                      bool
	// PendingFirmware is the firmware flashed but not yet running (devlink
	// dev info's stored version); "" when it is the running one.
	PendingFirmware string
	// DCQCN overrides the firmware defaults (node.DCQCNDefaults) of the
	// parameters MLNX_OFED shows in ecn/roce_rp and ecn/roce_np.
	DCQCN map[string]uint64
	// QoS, when set, adds the receive buffers and ETS lines MLNX_OFED 23.10's
	// mlnx_qos prints to an MlnxQos capture; nil keeps the older layout
	// without them.
	QoS *QoS
	// Switch is what the switch port announces in LLDP's optional TLVs;
	// nil sends none of them.
	Switch *SwitchPort
}

// QoS is the receive-buffer split, cable length and ETS of a port, as
// `mlnx_qos -i` prints them ("Receive buffer size (bytes): ...,
// max_buffer_size=N", "Cable len:", the PFC table's buffer row, "tc: N
// ratelimit: unlimited, tsa: ets, bw: N%").
type QoS struct {
	BufferSize  [8]int
	TotalBuffer int
	PrioBuffer  [8]int
	CableLen    int
	PrioTC      [8]int
	TSA         [8]string
	BW          [8]int
}

// ProductionQoS is the layout of the production ConnectX-7 in the research
// captures (MLNX_OFED 23.10, mlnx_qos -i ens4np0), moved to priority 3:
// the RoCE priority alone in buffer 1 of 220,896 bytes, ETS shares on the
// lossy classes and RoCE's and the CNPs' classes strict.
func ProductionQoS() *QoS {
	return &QoS{
		BufferSize: [8]int{19872, 220896}, TotalBuffer: 4151520, PrioBuffer: [8]int{0, 0, 0, 1, 0, 0, 0, 0}, CableLen: 7,
		PrioTC: [8]int{0, 1, 2, 3, 4, 5, 6, 7},
		TSA:    [8]string{"ets", "ets", "ets", "strict", "ets", "strict", "strict", "strict"},
		BW:     [8]int{9, 1, 80, 0, 10},
	}
}

// SwitchPort is a switch port's IEEE 802.3 and 802.1 LLDP TLVs, as lldpd's
// `show neighbors details` decodes them (internal/lldpcli/testdata).
type SwitchPort struct {
	MFS   int
	PVID  int
	VLANs []int
	// MAU is the operational MAU type as lldpd names it; "" sends no
	// MAC/PHY TLV.
	MAU string
}

// Leaf400G is a leaf port that announces MFS 9216, VLAN 100 untagged and
// 400GBASE-DR4, as h1 of internal/lldpcli/testdata/json0-details-dot1-dot3.json.
func Leaf400G() *SwitchPort {
	return &SwitchPort{MFS: 9216, PVID: 100, VLANs: []int{100}, MAU: "400GbaseDR4 - 400GBASE-R PCS/PMA over 4-lane single-mode fiber PMD"}
}

// DefaultNIC is a ConnectX-7 set up as NVIDIA recommends for RoCE: PFC on
// priority 3, trust DSCP, global pause off, DCQCN on every priority.
func DefaultNIC(rail int) NIC {
	k := uint64(rail + 1)
	ecn := [8]bool{true, true, true, true, true, true, true, true}
	return NIC{
		PFCPriorities: []int{3}, Trust: "dscp",
		RXPause: 1204 * k, TXPause: 311 * k, RXPauseDurationUS: 5933 * k, TXPauseDurationUS: 1402 * k,
		RXPauseTransitions: 602 * k, CorrectedBits: 10771 * k, LinkDownEvents: 1,
		RXPrioBytes: 3630849337640 * k, TXPrioBytes: 3651493869248 * k,
		RXPrioPackets: 889012877 * k, TXPrioPackets: 894512331 * k,
		ECNEnabled: &ecn, KernelVersion: "6.8.0-49-generic", Channels: 4,
		Module: DefaultModule(rail), FECCorrectedBlocks: 48213 * k,
	}
}

// ManagementAddress is the sample nodes' management address (on eno1, in
// their ip-addr.txt capture).
const ManagementAddress = "10.0.0.11/24"

// WriteReplay writes the ethtool and DCB captures of every Ethernet device
// of n into dir, and the MLNX_OFED ECN files into the node's sysfs under
// root (when the NIC has them).
func WriteReplay(root, dir string, n Node, nics map[string]NIC) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var addrs strings.Builder
	addrs.WriteString("lo               UNKNOWN        127.0.0.1/8 ::1/128\n")
	// The onboard port the node is reached on: health/testdata's plan has
	// node01 at 10.0.0.11 in the management network 10.0.0.0/24, and plan
	// init drafts the management network from it.
	addrs.WriteString("eno1             UP             " + ManagementAddress + " fe80::3eec:efff:fe1a:2b00/64\n")
	for i, d := range n.Devices {
		if d.Netdev == "" || d.LinkLayer != "Ethernet" {
			continue
		}
		nic, ok := nics[d.Name]
		if !ok {
			nic = DefaultNIC(i)
		}
		files := map[string]string{
			d.Netdev + ".txt":        ethtoolS(d, nic),
			d.Netdev + ".driver.txt": ethtoolI(d, nic),
			d.Netdev + ".pause.txt":  ethtoolA(d, nic),
		}
		if !nic.VF {
			files[d.Netdev+".dcb.txt"] = dcbShow(d, nic)
			files[d.Netdev+".fec.txt"] = ethtoolShowFEC(d.Netdev, nic.FECCorrectedBlocks, nic.FECUncorrectableBlocks)
		}
		if nic.Module != nil && !nic.VF {
			files[d.Netdev+".module.txt"] = ethtoolModule(d.Netdev, nic.Module)
		}
		files[d.Netdev+".link.txt"] = ethtoolLink(d.Netdev, d.OperState == "up", nic.LinkDownReason)
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				return err
			}
		}
		state := "UP"
		if d.OperState != "up" {
			state = "DOWN"
		}
		fmt.Fprintf(&addrs, "%-16s %-14s", d.Netdev, state)
		if ip := gidIPv4(d); ip != "" && d.OperState == "up" {
			fmt.Fprintf(&addrs, " %s/24", ip)
		}
		fmt.Fprintf(&addrs, " %s/64\n", linkLocalAddr(d.MAC))
		if nic.ECNEnabled != nil && !nic.VF && root != "" {
			if err := writeECN(root, d, *nic.ECNEnabled, nic.DCQCN); err != nil {
				return err
			}
		}
	}
	if err := writeDevlinkLLDP(dir, n, nics); err != nil {
		return err
	}
	if err := writeDevlinkInfo(dir, n, nics); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "ip-addr.txt"), []byte(addrs.String()), 0o644)
}

// gidIPv4 is the address of the device's first IPv4-mapped GID.
func gidIPv4(d Device) string {
	for _, g := range d.GIDs {
		if a, err := netip.ParseAddr(g.GID); err == nil && a.Is4In6() {
			return a.Unmap().String()
		}
	}
	return ""
}

// linkLocalAddr is the EUI-64 link-local address of mac, as ip prints it.
func linkLocalAddr(mac string) string {
	hw, _ := net.ParseMAC(mac)
	return netip.MustParseAddr(linkLocalGID([6]byte(hw))).String()
}

// writeECN creates the MLNX_OFED per-priority DCQCN enable files and the
// DCQCN parameters (en_sysfs.c: roce_rp's sixteen, roce_np's three), the
// defaults unless dcqcn says otherwise.
func writeECN(root string, d Device, enabled [8]bool, dcqcn map[string]uint64) error {
	ndDir := pciDir(d.PCIAddress, d.RootPort) + "/net/" + d.Netdev
	w := &writer{root: root}
	for _, role := range []string{"roce_np", "roce_rp"} {
		for p := 0; p < 8; p++ {
			v := "0"
			if enabled[p] {
				v = "1"
			}
			w.file(fmt.Sprintf("%s/ecn/%s/enable/%d", ndDir, role, p), v)
		}
	}
	for i, name := range node.DCQCNParamNames {
		role := "roce_rp"
		if i >= node.DCQCNReactionPointParams {
			role = "roce_np"
		}
		v, ok := dcqcn[name]
		if !ok {
			v = node.DCQCNDefaults[name]
		}
		w.file(fmt.Sprintf("%s/ecn/%s/%s", ndDir, role, name), strconv.FormatUint(v, 10))
	}
	return w.err
}

func counterInt(m map[string]string, k string) uint64 {
	v, _ := strconv.ParseUint(m[k], 10, 64)
	return v
}

// ethtoolS renders `ethtool -S` of an mlx5 port in the driver's group
// order: software/channel, vport, physical port, PCIe, per priority.
func ethtoolS(d Device, n NIC) string {
	var b strings.Builder
	line := func(name string, v uint64) { fmt.Fprintf(&b, "     %s: %d\n", name, v) }
	zeros := func(names ...string) {
		for _, name := range names {
			line(name, 0)
		}
	}
	b.WriteString("NIC statistics:\n")
	rdmaRX, rdmaTX := counterInt(d.Counters, "port_rcv_data")*4, counterInt(d.Counters, "port_xmit_data")*4
	rdmaRXP, rdmaTXP := counterInt(d.Counters, "port_rcv_packets"), counterInt(d.Counters, "port_xmit_packets")
	line("rx_packets", 1832214)
	line("rx_bytes", 523312871)
	line("tx_packets", 1734412)
	line("tx_bytes", 498112113)
	zeros("rx_lro_packets", "rx_csum_unnecessary", "rx_csum_none", "rx_xdp_drop", "tx_tso_packets", "tx_queue_stopped", "tx_queue_dropped", "tx_xmit_more", "rx_wqe_err", "rx_buff_alloc_err", "rx_cqe_compress_blks",
		"rx_out_of_buffer", "rx_if_down_packets", "rx_steer_missed_packets")
	line("rx_vport_unicast_packets", 1832001)
	line("rx_vport_unicast_bytes", 523300112)
	line("tx_vport_unicast_packets", 1734300)
	line("tx_vport_unicast_bytes", 498100027)
	line("rx_vport_rdma_unicast_packets", rdmaRXP)
	line("rx_vport_rdma_unicast_bytes", rdmaRX)
	line("tx_vport_rdma_unicast_packets", rdmaTXP)
	line("tx_vport_rdma_unicast_bytes", rdmaTX)
	if !n.VF {
		ethtoolPhy(line, zeros, n, rdmaRX, rdmaTX, rdmaRXP, rdmaTXP)
	}
	// Per channel: a packet count, then counters that stay 0.
	queue := func(prefix string, packets uint64, rest ...string) {
		line(prefix+"packets", packets)
		for _, s := range rest {
			line(prefix+s, 0)
		}
	}
	for ch := 0; ch < n.Channels; ch++ {
		queue(fmt.Sprintf("rx%d_", ch), 458053+uint64(ch), "bytes", "csum_complete", "csum_unnecessary", "xdp_drop", "wqe_err", "buff_alloc_err")
		queue(fmt.Sprintf("tx%d_", ch), 433603+uint64(ch), "bytes", "tso_packets", "stopped", "dropped", "cqe_err")
	}
	// After the channels (mlx5e_nic_stats_grps: channels, then
	// per_port_buff_congest): the per-traffic-class groups of NICs with the
	// SBCAM register (ConnectX-6 Dx and later), named by priority but
	// indexed by TC. Physical-port groups: not on a VF.
	// The drops rx_prio<P>_discards counts on a lossless priority are port
	// buffer drops: they show in the buffer discards of P's class (mlx5's
	// default map) as well.
	if !n.VF {
		var bufDiscards [8]uint64
		for _, p := range n.PFCPriorities {
			bufDiscards[node.DefaultTrafficClass(p)] = n.RXPrioDiscards
		}
		for tc := 0; tc < 8; tc++ {
			line(fmt.Sprintf("rx_prio%d_buf_discard", tc), bufDiscards[tc])
			zeros(fmt.Sprintf("rx_prio%d_cong_discard", tc), fmt.Sprintf("rx_prio%d_marked", tc))
		}
	}
	return b.String()
}

// ethtoolPhy renders the groups of `ethtool -S` that mlx5 reads from the
// physical port's PPCNT registers: _phy, per priority, pause, module.
func ethtoolPhy(line func(string, uint64), zeros func(...string), n NIC, rdmaRX, rdmaTX, rdmaRXP, rdmaTXP uint64) {
	line("rx_packets_phy", rdmaRXP+1832214)
	line("tx_packets_phy", rdmaTXP+1734412)
	line("rx_bytes_phy", rdmaRX+523312871+rdmaRXP*70)
	line("tx_bytes_phy", rdmaTX+498112113+rdmaTXP*70)
	zeros("rx_crc_errors_phy", "rx_in_range_len_errors_phy", "rx_out_of_range_len_phy", "rx_oversize_pkts_phy", "rx_symbol_err_phy", "rx_unsupported_op_phy")
	line("rx_pause_ctrl_phy", n.RXPause)
	line("tx_pause_ctrl_phy", n.TXPause)
	line("rx_discards_phy", n.RXDiscardsPHY)
	zeros("tx_discards_phy", "tx_errors_phy", "rx_undersize_pkts_phy", "rx_fragments_phy", "rx_jabbers_phy")
	line("link_down_events_phy", n.LinkDownEvents)
	line("rx_pcs_symbol_err_phy", n.UncorrectedSymbolErrors)
	line("rx_corrected_bits_phy", n.CorrectedBits)
	for l := 0; l < 4; l++ {
		line(fmt.Sprintf("rx_err_lane_%d_phy", l), n.CorrectedBits/4)
	}
	zeros("rx_buffer_passed_thres_phy", "rx_pci_signal_integrity", "tx_pci_signal_integrity", "outbound_pci_buffer_overflow",
		"outbound_pci_stalled_rd", "outbound_pci_stalled_wr", "outbound_pci_stalled_rd_events", "outbound_pci_stalled_wr_events")
	rdmaPrio := -1
	if n.RDMAPriority != nil {
		rdmaPrio = *n.RDMAPriority
	}
	for p := 0; p < 8; p++ {
		var rxB, txB, rxP, txP, rxD uint64
		switch {
		case rdmaPrio >= 0 && p != rdmaPrio && slices.Contains(n.PFCPriorities, p):
			// The lossless priority only carries a trickle (a misrouted rdma_cm
			// connection or a test that set its own class).
			rxB, txB, rxP, txP = 1204*4096, 1187*4096, 1204, 1187
		case slices.Contains(n.PFCPriorities, p) || p == rdmaPrio:
			rxB, txB, rxP, txP, rxD = n.RXPrioBytes, n.TXPrioBytes, n.RXPrioPackets, n.TXPrioPackets, n.RXPrioDiscards
			if p == 0 && rdmaPrio == 0 { // on top of the plain Ethernet traffic
				rxB, txB, rxP, txP = rxB+523312871, txB+498112113, rxP+1832214, txP+1734412
			}
		case p == 0:
			rxB, txB, rxP, txP = 523312871, 498112113, 1832214, 1734412
		}
		line(fmt.Sprintf("rx_prio%d_bytes", p), rxB)
		line(fmt.Sprintf("rx_prio%d_packets", p), rxP)
		line(fmt.Sprintf("rx_prio%d_discards", p), rxD)
		line(fmt.Sprintf("tx_prio%d_bytes", p), txB)
		line(fmt.Sprintf("tx_prio%d_packets", p), txP)
	}
	if n.GlobalPauseRX || n.GlobalPauseTX {
		zeros("rx_global_pause", "rx_global_pause_duration", "tx_global_pause", "tx_global_pause_duration", "rx_global_pause_transition")
	}
	for _, p := range n.PFCPriorities {
		line(fmt.Sprintf("rx_prio%d_pause", p), n.RXPause)
		line(fmt.Sprintf("rx_prio%d_pause_duration", p), n.RXPauseDurationUS)
		line(fmt.Sprintf("tx_prio%d_pause", p), n.TXPause)
		line(fmt.Sprintf("tx_prio%d_pause_duration", p), n.TXPauseDurationUS)
		line(fmt.Sprintf("rx_prio%d_pause_transition", p), n.RXPauseTransitions)
	}
	line("tx_pause_storm_warning_events", n.StormWarnings)
	line("tx_pause_storm_error_events", n.StormErrors)
	zeros("module_unplug", "module_bus_stuck", "module_high_temp", "module_bad_shorted")
}

func ethtoolI(d Device, n NIC) string {
	fw := d.FWVer
	if d.BoardID != "" {
		fw += " (" + d.BoardID + ")"
	}
	return fmt.Sprintf("driver: %s\nversion: %s\nfirmware-version: %s\nexpansion-rom-version: \nbus-info: %s\n"+
		"supports-statistics: yes\nsupports-test: yes\nsupports-eeprom-access: no\nsupports-register-dump: no\nsupports-priv-flags: yes\n",
		d.Driver, n.KernelVersion, fw, d.PCIAddress)
}

func ethtoolA(d Device, n NIC) string {
	return fmt.Sprintf("Pause parameters for %s:\nAutonegotiate:\toff\nRX:\t\t%s\nTX:\t\t%s\n\n", d.Netdev, onOff(n.GlobalPauseRX), onOff(n.GlobalPauseTX))
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// dscpPrio is the NIC's DSCP → priority map in DSCP trust.
func (n NIC) dscpPrio(dscp int) int {
	if p, ok := n.DSCPPrio[dscp]; ok {
		return p
	}
	return dscp / 8
}

// mlnxQosShow renders `mlnx_qos -i X` in the layout of MLNX_OFED's mlnx_qos
// (DCBX mode, trust, dscp2prio with "%02d," entries in descending order, cable
// length, the PFC table, one "tc:" block per traffic class), as quoted from a
// real ConnectX port in NVIDIA's community page DOC-2792 ("mlnx_qos", MLNX_OFED
// 4.2) and att/netarbiter's OUTPUTSAMPLE.setup-nic-lossless-layer3.sh.md.
func mlnxQosShow(d Device, n NIC) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# mlnx_qos -i %s\n", d.Netdev)
	b.WriteString("DCBX mode: OS controlled\n")
	fmt.Fprintf(&b, "Priority trust state: %s\n", n.Trust)
	if n.Trust == "dscp" {
		b.WriteString("dscp2prio mapping:\n")
		for p := 0; p < 8; p++ {
			var line strings.Builder
			for dscp := 63; dscp >= 0; dscp-- {
				if n.dscpPrio(dscp) == p {
					fmt.Fprintf(&line, "%02d,", dscp)
				}
			}
			if line.Len() > 0 {
				fmt.Fprintf(&b, "        prio:%d dscp:%s\n", p, line.String())
			}
		}
	}
	q := n.QoS
	cable := 7
	if q != nil {
		b.WriteString("Receive buffer size (bytes): ")
		for _, size := range q.BufferSize {
			fmt.Fprintf(&b, "%d,", size)
		}
		fmt.Fprintf(&b, "max_buffer_size=%d\n", q.TotalBuffer)
		cable = q.CableLen
	}
	fmt.Fprintf(&b, "Cable len: %d\nPFC configuration:\n        priority    0   1   2   3   4   5   6   7\n        enabled  ", cable)
	for p := 0; p < 8; p++ {
		v := 0
		if slices.Contains(n.PFCPriorities, p) {
			v = 1
		}
		fmt.Fprintf(&b, "   %d", v)
	}
	if q != nil {
		b.WriteString("   \n        buffer   ")
		for p := 0; p < 8; p++ {
			fmt.Fprintf(&b, "   %d", q.PrioBuffer[p])
		}
	}
	b.WriteString("\n")
	for tc := 0; tc < 8; tc++ {
		if q == nil {
			fmt.Fprintf(&b, "tc: %d ratelimit: unlimited, tsa: vendor\n         priority:  %d\n", tc, tc)
			continue
		}
		fmt.Fprintf(&b, "tc: %d ratelimit: unlimited, tsa: %s", tc, q.TSA[tc])
		if q.TSA[tc] == "ets" {
			fmt.Fprintf(&b, ", bw: %d%%", q.BW[tc])
		}
		b.WriteString("\n")
		for p := 0; p < 8; p++ {
			if q.PrioTC[p] == tc {
				fmt.Fprintf(&b, "         priority:  %d\n", p)
			}
		}
	}
	return b.String()
}

// dcbShow renders `dcb pfc show dev X; dcb app show dev X` (iproute2).
func dcbShow(d Device, n NIC) string {
	if n.MlnxQos {
		return mlnxQosShow(d, n)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# dcb pfc show dev %s; dcb app show dev %s\n", d.Netdev, d.Netdev)
	b.WriteString("pfc-cap 8 macsec-bypass off delay 7\nprio-pfc")
	for p := 0; p < 8; p++ {
		fmt.Fprintf(&b, " %d:%s", p, onOff(slices.Contains(n.PFCPriorities, p)))
	}
	b.WriteString("\n")
	if n.Trust == "dscp" {
		// mlx5 fills all 64 DSCP entries when trust is DSCP, DSCP/8: 24-31
		// (CS3/AF3x, with RoCE's node.DefaultRoCEDSCP) on priority 3,
		// node.DefaultCNPDSCP (CNPs) on 6.
		b.WriteString("dscp-prio")
		for dscp := 0; dscp < 64; dscp++ {
			fmt.Fprintf(&b, " %d:%d", dscp, n.dscpPrio(dscp))
		}
		b.WriteString("\n")
	}
	return b.String()
}
