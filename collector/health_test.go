package collector

import "testing"

// Health findings carry the port they are about, so that alerts and
// Alertmanager's inhibition can tell one port from another: a critical on
// port A must not mute a warning on port B.
func TestHealthFindingsNameTheirPort(t *testing.T) {
	e, _ := newTestExporter(t, replayConfig("mlx5-degraded", "rdma", "netdev", "ethtool", "dcb", "health"))
	out := scrape(t, e)
	// An interface subject: its device is filled in.
	mustSeries(t, out, "roce_health_check_ok", `check="mtu_consistent"`, `subject="ens4f0np0"`, `device="mlx5_3"`, `interface="ens4f0np0"`)
	// A device subject: its netdev is filled in.
	mustSeries(t, out, "roce_health_check_ok", `check="port_active"`, `subject="mlx5_1"`, `device="mlx5_1"`, `interface="ens2f0np0"`)
	// The node: neither.
	mustSeries(t, out, "roce_health_check_ok", `check="rdma_nic_present"`, `subject="node"`, `device=""`, `interface=""`)
	mustSeries(t, out, "roce_health_check_info", `check="port_active"`, `device="mlx5_1"`, `interface="ens2f0np0"`, `severity="critical"`)
}
