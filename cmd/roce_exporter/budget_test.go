package main

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
)

// The series budget (README.md, "Series per node"): what one node costs a
// fleet's Prometheus with default flags. A port's own series (those with a
// device or interface label: its counters, PHY, PCIe, GIDs, the priorities
// that matter, its failing checks) may be at most portSeriesBudget; the
// node's own (go_*, process_*, build and scrape metrics, one count per
// doctor check) at most nodeSeriesBudget. Before the budget an 8-port
// ConnectX-7 node exported 1,477 series, ~185 a port, most of them
// per-priority zeros and passing health checks. Today's ConnectX-7 port
// needs ~110 series for the per-port families alerts and dashboards read
// (counters, PHY, PCIe, netdev, GIDs, its priorities and failing checks)
// and ~28 for what issues 13, 15 and 17 added: the optic (info,
// temperature, voltage, Rx power per lane, the 4 limits the alerts use),
// FEC blocks, devlink health (2 per reporter), the LLDP neighbour, the
// DSCP, CNP and traffic-class settings; a GPU node adds its GPU↔NIC
// topology to the ports, and a degraded node its failing checks. Issue 23
// added 5 a port for the other end of its PCIe link (the root or switch
// port above the NIC: its speed and width capability, which the
// RoCEPCIeLinkDegraded alert needs, and its 3 AER totals), which took the
// degraded GPU node past 145 (147.2 with the devlink firmware and receive
// queue drop series of issue 25, 148.2 with issue 26's one DCQCN parameter
// set a port, roce_dcqcn_params_info); 150 leaves a little room; a change
// that needs more has to say so here. A GPU node's GPUs are node-level:
// ~70 series for 8 GPUs, hence 180 for the node. Issue 26's host
// collector (sysctls, routing, neighbours and memlock limits, judged by the
// doctor and exported only as failing checks) costs every node its 3 scrape
// series (success, duration, read errors), which took the degraded GPU
// node to 181, and its DCQCN check's count of subjects to 182. Issue 24
// judges the DSCP map, the CNP priority and the default traffic class
// without a plan too (against the defaults), which adds their 3 counts of
// subjects: 185 measured on dgx-h100-degraded, and 188 keeps the 3 series
// of room the node budget had.
const (
	portSeriesBudget = 150
	nodeSeriesBudget = 188
)

var portLabel = regexp.MustCompile(`\b(device|interface)="[^"]`)

// seriesCount splits an exposition's samples into the ports' and the
// node's, and counts the RDMA ports (roce_port_info).
func seriesCount(body string) (port, nodeLevel, ports int) {
	for _, line := range strings.Split(body, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		if strings.HasPrefix(line, "roce_port_info{") {
			ports++
		}
		if portLabel.MatchString(line) {
			port++
		} else {
			nodeLevel++
		}
	}
	return port, nodeLevel, ports
}

func TestSeriesBudget(t *testing.T) {
	for _, scenario := range sysfixture.ScenarioNames() {
		t.Run(scenario, func(t *testing.T) {
			p := startExporter(t, scenarioArgs(scenario)...)
			code, body := p.get(t, "/metrics")
			if code != http.StatusOK {
				t.Fatalf("/metrics: HTTP %d", code)
			}
			if !strings.Contains(body, "\nprocess_open_fds ") || !strings.Contains(body, "\ngo_goroutines ") {
				t.Fatal("the budget counts the exporter's own metrics as installed: go_* and process_* missing")
			}
			port, nodeLevel, ports := seriesCount(body)
			perPort := float64(port) / float64(max(ports, 1))
			t.Logf("%s: %d series = %d node + %d port (%d ports, %.1f per port, %.1f per port all in)",
				scenario, port+nodeLevel, nodeLevel, port, ports, perPort, float64(port+nodeLevel)/float64(max(ports, 1)))
			if perPort > portSeriesBudget {
				t.Errorf("%.1f series per port, budget %d: a new per-port family needs a flag, or a reason to raise the budget", perPort, portSeriesBudget)
			}
			if nodeLevel > nodeSeriesBudget {
				t.Errorf("%d node-level series, budget %d", nodeLevel, nodeSeriesBudget)
			}
		})
	}
}

// The budget must be able to fail: the same fixture with the optional
// detail back (all priorities, every passing check, the InfiniBand
// counters of RoCE ports, every optic lane and limit) is over it.
func TestSeriesBudgetCountsOptionalFamilies(t *testing.T) {
	p := startExporter(t, append(scenarioArgs("mlx5-8x400g-healthy"), "--collector.priority.all", "--collector.health.ok-subjects",
		"--collector.rdma.ib-counters-on-ethernet", "--collector.transceiver.lane-monitors")...)
	_, body := p.get(t, "/metrics")
	port, nodeLevel, ports := seriesCount(body)
	t.Logf("optional families on: %d series = %d node + %d port (%d ports)", port+nodeLevel, nodeLevel, port, ports)
	if ports != 8 || port/ports <= portSeriesBudget {
		t.Errorf("with every priority and check: %d port series on %d ports, want over the budget of %d a port", port, ports, portSeriesBudget)
	}
}
