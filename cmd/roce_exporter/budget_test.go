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
// needs ~98 series for the per-port families alerts and dashboards read
// plus ~12 for its priorities and checks; 120 leaves room for one or two
// new families, and a change that needs more has to say so here.
const (
	portSeriesBudget = 120
	nodeSeriesBudget = 100
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
// detail back (all priorities, every passing check) is over it.
func TestSeriesBudgetCountsOptionalFamilies(t *testing.T) {
	p := startExporter(t, append(scenarioArgs("mlx5-8x400g-healthy"), "--collector.priority.all", "--collector.health.ok-subjects")...)
	_, body := p.get(t, "/metrics")
	port, nodeLevel, ports := seriesCount(body)
	t.Logf("optional families on: %d series = %d node + %d port (%d ports)", port+nodeLevel, nodeLevel, port, ports)
	if ports != 8 || port/ports <= portSeriesBudget {
		t.Errorf("with every priority and check: %d port series on %d ports, want over the budget of %d a port", port, ports, portSeriesBudget)
	}
}
