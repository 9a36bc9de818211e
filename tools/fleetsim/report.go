package fleetsim

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// Row is the trials of one class at one fleet size.
type Row struct {
	Class    *Class
	Nodes    int
	Rails    int
	Deadline time.Duration
	Outcomes []Outcome
}

// Quantile is the q-quantile (nearest rank) of the time to name over every
// trial, a missed one counting as never; ok is false when it is a miss.
func (r Row) Quantile(q float64) (time.Duration, bool) {
	if len(r.Outcomes) == 0 {
		return 0, false
	}
	ts := make([]time.Duration, len(r.Outcomes))
	for i, o := range r.Outcomes {
		ts[i] = o.Named
		if o.Named < 0 {
			ts[i] = math.MaxInt64
		}
	}
	slices.Sort(ts)
	t := ts[max(int(math.Ceil(q*float64(len(ts))))-1, 0)]
	return t, t != math.MaxInt64
}

// Missed counts the trials whose fault was not named by the deadline.
func (r Row) Missed() int {
	if r.Class.Expect == "none" {
		return 0
	}
	n := 0
	for _, o := range r.Outcomes {
		if o.Named < 0 {
			n++
		}
	}
	return n
}

// Wrong counts the trials with a wrong suspect and lists the distinct
// wrong alerts (by alert name and how often).
func (r Row) Wrong() (trials int, alerts map[string]int) {
	alerts = map[string]int{}
	for _, o := range r.Outcomes {
		if len(o.Wrong) > 0 {
			trials++
		}
		for _, w := range o.Wrong {
			alerts[w[:strings.IndexByte(w, '{')]]++
		}
	}
	return trials, alerts
}

// PeakShare is the largest share of the fleet under test in any trial.
func (r Row) PeakShare() float64 {
	p := 0.0
	for _, o := range r.Outcomes {
		p = max(p, o.PeakShare)
	}
	return p
}

// Header is the table's head, in Markdown.
const Header = "| nodes × rails | layout | fault | trials | named, median | named, p95 | missed | wrong suspects | peak share under test | alert that names it |\n" +
	"|---|---|---|---|---|---|---|---|---|---|"

// Line is the row in Markdown.
func (r Row) Line() string {
	named := func(q float64) string {
		if r.Class.Expect == "none" {
			return "–"
		}
		if t, ok := r.Quantile(q); ok {
			return t.Round(time.Second).String()
		}
		return "> " + r.Deadline.String()
	}
	wrong := "0"
	if trials, alerts := r.Wrong(); trials > 0 {
		var parts []string
		for _, a := range slices.Sorted(maps.Keys(alerts)) {
			parts = append(parts, fmt.Sprintf("%d %s", alerts[a], a))
		}
		wrong = fmt.Sprintf("**%d trials**: %s", trials, strings.Join(parts, ", "))
	}
	missed := "–"
	if r.Class.Expect != "none" {
		missed = fmt.Sprint(r.Missed())
	}
	return fmt.Sprintf("| %d × %d | %s | %s | %d | %s | %s | %s | %s | %.1f%% | %s |",
		r.Nodes, r.Rails, r.Class.Layout, r.Class.Name, len(r.Outcomes), named(0.5), named(0.95), missed, wrong, 100*r.PeakShare(), r.Class.Expect)
}
