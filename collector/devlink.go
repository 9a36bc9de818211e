package collector

import (
	"log/slog"

	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/pipeline"
)

func init() { registerSource(node.SourceDevlink, newDevlinkCollector) }

var (
	devlinkHealthyDesc = newGaugeDesc(namespace+"_devlink_health_reporter_healthy",
		"1 if the devlink health reporter is healthy, 0 while it is in error (a fault the driver reported and has not recovered from). devlink is the reporter's devlink handle (pci/ADDR, pci/ADDR/PORT for port reporters), device the RDMA device on that PCI function (empty when none).",
		"device", "devlink", "reporter")
	// The error count is not exported: a fault the driver recovered from
	// counts a recovery, one it did not leaves the reporter in error, and a
	// third series per reporter (4 per port on mlx5) would say nothing more
	// to an alert; the doctor reads the count from the model.
	devlinkRecoveriesDesc = newCounterDesc(namespace+"_devlink_health_reporter_recoveries_total",
		"Successful recoveries of the devlink health reporter since the driver was loaded (a recovery resets a queue or the whole function).",
		"device", "devlink", "reporter")
	devlinkFirmwareDesc = newGaugeDesc(namespace+"_devlink_firmware_info",
		"Firmware of a NIC's PCI function from devlink dev info: component is the one that stands for the whole firmware (fw, mlx5's older fw.version, ice's fw.mgmt), running the version that runs, stored the one flashed, which runs after the next firmware reset (empty when the driver reports none or could not read it). stored != running: an update waits for activation.",
		"device", "devlink", "component", "running", "stored")
)

// devlinkCollector exports the devlink health reporters, two series per
// reporter and about five reporters per NIC, and one firmware series per
// devlink instance. It runs after the rdma source's
// read (one snapshot), so the RDMA device of each PCI function is known.
type devlinkCollector struct{}

func newDevlinkCollector(*Options, *slog.Logger) Collector { return devlinkCollector{} }

func (devlinkCollector) Update(col *pipeline.Collection, out *Sink) error {
	snap := col.Snapshot
	for _, r := range snap.HealthReporters {
		// The RDMA device on the reporter's PCI function joins the reporter
		// to the ports, alerts and dashboards that speak of devices.
		dev := ""
		if d := snap.DeviceOfPCI(r.PCIAddress); d != nil {
			dev = d.Name
		}
		out.emit(devlinkHealthyDesc, boolFloat(r.Healthy), dev, r.Handle, r.Name)
		out.emit(devlinkRecoveriesDesc, float64(r.Recoveries), dev, r.Handle, r.Name)
	}
	for _, i := range snap.DevlinkInfo {
		component, running := i.Firmware()
		if component == "" {
			continue
		}
		dev := ""
		if d := snap.DeviceOfPCI(i.PCIAddress); d != nil {
			dev = d.Name
		}
		stored, _ := i.StoredFirmware()
		out.emit(devlinkFirmwareDesc, 1, dev, i.Handle, component, running, stored)
	}
	return nil
}
