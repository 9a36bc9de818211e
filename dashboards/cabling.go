package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// neighborOf joins the switch and switch port (chassis_name, chassis_id,
// port_id) onto an expression with {instance, interface} labels, keeping
// the ports without a known neighbour (no lldpd, or a link down long
// enough for lldpd to age its neighbour out) with empty switch labels.
func neighborOf(expr string) string {
	return `(` + expr + ` * on(instance, interface) group_left(chassis_name, chassis_id, port_id) ` +
		`group by (instance, interface, chassis_name, chassis_id, port_id) (` + sel("roce_lldp_neighbor_info") + `)) or ` + expr
}

// faultyPorts are the interfaces with a physical-layer fault: port down
// now, or a link-down event or uncorrected PHY errors in the interval.
func faultyPorts() string {
	down := `group by (instance, interface) ((` + sel("roce_port_up", dev) + ` == 0) * on(instance, device, port) group_left(interface) ` +
		`group by (instance, device, port, interface) (` + sel("roce_port_info", dev, `interface!=""`) + `))`
	flap := `group by (instance, interface) (` + increase("roce_phy_link_down_events_total") + ` > 0)`
	phy := `group by (instance, interface) (` + increase("roce_phy_uncorrected_symbol_errors_total") + ` > 0)`
	return `(` + down + ` or ` + flap + ` or ` + phy + `)`
}

// cablingRowNode adds the node dashboard's cabling and NIC health row: each
// port's switch port (LLDP) and the devlink health reporters.
func cablingRowNode(b *board) {
	b.row("Cabling and NIC health")
	b.add(b.table("Port → switch port", "The switch and switch port each interface is cabled to, as the switch announces itself over LLDP "+
		"(read from the node's lldpd; empty when lldpd does not run or the switch sends no LLDP).",
		"short", 12, 8, []string{"instance", "device", "interface", "chassis_name", "port_id", "chassis_id", "Value"},
		qt(byDevice(sel("roce_lldp_neighbor_info")))).
		OverrideByName("Value", []dashboard.DynamicConfigValue{{Id: "custom.hidden", Value: true}}))
	b.add(b.states("NIC health reporters", "devlink health reporters (mlx5: fw, fw_fatal, tx, rx): red while a reporter is in error, "+
		"a fault the driver has not recovered from.", 12, 4,
		valueText("0", "error", "red", "1", "healthy", "green"),
		thresholds("red", 1.0, "green"),
		q(sel("roce_devlink_health_reporter_healthy", devOrNode), "{{instance}} {{device}} {{devlink}} {{reporter}}")))
	b.add(b.bars("NIC health recoveries", "Recoveries per interval of each devlink health reporter: each one reset a queue (tx, rx) "+
		"or the function (fw_fatal) under traffic.", "short", 12, 4,
		q(increase("roce_devlink_health_reporter_recoveries_total", devOrNode), "{{instance}} {{device}} {{devlink}} {{reporter}}")))
}

// cablingRowOverview adds the overview's failures-by-switch row: three bad
// ports on one leaf read as one leaf problem.
func cablingRowOverview(b *board) {
	b.row("Failures by switch")
	b.add(b.bargauge("Faulty ports per switch",
		"Ports down now, or with a link-down event or uncorrected PHY errors in the interval, counted per switch they are cabled to (LLDP; "+
			"empty: no neighbour known, e.g. a link down for longer than the LLDP TTL). "+
			"Several on one switch point at the switch (a line card, a reload, its optics batch) rather than at the nodes.",
		"short", 8, 8,
		qi(`sort_desc(count by (chassis_name) (`+neighborOf(faultyPorts())+`))`, "{{chassis_name}}")))
	b.add(b.table("Faulty ports and their switch ports",
		"The faulty ports with the switch and port they are cabled to (empty when lldpd knows no neighbour; the RoCELinkDown alert names "+
			"the last one seen in a day).",
		"short", 16, 8, []string{"chassis_name", "port_id", "instance", "interface", "chassis_id", "Value"},
		qt(neighborOf(faultyPorts()))).
		OverrideByName("Value", []dashboard.DynamicConfigValue{{Id: "custom.hidden", Value: true}}))
}
