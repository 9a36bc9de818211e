package dashboards

import (
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// ClusterOverview is the fleet view: what is broken, where the fabric is
// congested, and whether every node is set up alike.
func ClusterOverview() *dashboard.DashboardBuilder {
	d := newDashboard(UIDClusterOverview, "RoCE / Cluster overview",
		"Fleet view of the RoCE / InfiniBand compute network: failing health checks, node × peer probe bandwidth, "+
			"the most paused and most congested ports, ports down, and MTU / firmware consistency across nodes.",
		"now-3h")
	b := newBoard(d)

	okRedAbove := func(limit float64) *dashboard.ThresholdsConfigBuilder { return thresholds("green", limit, "red") }

	// The suspects first: who the probe localisation names now, and why.
	b.row("Suspects (probe localisation)")
	b.add(b.table("Current suspects",
		"Who the pair probes' localisation names now – a switch, a node, a NIC port, a path between two nodes, or a node name "+
			"two exporters claim – with the evidence: Value is the number the \"why\" column describes. A switch suspect speaks for "+
			"the rails under it: their NIC, node and path suspects are not listed. Each row is a firing RoCEProbeSuspect* or "+
			"RoCEProbeNodeNameConflict alert; alerts/README.md, \"Switch suspects\", explains the thresholds.",
		"short", 24, 8, []string{"suspect", "chassis_name", "chassis_id", "node", "instance", "device", "rail", "peer", "probe", "why", "Value"},
		qt(suspectsExpr())).
		OverrideByName("why", []dashboard.DynamicConfigValue{{Id: "custom.width", Value: 520}}))

	b.row("Fleet status")
	b.add(b.stat("Nodes reporting", "Nodes with at least one RDMA device in the selection.", "short", 4, 4,
		thresholds("blue"),
		qi(`count(count by (instance) (`+sel("roce_device_info", dev)+`))`, "nodes")))
	b.add(b.stat("Ports up", "RDMA ports in the ACTIVE state.", "short", 4, 4,
		thresholds("green"),
		qi(countOrZero(sel("roce_port_up", dev)+` == 1`), "up")))
	b.add(b.stat("Ports down", "RDMA ports not in the ACTIVE state. See the Ports down table below.", "short", 4, 4,
		okRedAbove(1),
		qi(countOrZero(sel("roce_port_up", dev)+` == 0`), "down")))
	b.add(b.stat("Failing health checks", "Checks of the nodes (local and against the cluster plan) that fail or warn now (roce_health_check_ok == 0).", "short", 4, 4,
		okRedAbove(1),
		qi(countOrZero(sel("roce_health_check_ok", devOrNode)+` == 0`), "failing")))
	b.add(b.stat("Failing probe links", "Probe links (probe, node, peer, device) whose last run failed.", "short", 4, 4,
		okRedAbove(1),
		qi(countOrZero(sel("roce_probe_success")+` == 0`), "failing")))
	b.add(b.stat("Collectors failing", "Exporter collectors that failed on their last scrape (roce_scrape_collector_success == 0).", "short", 4, 4,
		thresholds("green", 1.0, "orange"),
		qi(countOrZero(sel("roce_scrape_collector_success")+` == 0`), "failing")))

	b.row("Health checks")
	b.add(b.table("Failing health checks",
		"Every check of a node that is not ok, with its severity (critical = failed, warning = warned) and how to fix it. "+
			"`roce_exporter doctor` on the node prints the same findings.",
		"short", 24, 8, []string{"instance", "severity", "check", "subject", "hint", "Value"},
		qt(sel("roce_health_check_info", devOrNode))).
		OverrideByName("Value", []dashboard.DynamicConfigValue{{Id: "custom.hidden", Value: true}}))

	b.row("Probe bandwidth (node × peer)")
	b.add(b.matrix("RDMA write bandwidth, worst rail",
		"Latest ib_write_bw result per node (rows) and peer (columns): the slowest rail (device) of the pair.",
		"Bps", 12, 10, "instance", "peer", thresholds("blue"),
		qt(`min by (instance, peer) (`+sel("roce_probe_bandwidth_bytes_per_second", dev, `probe="ib_write_bw"`)+`)`)))
	b.add(b.matrix("RDMA write bandwidth vs expected, worst rail",
		"Latest ib_write_bw result as a share of the expected bandwidth (port rate × min_bandwidth_fraction of the plan), "+
			"worst rail per node (rows) and peer (columns). Below 100% the probe fails.",
		"percentunit", 12, 10, "instance", "peer", thresholds("red", 0.9, "orange", 1.0, "green"),
		qt(`min by (instance, peer) (`+sel("roce_probe_bandwidth_bytes_per_second", dev, `probe="ib_write_bw"`)+
			` / on(instance, probe, peer, device) `+sel("roce_probe_expected_bandwidth_bytes_per_second", dev, `probe="ib_write_bw"`)+`)`)))

	b.row("Congestion")
	// The top-10 panels read the 5-minute rates the rules of alerts/
	// record: at 1,024 nodes a raw rate() here would read every port ×
	// direction × priority series (100,000s) at every refresh.
	b.add(b.timeseries("Top paused ports (share of time paused)",
		"The 10 port/direction/priority combinations that spent the largest share of time in PFC pause (5-minute rate, recorded). "+
			"rx: the switch paused this NIC; tx: this NIC paused the switch (its receive buffers were full).",
		"percentunit", 12, 8,
		q(`topk(10, `+byDevice(sel("interface_direction_priority:roce_pfc_pause_duration_seconds:rate5m"))+`)`,
			"{{instance}} {{device}} {{direction}} prio {{priority}}")))
	b.add(b.timeseries("Top congested ports (CNPs sent)",
		"The 10 ports sending the most congestion notification packets (DCQCN notification point, 5-minute rate, recorded): they receive ECN-marked traffic.",
		"pps", 12, 8,
		q(`topk(10, `+sel("device_port:roce_hw_np_cnp_sent:rate5m", dev)+`)`, "{{instance}} {{device}}")))
	b.add(b.timeseries("Top ECN-marked ports",
		"The 10 ports receiving the most ECN-marked RoCE packets (5-minute rate, recorded): switches on their path are congested.",
		"pps", 12, 8,
		q(`topk(10, `+sel("device_port:roce_hw_np_ecn_marked_roce_packets:rate5m", dev)+`)`, "{{instance}} {{device}}")))
	b.add(b.timeseries("Top throttled senders (CNPs handled)",
		"The 10 ports that slowed down most often in reaction to CNPs (DCQCN reaction point, 5-minute rate, recorded).",
		"pps", 12, 8,
		q(`topk(10, `+sel("device_port:roce_hw_rp_cnp_handled:rate5m", dev)+`)`, "{{instance}} {{device}}")))
	b.add(b.bars("PFC storm events",
		"PFC storm-prevention watchdog events per interval: the NIC could not drain its receive queue and stopped sending pause frames "+
			"(severity=error) to keep the fabric from locking up. A stuck or overloaded host is the usual cause.",
		"short", 24, 7,
		q(`sum by (instance, device, interface, severity) (`+byDevice(increase("roce_pfc_pause_storm_events_total"))+`)`,
			"{{instance}} {{device}} {{severity}}")))

	// Fleet aggregates (roce-fleet.rules): a few series per rail or switch,
	// summed (or maxed) again here because each per-rack Prometheus
	// records its own rack's part. They ignore the node selection.
	b.row("Rails and switches (fleet aggregates)")
	b.add(b.timeseries("RDMA throughput per rail",
		"RDMA data throughput of every node's port on each rail (a rail is the device name: NIC i of every node), all selected nodes' racks together. "+
			"One rail far below the others carries less traffic: a down port, a slow link or a job that avoids it.",
		"Bps", 8, 8,
		q(`sum by (device) (device:roce_port_rcv_data_bytes:sum_rate5m{`+dev+`})`, "{{device}} rx"),
		q(`sum by (device) (device:roce_port_xmit_data_bytes:sum_rate5m{`+dev+`})`, "{{device}} tx")))
	b.add(b.timeseries("Most paused port per rail",
		"Share of time the most paused port of each rail spent in PFC pause (any priority). A rail whose pause rises alone points at its leaf switch.",
		"percentunit", 8, 8,
		q(`max by (device, direction) (device_direction:roce_pfc_pause_duration_seconds:max_rate5m{`+dev+`})`, "{{device}} {{direction}}")))
	b.add(b.timeseries("CNPs sent per rail",
		"Congestion notification packets sent by all ports of each rail per second: how much ECN-marked traffic each rail's switches deliver.",
		"pps", 8, 8,
		q(`sum by (device) (device:roce_hw_np_cnp_sent:sum_rate5m{`+dev+`})`, "{{device}}")))
	b.add(b.timeseries("Most paused port per switch",
		"Share of time the most paused port facing each switch (the LLDP neighbour of the port) spent in PFC pause. Empty without LLDP on the nodes.",
		"percentunit", 8, 8,
		q(`max by (chassis_name, direction) (chassis_name_direction:roce_pfc_pause_duration_seconds:max_rate5m)`, "{{chassis_name}} {{direction}}")))
	b.add(b.timeseries("RDMA throughput per switch",
		"RDMA data throughput (rx + tx) of the ports cabled to each switch (LLDP neighbour). Empty without LLDP on the nodes.",
		"Bps", 8, 8,
		q(`sum by (chassis_name) (chassis_name:roce_port_data_bytes:sum_rate5m)`, "{{chassis_name}}")))
	b.add(b.timeseries("CNPs sent per switch",
		"Congestion notification packets sent by the ports cabled to each switch (LLDP neighbour), per second. Empty without LLDP on the nodes.",
		"pps", 8, 8,
		q(`sum by (chassis_name) (chassis_name:roce_hw_np_cnp_sent:sum_rate5m)`, "{{chassis_name}}")))

	b.row("Links")
	b.add(b.table("Ports down", "RDMA ports that are not ACTIVE now, with their network interface.",
		"short", 12, 8, []string{"instance", "device", "port", "interface", "link_layer", "Value"},
		qt(`(`+sel("roce_port_up", dev)+` == 0) * on(instance, device, port) group_left(interface, link_layer) `+
			`group by (instance, device, port, interface, link_layer) (`+sel("roce_port_info", dev)+`)`)).
		OverrideByName("Value", []dashboard.DynamicConfigValue{{Id: "custom.hidden", Value: true}}))
	b.add(b.bars("Link down events", "Times a port's link went down, per interval (netdev carrier changes count both down and up).",
		"short", 12, 8,
		q(`sum by (instance, device) (`+increase("roce_port_link_downed_total", dev)+`)`, "{{instance}} {{device}} link downed"),
		q(`sum by (instance, device) (`+byDevice(increase("roce_interface_carrier_changes_total"))+`)`, "{{instance}} {{device}} carrier changes")))

	cablingRowOverview(b)

	b.row("Fleet consistency")
	b.add(b.bargauge("Netdev MTU (ports per value)",
		"Compute interfaces per configured MTU. One bar means every node agrees; RoCE needs at least 4192 (9000 is usual).",
		"short", 6, 8,
		qi(`count_values("mtu", `+byDevice(sel("roce_interface_mtu_bytes"))+`)`, "MTU {{mtu}}")))
	b.add(b.bargauge("Active RoCE MTU (ports per value)",
		"RDMA ports per active path MTU (the largest IB MTU that fits the netdev MTU).",
		"short", 6, 8,
		qi(`count_values("active_mtu", `+sel("roce_port_active_mtu_bytes", dev)+`)`, "{{active_mtu}} bytes")))
	b.add(b.bargauge("Firmware versions (devices per value)",
		"RDMA devices per adapter type and firmware version. NICs of one model should run one version.",
		"short", 6, 8,
		qi(`count by (hca_type, firmware_version) (`+sel("roce_device_info", dev)+`)`, "{{hca_type}} {{firmware_version}}")))
	b.add(b.bargauge("DCB trust mode (ports per value)",
		"Compute interfaces per DCB trust mode (dscp is usual for RoCE v2).",
		"short", 6, 8,
		qi(`count by (trust) (`+byDevice(sel("roce_dcb_trust_info"))+`)`, "{{trust}}")))

	return d
}

// suspectsExpr lists the localisation's suspects (the recording rules the
// RoCEProbeSuspect* and RoCEProbeNodeNameConflict alerts fire on), each with
// a suspect label naming its kind and a why label saying what its value is.
// Switches, nodes and names carry no instance: they are the fleet's.
func suspectsExpr() string {
	kind := func(expr, suspect, why string) string {
		return `label_replace(label_replace(` + expr + `, "suspect", "` + suspect + `", "", ""), "why", "` + why + `", "", "")`
	}
	return strings.Join([]string{
		kind(`chassis_id:roce_probe_switch_suspect:failing_ratio`, "switch",
			"share of its rails tested across switches since the failures began that failed: 3 or more rails on 2 or more nodes, failing with rails under 2 or more other switches (each rail with 2 or more when those recorded nothing)"),
		kind(`node:roce_probe_suspect_node:max`, "node",
			"its rails failing with healthy peers (every rail), or the healthy peers failing with it while it passes nowhere"),
		kind(`(instance_rail:roce_probe_nic_suspect:healthy_peers{`+inst+`} unless on (probe, node) node:roce_probe_suspect_node:max)`, "NIC port",
			"healthy peers it failed with; it passed with none"),
		kind(`(time() - instance_peer_rail:roce_probe_path_suspect:timestamp{`+inst+`})`, "path",
			"seconds since it failed with this peer; both ends failed with no one else and passed with others since"),
		kind(`node:roce_probe_name_claims:count`, "node name claimed twice",
			"exporters that claim the name; the localisation leaves it alone"),
	}, "\nor\n")
}
