package collector

import (
	"log/slog"

	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/pipeline"
)

func init() { registerSource(node.SourceHost, newHostCollector) }

// hostCollector is the host source's collector, and exports no family of
// its own: what it reads (ARP and rp_filter sysctls, policy rules, routes,
// neighbour entries, memlock limits) is configuration, judged by the
// doctor's checks, whose failures reach /metrics as roce_health_check_*
// through the health collector. A series per sysctl, rule or neighbour
// would cost every node of a fleet for values no alert reads.
type hostCollector struct{}

func newHostCollector(*Options, *slog.Logger) Collector { return hostCollector{} }

func (hostCollector) Update(*pipeline.Collection, *Sink) error { return nil }
