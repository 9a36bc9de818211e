package collector

import (
	"errors"
	"log/slog"
	"strings"

	"github.com/roce-exporter/roce_exporter/config"
)

func init() {
	registerCollector("health", "Doctor checks evaluated at scrape time on the same snapshot the other collectors read (no second read of sysfs).",
		true, phaseDerived, newHealthCollector)
}

// HealthConfig carries what the health checks need besides the snapshot.
type HealthConfig struct {
	NodeName string
	// Plan is the cluster plan; nil runs only the checks that need none.
	Plan *config.Plan
	// Evaluate runs the checks. It is injected by the caller because the
	// health package depends on this package's snapshot types.
	Evaluate func(snap *Snapshot, plan *config.Plan, node string) []HealthFinding
}

// HealthFinding is one check result as the exporter needs it.
type HealthFinding struct {
	Check, Subject string
	// Status is "ok", "warn", "fail" or "skipped".
	Status string
	Hint   string
}

var (
	healthOKDesc = newGaugeDesc(namespace+"_health_check_ok",
		"1 if the doctor check passed for the subject, 0 if it warned or failed; skipped checks are absent.",
		"check", "subject")
	healthInfoDesc = newGaugeDesc(namespace+"_health_check_info",
		"A doctor check that is not ok, with its severity (critical = fail, warning = warn) and the fix; value is always 1.",
		"check", "subject", "severity", "hint")
)

type healthCollector struct{ cfg *Config }

func newHealthCollector(cfg *Config, _ *slog.Logger) (Collector, error) {
	return &healthCollector{cfg: cfg}, nil
}

func (c *healthCollector) Update(s *Scrape, out *Sink) error {
	if c.cfg.Health.Evaluate == nil {
		return errors.Join(ErrNoData, errors.New("no health evaluator configured"))
	}
	snap := s.Snapshot()
	for _, f := range c.cfg.Health.Evaluate(snap, c.cfg.Health.Plan, c.cfg.Health.NodeName) {
		switch f.Status {
		case "ok":
			out.emit(healthOKDesc, 1, f.Check, f.Subject)
		case "warn", "fail":
			out.emit(healthOKDesc, 0, f.Check, f.Subject)
			severity := "warning"
			if f.Status == "fail" {
				severity = "critical"
			}
			out.emit(healthInfoDesc, 1, f.Check, f.Subject, severity, hintLabel(f.Hint))
		}
	}
	return nil
}

// hintLabel keeps a fix text usable as a label: one line, bounded. Fix
// texts lead with the main command, so a long one is cut at a clause.
func hintLabel(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		cut := strings.LastIndex(s[:300], "; ")
		if cut < 80 {
			cut = 300
		}
		s = s[:cut] + " …"
	}
	return strings.ToValidUTF8(s, "")
}
