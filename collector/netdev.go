package collector

import (
	"log/slog"
	"strconv"

	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/pipeline"
)

func init() { registerSource(node.SourceNetdev, newNetdevCollector) }

var (
	interfaceInfoDesc = newGaugeDesc(namespace+"_interface_info",
		"Network interface metadata; value is always 1. device/port name the RDMA port it backs.",
		"interface", "device", "port", "driver", "firmware_version", "bus_info")
	interfaceMTUDesc = newGaugeDesc(namespace+"_interface_mtu_bytes",
		"Interface MTU.", "interface")
	interfaceUpDesc = newGaugeDesc(namespace+"_interface_up",
		"1 if the interface operstate is up, else 0.", "interface")
	interfaceCarrierChangesDesc = newCounterDesc(namespace+"_interface_carrier_changes_total",
		"Times the link carrier went up or down (link flaps).", "interface")
	interfaceSpeedDesc = newGaugeDesc(namespace+"_interface_speed_bytes_per_second",
		"Link speed. Absent while the link is down.", "interface")
)

// netdevCollector exports the interfaces behind RDMA ports.
type netdevCollector struct{}

func newNetdevCollector(*Options, *slog.Logger) Collector { return netdevCollector{} }

func (netdevCollector) Update(col *pipeline.Collection, out *Sink) error {
	snap := col.Snapshot
	for _, name := range snap.InterfaceNames() {
		i := snap.Interfaces[name]
		port := ""
		if i.RDMADevice != "" {
			port = strconv.Itoa(i.Port)
		}
		out.emit(interfaceInfoDesc, 1, i.Name, i.RDMADevice, port, i.Driver, i.FirmwareVersion, i.BusInfo)
		if i.OperState != "" {
			out.emit(interfaceUpDesc, boolFloat(i.Up()), i.Name)
		}
		if i.MTU > 0 {
			out.emit(interfaceMTUDesc, float64(i.MTU), i.Name)
		}
		if i.CarrierChangesKnown {
			out.emit(interfaceCarrierChangesDesc, float64(i.CarrierChanges), i.Name)
		}
		if i.SpeedMbps > 0 {
			out.emit(interfaceSpeedDesc, float64(i.SpeedMbps)*125000, i.Name)
		}
	}
	return nil
}
