package collector

import (
	"log/slog"
	"maps"
	"slices"

	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/pipeline"
)

func init() { registerSource(node.SourceLLDP, newLLDPCollector) }

var lldpNeighborDesc = newGaugeDesc(namespace+"_lldp_neighbor_info",
	"The switch port an interface is cabled to, as its LLDP neighbour announces itself (from the local lldpd; kept while the interface's link is down); value is always 1. The labels identify the port and change only when the cable moves or the switch is renamed: chassis_id (the switch's chassis ID, usually its MAC), chassis_name (its system name, empty when not sent) and port_id (the port's ID). Free text a switch may edit at any time, such as the port description, is no label, so an edit does not start a new series; the doctor and `lldpcli show neighbors` show it.",
	"interface", "chassis_name", "chassis_id", "port_id")

// lldpCollector exports one info series per interface with a neighbour.
type lldpCollector struct{}

func newLLDPCollector(*Options, *slog.Logger) Collector { return lldpCollector{} }

func (lldpCollector) Update(col *pipeline.Collection, out *Sink) error {
	snap := col.Snapshot
	for _, iface := range slices.Sorted(maps.Keys(snap.LLDP)) {
		n := snap.LLDP[iface]
		out.emit(lldpNeighborDesc, 1, iface, n.ChassisName, n.ChassisID, n.PortID)
	}
	return nil
}
