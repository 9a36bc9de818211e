package collector

// HealthConfig carries what the health checks need besides the snapshot.
type HealthConfig struct {
	NodeName string
}
