package collector

import (
	"log/slog"
	"strings"

	"github.com/roce-exporter/roce_exporter/health"
	"github.com/roce-exporter/roce_exporter/pipeline"
)

const healthCollectorName = "health"

func init() {
	registerDerived(healthCollectorName, "Doctor checks evaluated at scrape time on the same snapshot the other collectors read (no second read of sysfs).", newHealthCollector)
}

var (
	healthOKDesc = newGaugeDesc(namespace+"_health_check_ok",
		"0 if the doctor check warned or failed for the subject; 1 if it passed, exported only with --collector.health.ok-subjects (roce_health_check_subjects counts the subjects judged); skipped checks are absent. device and interface name the port the subject is (empty for the node), so alerts and inhibition can tell ports apart.",
		"check", "subject", "device", "interface")
	healthSubjectsDesc = newGaugeDesc(namespace+"_health_check_subjects",
		"Subjects the doctor check judged (ok, warn or fail; skipped ones are not counted); a check that judged none is absent. Those that did not pass have roce_health_check_ok 0, so the passing ones are this minus count(roce_health_check_ok == 0).",
		"check")
	healthInfoDesc = newGaugeDesc(namespace+"_health_check_info",
		"A doctor check that is not ok, with its severity (critical: a failure that hurts a running job now; warning: a warning, or a failure of static configuration that needs a ticket) and the fix; value is always 1.",
		"check", "subject", "device", "interface", "severity", "hint")
)

// healthCollector exports the doctor's findings on the collection's
// snapshot, judged against the plan once per collection by the pipeline.
//
// A passing subject has no roce_health_check_ok series by default: on a
// healthy 8-port node those were ~130 series of 1 that no alert or panel
// reads (they all select == 0). Each check that judged something gets one
// count of its subjects instead, so "did it run, on how many, how many
// failed" stays answerable with one series per check.
type healthCollector struct {
	opts *Options
}

func newHealthCollector(o *Options, _ *slog.Logger) Collector { return &healthCollector{opts: o} }

// checkCount is the number of subjects one check judged.
type checkCount struct {
	id       string
	subjects int
}

func (c *healthCollector) Update(col *pipeline.Collection, out *Sink) error {
	if col.HealthErr != nil {
		return col.HealthErr
	}
	ports := health.SubjectPorts(col.Snapshot)
	findings := col.Findings
	var counts []checkCount
	index := map[string]int{}
	for _, f := range findings {
		p := ports[f.Subject]
		if f.Status != health.StatusSkipped {
			i, ok := index[f.ID]
			if !ok {
				i = len(counts)
				index[f.ID] = i
				counts = append(counts, checkCount{id: f.ID})
			}
			counts[i].subjects++
		}
		switch f.Status {
		case health.StatusOK:
			if c.opts.HealthOKSubjects {
				out.emit(healthOKDesc, 1, f.ID, f.Subject, p.Device, p.Interface)
			}
		case health.StatusWarn, health.StatusFail:
			out.emit(healthOKDesc, 0, f.ID, f.Subject, p.Device, p.Interface)
			out.emit(healthInfoDesc, 1, f.ID, f.Subject, p.Device, p.Interface, string(f.Severity), hintLabel(f.Fix))
		}
	}
	for _, cc := range counts {
		out.emit(healthSubjectsDesc, float64(cc.subjects), cc.id)
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
