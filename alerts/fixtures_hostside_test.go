package alerts

import "testing"

// The alerts on issue 26's captured nodes, as TestRulesOnFixtures runs the
// others: each fault the node was built with raises its doctor finding
// through RoCEHealthCheckFailed, and nothing else fires. A single node with
// another NIC model on a rail raises nothing by itself: the fleet rule
// needs the other nodes, and the doctor's comparison of its own rails needs
// the plan.
func TestRulesOnHostSideFixtures(t *testing.T) {
	cases := map[string][]string{
		"mlx5-rails-one-subnet-default-sysctls": {
			`{alertname="RoCEHealthCheckFailed",check="arp_flux_sysctls"}`,
			`{alertname="RoCEHealthCheckFailed",check="per_rail_source_routing"}`,
		},
		"mlx5-memlock-default-8mib": {
			`{alertname="RoCEHealthCheckFailed",check="memlock_for_rdma"}`,
		},
		"mlx5-pfc-buffers-misconfigured": {
			`{alertname="RoCEHealthCheckFailed",check="pfc_buffer_no_lossy_priority"}`, // mlx5_2
			`{alertname="RoCEHealthCheckFailed",check="pfc_headroom_sufficient"}`,      // mlx5_5
			`{alertname="RoCEHealthCheckFailed",check="ets_share_for_roce"}`,           // mlx5_7
		},
		"mlx5-switch-port-mtu-1500": {
			`{alertname="RoCEHealthCheckFailed",check="switch_port_mtu"}`,   // ens5f0np0
			`{alertname="RoCEHealthCheckFailed",check="switch_port_speed"}`, // ens7f0np0
		},
		"mlx5-cx6dx-on-rail-3": nil,
	}
	for fixture, want := range cases {
		t.Run(fixture, func(t *testing.T) {
			firingAlertsTest(t, fixture, fixtureSamples(t, fixture), "alertname, check", want)
		})
	}
}
