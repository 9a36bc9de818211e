package health

import (
	"testing"

	"github.com/roce-exporter/roce_exporter/node"
)

// reporter returns device i's reporter by name in s.
func reporter(s *node.Snapshot, i int, name string) *node.HealthReporter {
	for _, hr := range s.HealthReporters {
		if hr.PCIAddress == pciAddr(i) && hr.Name == name {
			return hr
		}
	}
	panic("no reporter " + name)
}

func TestDevlinkHealthCheck(t *testing.T) {
	const id = "devlink_health_ok"
	runCases(t, []checkCase{
		{name: "all healthy", id: id, subject: "mlx5_1", want: StatusOK, msg: []string{"2 devlink health reporter(s) healthy", "fw_fatal, tx"}},
		{name: "healthy in both samples", prev: func(prev, cur *node.Snapshot) {}, id: id, subject: "mlx5_1", want: StatusOK, msg: []string{"in either sample"}},
		{name: "tx in error", snap: func(s *node.Snapshot) {
			tx := reporter(s, 1, "tx")
			tx.Healthy, tx.Errors, tx.Recoveries = false, 12, 11
		}, id: id, subject: "mlx5_1", want: StatusFail,
			msg: []string{"tx (pci/0000:28:00.0/65535) is in error", "12 error(s), 11 recovery(ies)", "not recovered"},
			fix: []string{"devlink health diagnose pci/0000:28:00.0/65535 reporter tx", "no_pfc_storm", "devlink health recover"}},
		{name: "other device unaffected by tx in error", snap: func(s *node.Snapshot) {
			reporter(s, 1, "tx").Healthy = false
		}, id: id, subject: "mlx5_0", want: StatusOK},
		{name: "fw_fatal in error", snap: func(s *node.Snapshot) {
			fw := reporter(s, 2, "fw_fatal")
			fw.Healthy, fw.Errors = false, 1
		}, id: id, subject: "mlx5_2", want: StatusFail, msg: []string{"fw_fatal (pci/0000:38:00.0) is in error"}, fix: []string{"firmware", "devlink health dump show pci/0000:38:00.0 reporter fw_fatal"}},
		{name: "recoveries happening now", prev: func(prev, cur *node.Snapshot) {
			reporter(prev, 0, "tx").Errors, reporter(prev, 0, "tx").Recoveries = 2, 2
			reporter(cur, 0, "tx").Errors, reporter(cur, 0, "tx").Recoveries = 5, 5
		}, id: id, subject: "mlx5_0", want: StatusWarn, msg: []string{"3 new error(s) in the last 10s", "recovered", "5 error(s), 5 recovery(ies)"}},
		{name: "recovered errors since boot only", prev: func(prev, cur *node.Snapshot) {
			reporter(prev, 0, "tx").Errors, reporter(prev, 0, "tx").Recoveries = 3, 3
			reporter(cur, 0, "tx").Errors, reporter(cur, 0, "tx").Recoveries = 3, 3
		}, id: id, subject: "mlx5_0", want: StatusWarn, msg: []string{"3 error(s), 3 recovery(ies) since the driver loaded", "none new in the last 10s"}},
		{name: "one sample with history", snap: func(s *node.Snapshot) {
			reporter(s, 0, "tx").Errors, reporter(s, 0, "tx").Recoveries = 3, 3
		}, id: id, subject: "mlx5_0", want: StatusWarn, msg: []string{"a second sample tells"}},
		{name: "source absent", snap: func(s *node.Snapshot) {
			s.Sources[node.SourceDevlink], s.HealthReporters = node.SourceAbsent, nil
		}, id: id, subject: "mlx5_0", want: StatusSkipped, msg: []string{"devlink health reporters not collected"}},
		{name: "collector disabled", snap: func(s *node.Snapshot) {
			delete(s.Sources, node.SourceDevlink)
			s.HealthReporters = nil
		}, id: id, subject: "mlx5_0", want: StatusSkipped, msg: []string{"--collector.devlink"}},
		{name: "driver without reporters", snap: func(s *node.Snapshot) {
			s.HealthReporters = s.HealthReporters[2:] // mlx5_0's two are gone
		}, id: id, subject: "mlx5_0", want: StatusSkipped, msg: []string{"no devlink health reporter on pci/0000:18:00.0"}},
	})
}
