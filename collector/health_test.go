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
	mustSeries(t, out, "roce_health_check_info", `check="port_active"`, `device="mlx5_1"`, `interface="ens2f0np0"`, `severity="critical"`)
	// A passing subject has no series by default; its check is counted.
	if s := series(out, "roce_health_check_ok", `check="rdma_nic_present"`); len(s) != 0 {
		t.Errorf("passing subject exported without --collector.health.ok-subjects: %q", s)
	}
	if s := series(out, "roce_health_check_ok", ` 1`); len(s) != 0 {
		t.Errorf("ok series by default: %q", s)
	}
	if v := value(t, mustSeries(t, out, "roce_health_check_subjects", `check="rdma_nic_present"`)); v != "1" {
		t.Errorf("rdma_nic_present judged %s subjects, want 1 (the node)", v)
	}
	if v := value(t, mustSeries(t, out, "roce_health_check_subjects", `check="port_active"`)); v != "8" {
		t.Errorf("port_active judged %s subjects, want 8", v)
	}

	// The node: neither device nor interface.
	cfg := replayConfig("mlx5-degraded", "rdma", "netdev", "ethtool", "dcb", "health")
	cfg.o.HealthOKSubjects = true
	e, _ = newTestExporter(t, cfg)
	out = scrape(t, e)
	if v := value(t, mustSeries(t, out, "roce_health_check_ok", `check="rdma_nic_present"`, `subject="node"`, `device=""`, `interface=""`)); v != "1" {
		t.Errorf("rdma_nic_present = %s", v)
	}
}

// The severity label is the check's: a failure of static configuration (a
// PCIe link trained narrow) is a ticket, a link down pages.
func TestHealthSeverityIsTheChecks(t *testing.T) {
	e, _ := newTestExporter(t, replayConfig("mlx5-degraded", "rdma", "netdev", "pcie", "ethtool", "dcb", "health"))
	out := scrape(t, e)
	mustSeries(t, out, "roce_health_check_info", `check="port_active"`, `subject="mlx5_1"`, `severity="critical"`)
	mustSeries(t, out, "roce_health_check_info", `check="pcie_link_not_degraded"`, `subject="mlx5_2"`, `severity="warning"`)
	if s := series(out, "roce_health_check_info", `check="pcie_link_not_degraded"`, `severity="critical"`); len(s) != 0 {
		t.Errorf("a static finding pages: %q", s)
	}
}
