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
	"The switch port an interface is cabled to, as its LLDP neighbour announces itself (from the local lldpd; kept while the interface's link is down); value is always 1. chassis_name is the switch's system name, port_id its port ID, port_descr its port description (empty when not sent).",
	"interface", "chassis_name", "chassis_id", "port_id", "port_descr")

// lldpCollector exports one info series per interface with a neighbour.
type lldpCollector struct{}

func newLLDPCollector(*Options, *slog.Logger) Collector { return lldpCollector{} }

func (lldpCollector) Update(col *pipeline.Collection, out *Sink) error {
	snap := col.Snapshot
	for _, iface := range slices.Sorted(maps.Keys(snap.LLDP)) {
		n := snap.LLDP[iface]
		out.emit(lldpNeighborDesc, 1, iface, n.ChassisName, n.ChassisID, n.PortID, n.PortDescr)
	}
	return nil
}
