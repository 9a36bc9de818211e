package collector

import (
	"log/slog"
	"strings"

	"github.com/roce-exporter/roce_exporter/health"
	"github.com/roce-exporter/roce_exporter/node"
)

func init() {
	registerDerived("health", "Doctor checks evaluated at scrape time on the same snapshot the other collectors read (no second read of sysfs).", newHealthCollector)
}

var (
	healthOKDesc = newGaugeDesc(namespace+"_health_check_ok",
		"1 if the doctor check passed for the subject, 0 if it warned or failed; skipped checks are absent.",
		"check", "subject")
	healthInfoDesc = newGaugeDesc(namespace+"_health_check_info",
		"A doctor check that is not ok, with its severity (critical = fail, warning = warn) and the fix; value is always 1.",
		"check", "subject", "severity", "hint")
)

// healthCollector exports the doctor's findings on the collection's
// snapshot, judged against the plan.
type healthCollector struct{ opts *Options }

func newHealthCollector(o *Options, _ *slog.Logger) Collector { return &healthCollector{opts: o} }

func (c *healthCollector) Update(snap *node.Snapshot, out *Sink) error {
	for _, f := range health.Run(snap, c.opts.Plan, c.opts.NodeName) {
		switch f.Status {
		case health.StatusOK:
			out.emit(healthOKDesc, 1, f.ID, f.Subject)
		case health.StatusWarn, health.StatusFail:
			out.emit(healthOKDesc, 0, f.ID, f.Subject)
			severity := "warning"
			if f.Status == health.StatusFail {
				severity = "critical"
			}
			out.emit(healthInfoDesc, 1, f.ID, f.Subject, severity, hintLabel(f.Fix))
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
