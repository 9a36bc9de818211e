package collector

import (
	"log/slog"

	"github.com/roce-exporter/roce_exporter/node"
)

func init() { registerSource(node.SourceDevlink, newDevlinkCollector) }

var (
	devlinkHealthyDesc = newGaugeDesc(namespace+"_devlink_health_reporter_healthy",
		"1 if the devlink health reporter is healthy, 0 while it is in error (a fault the driver reported and has not recovered from). device is the devlink handle (pci/ADDR, pci/ADDR/PORT for port reporters).",
		"device", "reporter")
	devlinkErrorsDesc = newCounterDesc(namespace+"_devlink_health_reporter_errors_total",
		"Faults the devlink health reporter reported since the driver was loaded (mlx5: firmware syndromes, TX timeouts and error CQEs, RX queue errors).",
		"device", "reporter")
	devlinkRecoveriesDesc = newCounterDesc(namespace+"_devlink_health_reporter_recoveries_total",
		"Successful recoveries of the devlink health reporter since the driver was loaded (a recovery resets a queue or the whole function).",
		"device", "reporter")
)

// devlinkCollector exports the devlink health reporters: three series per
// reporter, about five reporters per NIC.
type devlinkCollector struct{}

func newDevlinkCollector(*Options, *slog.Logger) Collector { return devlinkCollector{} }

func (devlinkCollector) Update(snap *node.Snapshot, out *Sink) error {
	for _, r := range snap.HealthReporters {
		out.emit(devlinkHealthyDesc, boolFloat(r.Healthy), r.Handle, r.Name)
		out.emit(devlinkErrorsDesc, float64(r.Errors), r.Handle, r.Name)
		out.emit(devlinkRecoveriesDesc, float64(r.Recoveries), r.Handle, r.Name)
	}
	return nil
}
