package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// NodeDetail drills into the RDMA devices of one or more nodes: traffic,
// PFC and congestion per priority, retransmissions, drops, PHY and PCIe
// health, link state and the probe history of the node.
func NodeDetail() *dashboard.DashboardBuilder {
	d := newDashboard(UIDNodeDetail, "RoCE / Node detail",
		"Per node, RDMA device and priority: throughput, PFC pause, ECN/CNP, retransmissions, drops, PHY errors, "+
			"PCIe link, link state and probe history. Pick the node and devices at the top.",
		"now-1h")
	b := newBoard(d)

	b.row("Devices and link state")
	b.add(b.table("RDMA devices", "Adapters of the selected nodes with firmware, PCI address and node GUID.",
		"short", 12, 6, []string{"instance", "device", "hca_type", "board_id", "firmware_version", "pci_address", "node_guid", "driver", "Value"},
		qt(sel("roce_device_info", dev))).
		OverrideByName("Value", []dashboard.DynamicConfigValue{{Id: "custom.hidden", Value: true}}))
	b.add(b.table("Ports and interfaces", "RDMA ports with their link layer and network interface.",
		"short", 12, 6, []string{"instance", "device", "port", "link_layer", "interface", "Value"},
		qt(sel("roce_port_info", dev))).
		OverrideByName("Value", []dashboard.DynamicConfigValue{{Id: "custom.hidden", Value: true}}))
	b.add(b.states("Port state", "Logical port state (4 = ACTIVE is the only state that carries traffic).", 12, 6,
		valueText("1", "DOWN", "red", "2", "INIT", "orange", "3", "ARMED", "orange", "4", "ACTIVE", "green", "5", "ACTIVE_DEFER", "yellow"),
		thresholds("red", 4.0, "green", 5.0, "yellow"),
		q(sel("roce_port_state_id", dev), "{{instance}} {{device}}/{{port}}")))
	b.add(b.states("Physical link state", "Physical port state (5 = LinkUp). Polling means no link partner: check the cable and the switch port.", 12, 6,
		valueText("1", "Sleep", "orange", "2", "Polling", "red", "3", "Disabled", "red", "4", "Training", "orange", "5", "LinkUp", "green",
			"6", "ErrorRecovery", "orange", "7", "PhyTest", "orange"),
		thresholds("red", 5.0, "green", 6.0, "orange"),
		q(sel("roce_port_physical_state_id", dev), "{{instance}} {{device}}/{{port}}")))
	b.add(b.timeseries("Port rate", "Negotiated link rate of each RDMA port.", "Bps", 8, 6,
		q(sel("roce_port_rate_bytes_per_second", dev), "{{instance}} {{device}}/{{port}}")))
	b.add(b.timeseries("MTU", "Netdev MTU and the RoCE active path MTU derived from it.", "bytes", 8, 6,
		q(byDevice(sel("roce_interface_mtu_bytes")), "{{instance}} {{device}} netdev"),
		q(sel("roce_port_active_mtu_bytes", dev), "{{instance}} {{device}} active RoCE")))
	b.add(b.bars("Link flaps", "Link down events and carrier changes per interval.", "short", 8, 6,
		q(increase("roce_port_link_downed_total", dev), "{{instance}} {{device}} link downed"),
		q(byDevice(increase("roce_phy_link_down_events_total")), "{{instance}} {{device}} PHY link down"),
		q(byDevice(increase("roce_interface_carrier_changes_total")), "{{instance}} {{device}} carrier changes")))

	cablingRowNode(b)

	b.row("Throughput")
	b.add(b.timeseries("RDMA port throughput", "Bytes received and sent per second on each RDMA port (all traffic classes).", "Bps", 12, 8,
		q(rate("roce_port_rcv_data_bytes_total", dev), "{{instance}} {{device}} rx"),
		q(rate("roce_port_xmit_data_bytes_total", dev), "{{instance}} {{device}} tx")))
	b.add(b.timeseries("Port utilization", "Throughput as a share of the port rate.", "percentunit", 12, 8,
		q(rate("roce_port_rcv_data_bytes_total", dev)+` / on(instance, device, port) `+sel("roce_port_rate_bytes_per_second", dev), "{{instance}} {{device}} rx"),
		q(rate("roce_port_xmit_data_bytes_total", dev)+` / on(instance, device, port) `+sel("roce_port_rate_bytes_per_second", dev), "{{instance}} {{device}} tx")))
	// The RoCE priority is the one with PFC on (roce_pfc_enabled): drawn bold and
	// green (query B), every other priority thin (query A).
	pfcOn := sel("roce_pfc_enabled") + " == 1"
	b.add(b.timeseries("Bytes per priority (RoCE priority highlighted)", "Bytes per second per 802.1p priority and direction (ethtool per-priority counters). "+
		"The PFC-protected RoCE priority is drawn bold; RDMA bytes on any other priority travel lossy (RoCETrafficOnLossyPriority).", "Bps", 16, 8,
		q(byDevice(rate("roce_priority_bytes_total")+" unless on(instance, interface, priority) ("+pfcOn+")"), "{{instance}} {{device}} {{direction}} prio {{priority}}"),
		q(byDevice(rate("roce_priority_bytes_total")+" * on(instance, interface, priority) group_left() ("+pfcOn+")"), "{{instance}} {{device}} {{direction}} RoCE prio {{priority}}")).
		OverrideByQuery("B", []dashboard.DynamicConfigValue{
			{Id: "custom.lineWidth", Value: 3},
			{Id: "custom.fillOpacity", Value: 25},
			{Id: "color", Value: map[string]any{"mode": "fixed", "fixedColor": "green"}},
		}))
	// Share of the RDMA bytes the RoCE priority counted, per direction: about 1 (or a
	// little above, frames carry headers the RDMA counters do not) when RoCE is on it.
	// An idle port has no share: dividing by its zero RDMA rate gives NaN,
	// which Prometheus returns and VictoriaMetrics (MetricsQL drops NaN)
	// does not, so the denominator keeps only ports that moved bytes.
	roceShare := func(dir, rdma string) string {
		return "sum by (instance, interface) (" + rate("roce_priority_bytes_total", `direction="`+dir+`"`) +
			" * on(instance, interface, priority) group_left() (" + pfcOn + "))" +
			" / on(instance, interface) group_right() (sum by (instance, interface, device) (" + rate(rdma, dev) +
			" * on(instance, device, port) group_left(interface) group by (instance, device, port, interface) (" + sel("roce_port_info", dev) + ")) > 0)"
	}
	b.add(b.timeseries("RoCE priority share of RDMA bytes", "Bytes counted on the PFC priority divided by the RDMA port's bytes (port_xmit_data / port_rcv_data). "+
		"At or slightly above 100% RoCE runs lossless; far below, it goes out on another priority (check NCCL_IB_TC and the DSCP map with the doctor).",
		"percentunit", 8, 8,
		q(roceShare("tx", "roce_port_xmit_data_bytes_total"), "{{instance}} {{device}} tx"),
		q(roceShare("rx", "roce_port_rcv_data_bytes_total"), "{{instance}} {{device}} rx")))

	b.row("PFC and congestion")
	b.add(b.timeseries("PFC pause share per priority and direction",
		"Share of time the port was paused (rx: the switch paused this NIC) or pausing its peer (tx: this NIC's buffers were full). "+
			"A few percent under load is normal; sustained high values or a storm mean a stuck receiver.",
		"percentunit", 12, 8,
		q(byDevice(rate("roce_pfc_pause_duration_seconds_total")), "{{instance}} {{device}} {{direction}} prio {{priority}}")))
	b.add(b.timeseries("PFC pause frames", "Per-priority PFC pause frames, and global (802.3x) pause frames which should be off on a RoCE fabric.",
		"pps", 12, 8,
		q(byDevice(rate("roce_pfc_pause_frames_total")), "{{instance}} {{device}} {{direction}} prio {{priority}}"),
		q(byDevice(rate("roce_global_pause_frames_total")), "{{instance}} {{device}} {{direction}} global")))
	b.add(b.timeseries("ECN marks and CNPs",
		"DCQCN: ECN-marked RoCE packets received and CNPs sent back (this NIC as notification point), CNPs handled (this NIC as sender slowed down).",
		"pps", 12, 8,
		q(rate("roce_hw_np_ecn_marked_roce_packets_total", dev), "{{instance}} {{device}} ECN-marked rx"),
		q(rate("roce_hw_np_cnp_sent_total", dev), "{{instance}} {{device}} CNP sent"),
		q(rate("roce_hw_rp_cnp_handled_total", dev), "{{instance}} {{device}} CNP handled")))
	b.add(b.bars("PFC storm events", "PFC storm-prevention watchdog events per interval (severity=error: the NIC stopped sending pause frames).",
		"short", 12, 8,
		q(byDevice(increase("roce_pfc_pause_storm_events_total")), "{{instance}} {{device}} {{severity}}")))

	b.row("Retransmissions and transport errors")
	b.add(b.timeseries("Retransmissions", "Packets received out of sequence, NAK-triggered retransmits and ACK timeouts. "+
		"Non-zero on a lossless fabric means packets are being dropped somewhere.",
		"cps", 12, 8,
		q(rate("roce_hw_out_of_sequence_total", dev), "{{instance}} {{device}} out_of_sequence"),
		q(rate("roce_hw_packet_seq_err_total", dev), "{{instance}} {{device}} packet_seq_err"),
		q(rate("roce_hw_local_ack_timeout_err_total", dev), "{{instance}} {{device}} local_ack_timeout_err"),
		q(rate("roce_hw_implied_nak_seq_err_total", dev), "{{instance}} {{device}} implied_nak_seq_err")))
	b.add(b.timeseries("Retries exceeded", "Queue pairs that gave up: transport or RNR retries exhausted. Each one is an application-visible error.",
		"cps", 12, 8,
		q(rate("roce_hw_req_transport_retries_exceeded_total", dev), "{{instance}} {{device}} transport retries exceeded"),
		q(rate("roce_hw_req_rnr_retries_exceeded_total", dev), "{{instance}} {{device}} RNR retries exceeded"),
		q(rate("roce_hw_rnr_nak_retry_err_total", dev), "{{instance}} {{device}} rnr_nak_retry_err")))

	b.row("Drops")
	b.add(b.timeseries("RDMA drops", "out_of_buffer: packets dropped for lack of receive WQEs; port xmit discards and receive errors from the port counters.",
		"cps", 8, 8,
		q(rate("roce_hw_out_of_buffer_total", dev), "{{instance}} {{device}} out_of_buffer"),
		q(rate("roce_port_xmit_discards_total", dev), "{{instance}} {{device}} xmit discards"),
		q(rate("roce_port_rcv_errors_total", dev), "{{instance}} {{device}} rcv errors")))
	b.add(b.timeseries("PHY discards", "Packets the port dropped at the physical layer, per direction.", "pps", 8, 8,
		q(byDevice(rate("roce_phy_discards_total")), "{{instance}} {{device}} {{direction}}")))
	b.add(b.timeseries("Priority discards", "Packets dropped per priority, direction and reason (e.g. buffer full on a lossy priority); "+
		"per traffic class, mlx5's shared-buffer and WRED drops (rx_prio<N>_buf_discard / _cong_discard count TC N: under the default map TC 0 holds priority 1, TC 1 priority 0).", "pps", 8, 8,
		q(byDevice(rate("roce_priority_discards_total")), "{{instance}} {{device}} {{direction}} prio {{priority}} {{reason}}"),
		q(byDevice(rate("roce_traffic_class_discards_total")), "{{instance}} {{device}} {{direction}} TC {{tc}} {{reason}}")))

	b.row("Physical layer")
	b.add(b.timeseries("Pre-FEC bit error ratio", "Bits corrected by FEC per bit on the wire. Healthy NRZ lanes (25G) stay below 1e-9, 50G PAM4 lanes below 1e-6, "+
		"100G PAM4 lanes (400G, 800G) near 1e-6 to 1e-5; a rising ratio predicts uncorrectable errors.", "sci", 8, 8,
		q(byDevice(rate("roce_phy_fec_corrected_bit_errors_total"))+` / on(instance, interface) group_left() (`+sel("roce_interface_speed_bytes_per_second")+` * 8)`,
			"{{instance}} {{device}}")))
	b.add(b.timeseries("FEC corrected bits", "Bits corrected by forward error correction per second.", "cps", 8, 8,
		q(byDevice(rate("roce_phy_fec_corrected_bit_errors_total")), "{{instance}} {{device}}")))
	b.add(b.timeseries("Uncorrected errors", "Symbol errors FEC could not correct, CRC errors and IB symbol errors. "+
		"A compliant link has some (IEEE 802.3: 1e-13 of its bits after FEC on PAM4 lanes, one every 25 s at 400G); "+
		"well above that, and with CRC errors, they cost retransmissions: reseat or replace the cable or transceiver.", "cps", 8, 8,
		q(byDevice(rate("roce_phy_uncorrected_symbol_errors_total")), "{{instance}} {{device}} uncorrected symbols"),
		q(byDevice(rate("roce_phy_crc_errors_total")), "{{instance}} {{device}} CRC errors"),
		q(rate("roce_port_symbol_error_total", dev), "{{instance}} {{device}} symbol errors")))

	b.row("Optics")
	b.add(b.table("Modules", "The pluggable module in each selected device's cage: form factor, management spec, vendor, part and serial number "+
		"(read from the module EEPROM once per refresh interval).",
		"short", 12, 6, []string{"instance", "device", "interface", "type", "spec", "media", "vendor", "part_number", "serial", "Value"},
		qt(byDevice(sel("roce_transceiver_info")))))
	b.add(b.timeseries("Module temperature", "Module temperature against the module's own high warning threshold: "+
		"above it the laser ages fast (airflow, fan, or a failing module).", "celsius", 12, 6,
		q(byDevice(sel("roce_transceiver_temperature_celsius")), "{{instance}} {{device}}"),
		q(byDevice(sel("roce_transceiver_threshold", `monitor="temperature"`, `threshold="high_warning"`)), "{{instance}} {{device}} high warning")))
	b.add(b.timeseries("Received optical power per lane", "Rx power of each lane against the module's own low warning and low alarm thresholds: "+
		"one dim lane is a dirty connector or a bent fibre; clean, reseat, then swap the cable.", "watt", 12, 8,
		q(byDevice(sel("roce_transceiver_rx_power_watts")), "{{instance}} {{device}} lane {{lane}}"),
		q(byDevice(sel("roce_transceiver_threshold", `monitor="rx_power"`, `threshold=~"low_warning|low_alarm"`)), "{{instance}} {{device}} {{threshold}}")))
	b.add(b.timeseries("FEC blocks", "FEC blocks corrected and not correctable per second (kernel standard FEC statistics). "+
		"Uncorrectable blocks are lost frames.", "cps", 12, 8,
		q(byDevice(rate("roce_phy_fec_corrected_blocks_total")), "{{instance}} {{device}} corrected"),
		q(byDevice(rate("roce_phy_fec_uncorrectable_blocks_total")), "{{instance}} {{device}} uncorrectable")))

	b.row("PCIe")
	b.add(b.timeseries("PCIe link width", "Negotiated (current) and maximum PCIe lanes of the NIC (max) and of the port above it (upstream_max). Current below the lower of the two halves the NIC's host bandwidth.", "short", 6, 8,
		q(sel("roce_pcie_link_width_lanes", dev), "{{instance}} {{device}} {{kind}}")))
	b.add(b.timeseries("PCIe link speed", "Negotiated (current) and maximum PCIe transfer rate per lane (32 GT/s is Gen5) of the NIC (max) and of the port above it (upstream_max): a Gen5 NIC in a Gen4 slot runs at 16 GT/s by design.", "short", 6, 8,
		q(sel("roce_pcie_link_speed_transfers_per_second", dev), "{{instance}} {{device}} {{kind}}")))
	b.add(b.timeseries("PCIe bandwidth vs port rate", "Usable PCIe bandwidth (after encoding) of the NIC's slot against the RDMA port rate: "+
		"a slot slower than the port caps the link.", "Bps", 6, 8,
		q(sel("roce_pcie_bandwidth_bytes_per_second", dev), "{{instance}} {{device}} PCIe {{kind}}"),
		q(sel("roce_port_rate_bytes_per_second", dev), "{{instance}} {{device}} port rate")))
	b.add(b.timeseries("PCIe AER errors", "PCIe Advanced Error Reporting events per second by severity, at each end of the NIC's link: the NIC (function) and the port above it (upstream).", "cps", 6, 8,
		q(rate("roce_pcie_aer_errors_total", dev), "{{instance}} {{device}} {{severity}} ({{end}})")))

	// Empty on nodes without NVIDIA GPUs: the gpu collector exports nothing there.
	b.row("GPU ↔ NIC path")
	b.add(b.table("GPU ↔ NIC affinity", "Each GPU's closest RDMA NIC and their PCIe relation as NCCL classifies the path, "+
		"with its level (1 PIX, 2 PXB: a shared PCIe switch, what GPUDirect RDMA needs; 3 PHB, 5 SYS: every transfer crosses the CPU). "+
		"nvidia-smi topo -m's NODE is PHB to NCCL.",
		"short", 10, 8, []string{"instance", "gpu", "device", "relation", "Value"},
		qt(sel("roce_gpu_nic_topology", dev)+` * on (instance, gpu) group_left () max by (instance, gpu) (`+sel("roce_gpu_nic_closest_pcie_level")+`)`)).
		OverrideByName("Value", []dashboard.DynamicConfigValue{{Id: "displayName", Value: "level"}}))
	b.add(b.table("ACS on the GPU ↔ NIC switch path", "Switch ports between each GPU and its closest NIC whose ACS redirects peer-to-peer traffic "+
		"to the root complex: should be 0 everywhere (absent where the exporter cannot read PCI config space, i.e. not root).",
		"short", 6, 8, []string{"instance", "gpu", "Value"},
		qt(sel("roce_gpu_nic_path_acs_redirect_bridges"))).
		OverrideByName("Value", []dashboard.DynamicConfigValue{{Id: "displayName", Value: "redirecting ports"}}))
	b.add(b.timeseries("GPUDirect RDMA", "1 when the path is available: peermem (nvidia_peermem loaded) or dmabuf (open GPU kernel module R515+ on Linux 5.12+).", "short", 8, 8,
		q(sel("roce_gpudirect_rdma_available"), "{{instance}} {{path}}")))
	b.add(b.table("GPUs", "NVIDIA GPUs with their PCI address and NUMA node; a GPU and the NIC it uses should share a NUMA node.",
		"short", 8, 8, []string{"instance", "gpu", "pci_address", "numa_node", "pci_device_id", "Value"},
		qt(sel("roce_gpu_info"))).
		OverrideByName("Value", []dashboard.DynamicConfigValue{{Id: "custom.hidden", Value: true}}))
	b.add(b.table("RDMA NIC NUMA nodes", "NUMA node of each RDMA device's PCI function.",
		"short", 6, 8, []string{"instance", "device", "pci_address", "Value"},
		qt(sel("roce_nic_numa_node", dev))).
		OverrideByName("Value", []dashboard.DynamicConfigValue{{Id: "displayName", Value: "NUMA node"}}))
	b.add(b.timeseries("GPU PCIe link width", "Negotiated (current) and maximum PCIe lanes of each GPU; a GPU lowers its link speed when idle, but never its width.", "short", 10, 8,
		q(sel("roce_gpu_pcie_link_width_lanes"), "{{instance}} GPU {{gpu}} {{kind}}")))

	b.row("Probes from this node")
	b.add(b.timeseries("Probe bandwidth", "RDMA write bandwidth measured from the selected nodes to each peer, with the expected bandwidth.", "Bps", 12, 8,
		q(sel("roce_probe_bandwidth_bytes_per_second", dev, `probe="ib_write_bw"`), "{{instance}} {{device}} → {{peer}}"),
		q(sel("roce_probe_expected_bandwidth_bytes_per_second", dev, `probe="ib_write_bw"`), "{{instance}} {{device}} → {{peer}} expected")))
	b.add(b.states("Probe results", "Success (1) or failure (0) of the latest run of each probe.", 12, 8,
		valueText("0", "failed", "red", "1", "ok", "green"),
		thresholds("red", 1.0, "green"),
		q(sel("roce_probe_success"), "{{instance}} {{probe}} {{device}} → {{peer}}")))
	return d
}
