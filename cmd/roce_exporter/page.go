package main

import (
	"bytes"
	"cmp"
	_ "embed"
	"fmt"
	"html"
	"html/template"
	"maps"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/version"

	"github.com/roce-exporter/roce_exporter/collector"
	"github.com/roce-exporter/roce_exporter/health"
	"github.com/roce-exporter/roce_exporter/i18n"
	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/probes"
)

// The node page is the exporter's landing page: the node's health at a
// glance for someone who opens http://node:14791/ or `w3m` on the node
// itself. One HTML document, no script, semantic markup (tables with
// headers, status words as text, not only colour) so that a terminal
// browser shows the same as Chromium. html/template escapes every value:
// probe stderr, interface names and fix texts are data, not markup.

//go:embed page.html
var pageHTML string

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{"ticks": ticks}).Parse(pageHTML))

// ticks shows the `command` spans of a fix text as code, escaping
// everything: the fix texts quote their commands in backticks.
func ticks(s string) template.HTML {
	parts := strings.Split(s, "`")
	if len(parts)%2 == 0 { // unbalanced: show the text as it is
		return template.HTML(html.EscapeString(s))
	}
	var b strings.Builder
	for i, p := range parts {
		if i%2 == 1 {
			b.WriteString("<code>" + html.EscapeString(p) + "</code>")
		} else {
			b.WriteString(html.EscapeString(p))
		}
	}
	return template.HTML(b.String())
}

// pageConfig is what the page shows beside the exporter's own status.
type pageConfig struct {
	NodeName string
	// Sample names the sample node read instead of this machine (a
	// scenario, a copied sysfs tree); "" on a live node.
	Sample      string
	SysPath     string
	PlanFile    string
	MetricsPath string
	Started     time.Time
	// Switches is the node's switch view for the probe judgement (its rails'
	// LLDP switches, the fleet's switch suspects when a Prometheus is given);
	// nil: none.
	Switches func() probes.SwitchView
	// Printer is the page's language (--lang or the exporter's locale);
	// nil is English. A request's ?lang=zh-CN or ?lang=en overrides it.
	Printer *i18n.Printer
}

// pageFinding is one row of the doctor's table; OK and skipped findings
// are folded per check as the doctor prints them.
type pageFinding struct {
	Status         string // FAIL, WARN, ok, skipped
	Check, Subject string
	Message, Fix   string
	Class          string
}

type pageCollector struct {
	Name, State, Reads    string
	LastSuccess, Duration string
	Err                   string
	Class                 string
}

type pageJudgement struct {
	Probe, Device, FailedWith string
	// Switch is the rail's LLDP switch, "" when unknown.
	Switch            string
	Rail, PeersFailed int
	PeersPassed       int
	Class             string
}

type pageProbe struct {
	Start, Probe, Peer, Device, Result, Bandwidth, Diagnosis, Stderr string
	Failed                                                           bool
	Class                                                            string
}

// pageIncast is one device's last incast: what the switch did, as far as
// this side of it could tell.
type pageIncast struct {
	Start, Device, Role, Peer, Result, Said, Counters, Unseen string
	Class                                                     string
}

type pageData struct {
	pageConfig
	// Lang is the HTML lang attribute of the page's language.
	Lang                  string
	Now                   string
	Collected             string
	Title                 string
	SampleNotice          string
	Verdict, VerdictClass string
	// VerdictDetail says, under the verdict, why nothing could be checked.
	VerdictDetail           string
	Fail, Warn, OK, Skipped int
	Problems, Passed, Skips []pageFinding
	HealthEnabled           bool
	Collectors              []pageCollector
	ProbesEnabled           bool
	Probes                  []pageProbe
	// StateDir and StateDirErr: the probe state directory when its
	// baselines cannot be persisted, and why.
	StateDir, StateDirErr string
	// Judgement is the local view of the pair probes per rail (fresh
	// results only) and LocalVerdicts what it points at per probe kind.
	Judgement     []pageJudgement
	LocalVerdicts []string
	// SwitchVerdicts say whether the failing rails are a switch's victims.
	SwitchVerdicts []string
	// Incasts are the last incast of each device: the switch's PFC and ECN
	// as this node proved them.
	Incasts              []pageIncast
	ProbeFailures        int
	Version, Revision    string
	Branch, BuildUser    string
	BuildDate, GoVersion string
	Platform, Uptime     string
	StartedAt            string
}

// renderPage writes the page for st (the exporter's latest collection) and
// the probe store (nil when probes are off) at now.
func renderPage(cfg pageConfig, st collector.Status, enabled []string, store *probes.Store, now time.Time) ([]byte, error) {
	if cfg.Printer == nil {
		cfg.Printer = i18n.New(i18n.English)
	}
	p := cfg.Printer
	d := pageData{
		pageConfig: cfg,
		Lang:       p.HTMLLang(),
		Now:        now.UTC().Format(time.RFC3339),
		Collected:  stampIn(p, st.Collected, now),
		Version:    orUnknown(version.Version), Revision: orUnknown(version.Revision), Branch: orUnknown(version.Branch),
		BuildUser: orUnknown(version.BuildUser), BuildDate: orUnknown(version.BuildDate),
		GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		StartedAt: cfg.Started.UTC().Format(time.RFC3339), Uptime: now.Sub(cfg.Started).Round(time.Second).String(),
		HealthEnabled: st.HealthEnabled,
	}
	d.findings(st.Findings)
	d.collectors(st, enabled)
	var switches probes.SwitchView
	if cfg.Switches != nil {
		switches = cfg.Switches()
	}
	d.probes(store, switches)
	d.Title = tr(p, msgPageNodeTitle, cfg.NodeName)
	if cfg.Sample != "" {
		d.Title = tr(p, msgPageSampleTitle, cfg.Sample)
		d.SampleNotice = tr(p, msgPageSampleNotice, cfg.SysPath)
		if cfg.PlanFile != "" {
			d.SampleNotice = tr(p, msgPageSampleNoticeAs, cfg.SysPath, cfg.NodeName)
		}
	}
	summary := health.Summarize(st.Findings)
	switch {
	case !st.HealthEnabled:
		d.Verdict, d.VerdictClass = tr(p, msgPageNoHealth), "skip"
	case summary.State == health.StateFailing:
		d.Verdict, d.VerdictClass = tr(p, msgPageFailing, d.Fail, d.Warn), "fail"
	case summary.State == health.StateWarning:
		d.Verdict, d.VerdictClass = tr(p, msgPageWarning, d.Warn), "warn"
	case summary.State == health.StateHealthy:
		d.Verdict, d.VerdictClass = tr(p, msgPageHealthy, d.OK), "ok"
	default:
		// Not green: nothing was found right either.
		d.Verdict, d.VerdictClass = nothingToCheck(p, summary.Reason, summary.NotRDMANode(), st.Findings), "empty"
		d.VerdictDetail = tr(p, msgPageNothingDetail)
	}
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, d); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// T is a string of the page in its language, for the template.
func (d pageData) T(format string, args ...any) string { return d.Printer.Sprintf(format, args...) }

func (d *pageData) findings(fs []health.Finding) {
	fs = printableFindings(fs)
	p := d.Printer
	for _, f := range fs {
		switch f.Status {
		case health.StatusFail:
			d.Fail++
			d.Problems = append(d.Problems, pageFinding{Status: trText(p, msgStatusFail), Class: "fail", Check: f.ID, Subject: f.Subject, Message: findingMessage(p, f), Fix: findingFix(p, f)})
		case health.StatusWarn:
			d.Warn++
			d.Problems = append(d.Problems, pageFinding{Status: trText(p, msgStatusWarn), Class: "warn", Check: f.ID, Subject: f.Subject, Message: findingMessage(p, f), Fix: findingFix(p, f)})
		case health.StatusOK:
			d.OK++
		case health.StatusSkipped:
			d.Skipped++
		}
	}
	// The same folding as the doctor's text output.
	printOKFolded(p, fs, func(_ health.Status, id, subject, msg string) {
		d.Passed = append(d.Passed, pageFinding{Status: trText(p, msgStatusOK), Class: "ok", Check: id, Subject: subject, Message: msg})
	})
	printSkipsFolded(p, fs, func(_ health.Status, id, subject, msg string) {
		d.Skips = append(d.Skips, pageFinding{Status: trText(p, msgStatusSkipped), Class: "skip", Check: id, Subject: subject, Message: msg})
	})
}

func (d *pageData) collectors(st collector.Status, enabled []string) {
	byName := map[string]collector.CollectorStatus{}
	for _, c := range st.Collectors {
		byName[c.Name] = c
	}
	now, _ := time.Parse(time.RFC3339, d.Now)
	for _, n := range collector.Names() {
		p := d.Printer
		row := pageCollector{Name: n, Reads: collector.Help(n), State: p.Sprintf("disabled"), Class: "skip"}
		if slices.Contains(enabled, n) {
			c := byName[n]
			row.State, row.Class = p.Sprintf("ok"), "ok"
			row.Duration = fmtDuration(c.Duration)
			row.LastSuccess = d.stamp(c.LastSuccess, now)
			switch {
			case c.LastRun.IsZero():
				row.State = p.Sprintf("not run yet")
			case c.Absent:
				row.State, row.Class, row.Err = p.Sprintf("absent"), "skip", c.Err
			case c.Err != "":
				row.State, row.Class, row.Err = p.Sprintf("FAILED"), "fail", c.Err
			}
		}
		d.Collectors = append(d.Collectors, row)
	}
}

func (d *pageData) probes(store *probes.Store, switches probes.SwitchView) {
	if store == nil {
		return
	}
	d.ProbesEnabled = true
	if dir, err := store.StateDir(); err != nil {
		d.StateDir, d.StateDirErr = dir, err.Error()
	}
	judged := store.Judge()
	kinds := map[string]bool{}
	for _, j := range judged {
		kinds[j.Probe] = true
		class := "ok"
		if j.PeersFailed > 0 {
			class = "fail"
		}
		row := pageJudgement{Probe: j.Probe, Device: j.Device, Rail: j.Rail,
			PeersFailed: j.PeersFailed, PeersPassed: j.PeersPassed, FailedWith: strings.Join(j.FailedPeers, ", "), Class: class}
		if sw, ok := switches.Rails[j.Device]; ok {
			row.Switch = node.Printable(sw.String())
		}
		d.Judgement = append(d.Judgement, row)
	}
	for _, k := range []string{probes.KindIBWriteBW, probes.KindIBWriteLat} {
		if kinds[k] {
			d.LocalVerdicts = append(d.LocalVerdicts, k+": "+probes.LocalVerdict(judged, k))
			for _, v := range probes.SwitchVerdicts(judged, k, switches) {
				d.SwitchVerdicts = append(d.SwitchVerdicts, k+": "+v)
			}
		}
	}
	d.incasts(store.Latest())
	recent := store.Recent(30)
	// Newest first by start time: results arrive as runs end, and a long
	// NCCL run ends after shorter ones that started later.
	slices.SortStableFunc(recent, func(a, b *probes.Result) int { return cmp.Compare(b.Start.UnixNano(), a.Start.UnixNano()) })
	for _, r := range recent {
		p := pageProbe{Start: r.Start.UTC().Format(time.RFC3339), Probe: r.Probe, Peer: r.Peer, Device: r.Device, Result: "ok", Class: "ok"}
		switch {
		case r.Skipped:
			p.Result, p.Diagnosis, p.Class = "skipped", node.Printable(r.SkipReason), "skip"
		case !r.Success:
			p.Result, p.Diagnosis, p.Failed, p.Class = "FAILED: "+r.Reason, node.Printable(r.Hint), true, "fail"
			// A peer's program writes the stderr: what would drive a
			// terminal reading the page (w3m, curl) is taken out.
			p.Stderr = strings.TrimSpace(node.PrintableLines(r.StderrTail))
			d.ProbeFailures++
		}
		if r.Bandwidth != nil && r.Bandwidth.BytesPerSecond > 0 {
			p.Bandwidth = fmt.Sprintf("%.1f Gb/s", r.Bandwidth.BytesPerSecond*8/1e9)
		}
		if r.Incast != nil && r.Incast.BytesPerSecond > 0 {
			p.Bandwidth = fmt.Sprintf("%.1f Gb/s", r.Incast.BytesPerSecond*8/1e9)
		}
		d.Probes = append(d.Probes, p)
	}
}

// incasts lists the last incast of each device among the fresh results.
func (d *pageData) incasts(latest []*probes.Result) {
	p := d.Printer
	for _, r := range latest {
		in := r.Incast
		if r.Probe != probes.KindIncast || in == nil {
			continue
		}
		row := pageIncast{Start: r.Start.UTC().Format(time.RFC3339), Device: r.Device, Role: in.Role, Peer: r.Peer,
			Result: p.Sprintf("ok: no loss, the switch paused or marked"), Class: "ok",
			Said: strings.Join(r.Warnings, "; "), Unseen: strings.Join(in.Unseen, "; ")}
		if !r.Success {
			row.Result, row.Class = p.Sprintf("FAILED: %s", r.Reason), "fail"
			row.Said = strings.TrimPrefix(row.Said+"; "+r.Hint, "; ")
		}
		var moved []string
		for _, k := range slices.Sorted(maps.Keys(in.Counters)) {
			if v := in.Counters[k]; v > 0 {
				moved = append(moved, fmt.Sprintf("%s +%d", k, v))
			}
		}
		row.Counters = strings.Join(moved, ", ")
		if row.Counters == "" {
			row.Counters = p.Sprintf("nothing moved")
		}
		d.Incasts = append(d.Incasts, row)
	}
}

// stamp is a time with its age, "" for the zero time.
func stampIn(p *i18n.Printer, t, now time.Time) string {
	if t.IsZero() {
		return p.Sprintf("never")
	}
	age := now.Sub(t).Round(time.Second)
	if age < 0 {
		age = 0
	}
	return p.Sprintf("%s UTC (%s ago)", t.UTC().Format("15:04:05"), age)
}

func (d *pageData) stamp(t, now time.Time) string { return stampIn(d.Printer, t, now) }

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func fmtDuration(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	if d < time.Millisecond {
		return fmt.Sprintf("%d µs", d.Microseconds())
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

// nodePage serves the page at "/" only; other paths are 404.
func nodePage(exporter *collector.Exporter, store *probes.Store, cfg pageConfig) http.Handler {
	enabled := exporter.Collectors()
	return collector.ReadOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		page := cfg
		if l := r.URL.Query().Get("lang"); l != "" {
			if tag, err := i18n.Parse(l); err == nil {
				page.Printer = i18n.New(tag)
			}
		}
		body, err := renderPage(page, exporter.Status(), enabled, store, time.Now())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(body)
	}))
}
