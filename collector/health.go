package collector

import "github.com/roce-exporter/roce_exporter/config"

// HealthConfig carries what the health checks need besides the snapshot.
type HealthConfig struct {
	NodeName string
	// Plan is the cluster plan; nil runs only the checks that need none.
	Plan *config.Plan
}
