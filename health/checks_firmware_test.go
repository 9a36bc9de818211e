package health

import (
	"testing"

	"github.com/roce-exporter/roce_exporter/node"
)

// devlinkInfo gives device i's PCI function a `devlink dev info` with the
// running and stored versions of mlx5's generic "fw".
func devlinkInfo(i int, running, stored string) func(*node.Snapshot) {
	return func(s *node.Snapshot) {
		d := s.Devices[i]
		s.DevlinkInfo = append(s.DevlinkInfo, &node.DevlinkInfo{Handle: "pci/" + d.PCIAddress, PCIAddress: d.PCIAddress, Driver: "mlx5_core",
			Fixed:   map[string]string{"fw.psid": d.BoardID},
			Running: map[string]string{"fw.version": running, "fw": running},
			Stored:  map[string]string{"fw.version": stored, "fw": stored}})
	}
}

func both(fs ...func(*node.Snapshot)) func(*node.Snapshot) {
	return func(s *node.Snapshot) {
		for _, f := range fs {
			f(s)
		}
	}
}

func TestFirmwareWithDevlinkInfo(t *testing.T) {
	runCases(t, []checkCase{
		{name: "stored is running", snap: devlinkInfo(1, "28.39.1002", "28.39.1002"),
			id: "firmware_consistent", subject: "mlx5_1", want: StatusOK, msg: []string{"28.39.1002"}, notMsg: []string{"flashed"}},
		{name: "an update waits for a reset", snap: devlinkInfo(1, "28.39.1002", "28.43.1014"),
			id: "firmware_consistent", subject: "mlx5_1", want: StatusWarn,
			msg: []string{"28.43.1014 is flashed but 28.39.1002 still runs"}, fix: []string{"mlxfwreset -d", "fw_activate", "28.43.1014", "after draining the node"}},
		{name: "the waiting update is the siblings' version", snap: both(
			func(s *node.Snapshot) { s.Devices[2].FirmwareVersion = "28.37.1014" },
			devlinkInfo(2, "28.37.1014", "28.39.1002")),
			id: "firmware_consistent", subject: "mlx5_2", want: StatusWarn,
			msg: []string{"differs from", "28.39.1002 is flashed but 28.37.1014 still runs"}, fix: []string{"run the flashed 28.39.1002", "fw_activate"}},
		{name: "odd one out with another image waiting", snap: both(
			func(s *node.Snapshot) { s.Devices[2].FirmwareVersion = "28.37.1014" },
			devlinkInfo(2, "28.37.1014", "28.38.1000")),
			id: "firmware_consistent", subject: "mlx5_2", want: StatusWarn,
			msg: []string{"differs from", "28.38.1000 is flashed"}, fix: []string{"flint", "28.39.1002", "drain the node"}},
		{name: "stored unreadable (255.255.65535)", snap: devlinkInfo(1, "28.39.1002", "255.255.65535"),
			id: "firmware_consistent", subject: "mlx5_1", want: StatusOK, notMsg: []string{"flashed"}},
		{name: "no fw_ver: devlink's running version stands in", snap: both(
			func(s *node.Snapshot) { s.Devices[2].FirmwareVersion = "" },
			devlinkInfo(2, "28.37.1014", "28.37.1014")),
			id: "firmware_consistent", subject: "mlx5_2", want: StatusWarn, msg: []string{"firmware 28.37.1014 differs"}},
		{name: "neither fw_ver nor devlink", snap: func(s *node.Snapshot) { s.Devices[2].FirmwareVersion = "" },
			id: "firmware_consistent", subject: "mlx5_2", want: StatusSkipped, msg: []string{"no devlink dev info"}},
	})
}
