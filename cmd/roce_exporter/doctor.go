package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"golang.org/x/sys/unix"

	"github.com/roce-exporter/roce_exporter/collector"
	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/health"
	"github.com/roce-exporter/roce_exporter/i18n"
	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/pipeline"
	"github.com/roce-exporter/roce_exporter/reader"
)

type doctorCommand struct {
	a          *app
	collectors *collector.Flags
	cmd        *kingpin.CmdClause
	output     *string
	color      *string
	interval   *time.Duration
	configfs   *bool
	verbose    *bool
}

func newDoctorCommand(a *app) *doctorCommand {
	d := &doctorCommand{a: a}
	d.cmd = a.kp.Command("doctor", "Check this node against the cluster plan and print what is wrong and how to fix it. Exit 0 when nothing fails, 1 when a check fails, 2 on a usage or plan error.")
	d.output = d.cmd.Flag("output", "Output format: text or json.").Default("text").Enum("text", "json")
	d.color = d.cmd.Flag("color", "Colour the text output: auto (only on a terminal), always or never.").Default("auto").Enum("auto", "always", "never")
	d.interval = d.cmd.Flag("interval", "Time between the two samples that rate checks compare (PFC storm, drops, PHY, PCIe and transport errors, link flaps, ECN inference): what rises in between is happening now. 0 takes one sample, which sees only the totals since boot.").Default("5s").Duration()
	d.verbose = d.cmd.Flag("verbose", "Print every passing check with its message instead of one line per check.").Short('v').Bool()
	d.collectors = collector.RegisterSourceFlags(d.cmd)
	d.configfs = d.cmd.Flag("configfs", "As root on a live system, create the rdma_cm configfs directory of each device for a moment to read its default RoCE mode (it is removed again, also when Ctrl-C or SIGTERM stops the doctor).").Default("true").Bool()
	return d
}

// doctorReport is the JSON schema of `doctor --output=json`.
type doctorReport struct {
	Node string `json:"node"`
	Plan string `json:"plan,omitempty"`
	// PlanWarnings are the plan's legal but doubtful values (an MTU too small
	// for RoCE), each with its file and line.
	PlanWarnings []string         `json:"plan_warnings,omitempty"`
	Samples      int              `json:"samples"`
	Summary      map[string]int   `json:"summary"`
	Checks       []health.Finding `json:"checks"`
	// Cabling is each Ethernet port's LLDP neighbour, when lldpd answered.
	Cabling []cablingLine `json:"cabling,omitempty"`
}

func (d *doctorCommand) run() int {
	plan, err := d.a.loadPlan()
	var invalid config.ValidationErrors
	switch {
	case errors.As(err, &invalid):
		fmt.Fprintf(os.Stderr, "roce_exporter doctor: the cluster plan is not valid:\n%v\n", err)
		return 2
	case errors.Is(err, config.ErrPlanMissing):
		fmt.Fprintf(os.Stderr, "roce_exporter doctor: %v; or leave --config.file out to run only the checks that need no plan\n", err)
		return 2
	case err != nil:
		fmt.Fprintf(os.Stderr, "roce_exporter doctor: cannot read the cluster plan: %v\n", err)
		return 2
	}
	opts, ropts, err := d.a.options(d.collectors, plan)
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter doctor: %v\n", err)
		return 2
	}
	// The doctor reads every source fresh: nothing is cached between its
	// two samples.
	ropts.Refresh = 0
	// Ctrl-C or SIGTERM ends the wait between the samples (or a read) and
	// returns through the deferred clean-up, which removes the rdma_cm
	// configfs groups made below: the default action would kill the process
	// with them left behind. The handler stays until the very end, so a
	// second Ctrl-C cannot cut the clean-up short.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(signals)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var caught atomic.Value
	go func() {
		select {
		case s := <-signals:
			caught.Store(s)
			cancel()
		case <-ctx.Done():
		}
	}()
	interrupted := func() (int, bool) {
		s, ok := caught.Load().(os.Signal)
		if !ok {
			return 0, false
		}
		fmt.Fprintf(os.Stderr, "roce_exporter doctor: %v; stopped before the findings\n", s)
		return 128 + int(s.(syscall.Signal)), true
	}
	if *d.configfs {
		defer reader.OpenRDMACMConfigfs(ropts)()
	}
	rd, err := reader.New(ropts, d.a.logger)
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter doctor: %v\n", err)
		return 2
	}
	defer rd.Close()
	pl, err := pipeline.New(pipeline.Options{Reader: rd, Plan: plan, NodeName: opts.NodeName, Health: true})
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter doctor: %v\n", err)
		return 2
	}
	// Two collections --interval apart: the second judges what rose in
	// between; the first's findings are not shown.
	c, err := pl.Collect(ctx)
	samples := 1
	if err == nil && *d.interval > 0 {
		timer := time.NewTimer(*d.interval)
		select {
		case <-timer.C:
			c, err = pl.Collect(ctx)
		case <-ctx.Done():
			timer.Stop()
		}
		samples = 2
	}
	if code, ok := interrupted(); ok {
		return code
	}
	if err == nil {
		err = c.HealthErr
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter doctor: %v\n", err)
		return 2
	}
	findings := printableFindings(c.Findings)
	report := doctorReport{Node: opts.NodeName, Plan: *d.a.configFile, Samples: samples, Summary: map[string]int{}, Checks: findings, Cabling: cabling(c.Snapshot)}
	if plan != nil {
		for _, w := range plan.Warnings {
			report.PlanWarnings = append(report.PlanWarnings, w.Error())
		}
	}
	for _, f := range findings {
		report.Summary[string(f.Status)]++
	}
	if *d.output == "json" {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(report)
	} else {
		printDoctor(os.Stdout, report, useColor(*d.color, os.Stdout), *d.interval, *d.verbose, d.a.printer())
	}
	if report.Summary[string(health.StatusFail)] > 0 {
		return 1
	}
	return 0
}

// printableFindings writes each subject, a name from the node that may hold
// any bytes, as its label reads in /metrics (node.LabelUTF8): text and JSON
// need UTF-8, and two names must not print alike.
func printableFindings(fs []health.Finding) []health.Finding {
	out := slices.Clone(fs)
	for i := range out {
		out[i].Subject = node.LabelUTF8(out[i].Subject)
	}
	return out
}

func useColor(mode string, f *os.File) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

var statusStyle = map[health.Status]struct{ label, color string }{
	health.StatusFail:    {"FAIL", "\x1b[1;31m"},
	health.StatusWarn:    {"WARN", "\x1b[1;33m"},
	health.StatusOK:      {"ok", "\x1b[32m"},
	health.StatusSkipped: {"skip", "\x1b[2m"},
}

// statusLabel is the status word the doctor prints, in p's language.
func statusLabel(p *i18n.Printer, st health.Status) string {
	return p.Word(statusStyle[st].label)
}

// printDoctor writes the findings grouped by status, failures first, so
// the first line a beginner reads is the most important one. Passing
// checks are folded to one line per check unless verbose. p is the
// language; the columns are padded by display width, as a CJK character
// takes two columns.
func printDoctor(w io.Writer, r doctorReport, color bool, interval time.Duration, verbose bool, p *i18n.Printer) {
	paint := func(st health.Status, s string) string {
		if !color {
			return s
		}
		return statusStyle[st].color + s + "\x1b[0m"
	}
	plan := r.Plan
	if plan == "" {
		plan = p.Sprintf("none (--config.file): plan checks skipped")
	}
	fmt.Fprint(w, p.Sprintf("roce_exporter doctor — node %s, plan %s", r.Node, plan))
	if r.Samples == 2 {
		fmt.Fprint(w, p.Sprintf(", 2 samples %s apart", interval), "\n\n")
	} else {
		fmt.Fprint(w, p.Sprintf(", 1 sample (rate checks skipped)"), "\n\n")
	}
	idWidth, subjWidth, statusWidth := 10, 7, 4
	for _, f := range r.Checks {
		idWidth, subjWidth = max(idWidth, displayWidth(f.ID)), max(subjWidth, displayWidth(f.Subject))
	}
	for _, st := range health.StatusesWorstFirst() {
		statusWidth = max(statusWidth, displayWidth(statusLabel(p, st)))
	}
	planID := p.Sprintf("cluster plan")
	if len(r.PlanWarnings) > 0 {
		idWidth = max(idWidth, displayWidth(planID))
	}
	line := func(st health.Status, id, subject, msg string) {
		fmt.Fprintf(w, "%s  %s  %s  %s\n", paint(st, padRight(statusLabel(p, st), statusWidth)), padRight(id, idWidth), padRight(subject, subjWidth), msg)
	}
	// The plan's own doubtful values come first: every check below is judged
	// against them.
	for _, pw := range r.PlanWarnings {
		line(health.StatusWarn, planID, "", pw)
	}
	if len(r.PlanWarnings) > 0 {
		fmt.Fprintln(w)
	}
	fixLabel, atLabel := p.Sprintf("fix: "), p.Sprintf("at:  ")
	for _, st := range health.StatusesWorstFirst() {
		if st == health.StatusOK && !verbose {
			printOKFolded(r.Checks, line, p)
			continue
		}
		if st == health.StatusSkipped && !verbose {
			printSkipsFolded(r.Checks, line, p)
			continue
		}
		for _, f := range r.Checks {
			if f.Status != st {
				continue
			}
			line(st, f.ID, f.Subject, findingMessage(p, f))
			if fix := findingFix(p, f); fix != "" && (st == health.StatusFail || st == health.StatusWarn) {
				indent := strings.Repeat(" ", statusWidth+2+idWidth+2+subjWidth+2)
				if at := cablingOf(r.Cabling, f.Subject, p); at != "" {
					fmt.Fprintf(w, "%s%s%s\n", indent, atLabel, at)
				}
				for i, fl := range strings.Split(fix, "\n") {
					prefix := fixLabel
					if i > 0 {
						prefix = strings.Repeat(" ", displayWidth(fixLabel))
					}
					fmt.Fprintf(w, "%s%s%s\n", indent, prefix, fl)
				}
			}
		}
	}
	// Cabling comes after the findings: the first line read is the worst
	// finding, and each failing port's own "at:" line already names its
	// switch port.
	if len(r.Cabling) > 0 {
		fmt.Fprintln(w)
		printCabling(w, r.Cabling, p)
	}
	fmt.Fprint(w, "\n", p.Sprintf("%d failed, %d warnings, %d ok, %d skipped",
		r.Summary["fail"], r.Summary["warn"], r.Summary["ok"], r.Summary["skipped"]))
	if n := len(r.PlanWarnings); n > 0 {
		fmt.Fprint(w, p.Sprintf("; %d warning(s) about the plan itself, at the top", n))
	}
	fmt.Fprintln(w)
}

// printOKFolded prints one line per passing check: the message when one
// subject passed, else the subjects.
func printOKFolded(findings []health.Finding, line func(health.Status, string, string, string), p *i18n.Printer) {
	var order []string
	subjects := map[string][]health.Finding{}
	for _, f := range findings {
		if f.Status != health.StatusOK {
			continue
		}
		if _, seen := subjects[f.ID]; !seen {
			order = append(order, f.ID)
		}
		subjects[f.ID] = append(subjects[f.ID], f)
	}
	for _, id := range order {
		fs := subjects[id]
		if len(fs) == 1 {
			line(health.StatusOK, id, fs[0].Subject, findingMessage(p, fs[0]))
			continue
		}
		names := make([]string, len(fs))
		for i, f := range fs {
			names[i] = f.Subject
		}
		line(health.StatusOK, id, p.Sprintf("%d of them", len(fs)), strings.Join(names, " "))
	}
}

// printSkipsFolded prints node-wide skips that share a reason (no RDMA
// device, no plan) as one line, so the root cause above stays in view.
func printSkipsFolded(findings []health.Finding, line func(health.Status, string, string, string), p *i18n.Printer) {
	byReason := map[string][]string{}
	// The reasons are grouped by their English and printed in p's language.
	printed := map[string]string{}
	var reasons []string
	for _, f := range findings {
		if f.Status != health.StatusSkipped {
			continue
		}
		if f.Subject != health.SubjectNode {
			line(health.StatusSkipped, f.ID, f.Subject, findingMessage(p, f))
			continue
		}
		if _, seen := byReason[f.Message]; !seen {
			reasons = append(reasons, f.Message)
			printed[f.Message] = findingMessage(p, f)
		}
		byReason[f.Message] = append(byReason[f.Message], f.ID)
	}
	for _, reason := range reasons {
		ids := byReason[reason]
		if len(ids) == 1 {
			line(health.StatusSkipped, ids[0], health.SubjectNode, printed[reason])
			continue
		}
		line(health.StatusSkipped, p.Sprintf("%d checks", len(ids)), health.SubjectNode, p.Sprintf("%s: %s", printed[reason], strings.Join(ids, " ")))
	}
}
