package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/roce-exporter/roce_exporter/health"
	"github.com/roce-exporter/roce_exporter/i18n"
)

// textOptions say how the doctor's text is laid out.
type textOptions struct {
	Color    bool
	Width    int
	Interval time.Duration
	Verbose  bool
	// Printer is the language; nil is English.
	Printer *i18n.Printer
}

var statusStyle = map[health.Status]struct{ label, color string }{
	health.StatusFail:    {msgStatusFail, "\x1b[1;31m"},
	health.StatusWarn:    {msgStatusWarn, "\x1b[1;33m"},
	health.StatusOK:      {msgStatusOK, "\x1b[32m"},
	health.StatusSkipped: {msgStatusSkipped, "\x1b[2m"},
}

// textLayout writes the report's rows: status, check and subject in
// columns, the message beside them when it fits on the line, else wrapped
// under the check, and the at: and fix: lines wrapped under the check.
type textLayout struct {
	w                   io.Writer
	opts                textOptions
	statusW, idW, subjW int
	// indent puts a line under the check's column.
	indent string
}

func newTextLayout(w io.Writer, r doctorReport, opts textOptions) *textLayout {
	l := &textLayout{w: w, opts: opts, idW: 10, subjW: 7}
	for _, st := range statusStyle {
		l.statusW = max(l.statusW, displayWidth(trText(opts.Printer, st.label)))
	}
	for _, f := range r.Checks {
		l.idW, l.subjW = max(l.idW, displayWidth(f.ID)), max(l.subjW, displayWidth(f.Subject))
	}
	l.indent = strings.Repeat(" ", l.statusW+2)
	return l
}

func (l *textLayout) line(s string) { fmt.Fprintln(l.w, s) }

// para writes text wrapped to the width, its later lines indented by hang.
func (l *textLayout) para(text, hang string) {
	for _, s := range wrap(text, "", hang, l.opts.Width) {
		l.line(s)
	}
}

func (l *textLayout) label(st health.Status) string {
	s := padRight(trText(l.opts.Printer, statusStyle[st].label), l.statusW)
	if l.opts.Color {
		return statusStyle[st].color + s + "\x1b[0m"
	}
	return s
}

// row writes one finding (or folded findings): the message on the row when
// the whole of it fits there, else on the lines below, under the check.
func (l *textLayout) row(st health.Status, id, subject, message string) {
	head := l.label(st) + "  " + padRight(id, l.idW) + "  " + padRight(subject, l.subjW)
	headW := l.statusW + 2 + l.idW + 2 + l.subjW
	if message == "" {
		l.line(strings.TrimRight(head, " "))
		return
	}
	if headW+2+displayWidth(message) <= l.opts.Width {
		l.line(head + "  " + message)
		return
	}
	l.line(strings.TrimRight(head, " "))
	for _, s := range wrap(message, l.indent, l.indent, l.opts.Width) {
		l.line(s)
	}
}

// detail writes an "at:" or "fix:" text under the check, its later lines
// under the text.
func (l *textLayout) detail(prefix, text string) {
	for i, part := range strings.Split(text, "\n") {
		first := l.indent + prefix
		if i > 0 {
			first = l.indent + strings.Repeat(" ", displayWidth(prefix))
		}
		for _, s := range wrap(part, first, l.indent+strings.Repeat(" ", displayWidth(prefix)), l.opts.Width) {
			l.line(s)
		}
	}
}

// printDoctor writes the findings grouped by status, failures first, so
// the first line a beginner reads is the most important one. Passing
// checks are folded to one line per check unless verbose; a node with
// nothing to check says so first, with the reason.
func printDoctor(w io.Writer, r doctorReport, opts textOptions) {
	l := newTextLayout(w, r, opts)
	p := opts.Printer
	plan := r.Plan
	if plan == "" {
		plan = tr(p, msgNoPlan)
	}
	samples := tr(p, msgOneSample)
	if r.Samples == 2 {
		samples = tr(p, msgTwoSamples, opts.Interval)
	}
	switch {
	case r.Sample != "" && r.Plan != "":
		l.para(tr(p, msgDoctorTitleSampleAs, r.Sample, r.Node, plan, samples), "  ")
	case r.Sample != "":
		l.para(tr(p, msgDoctorTitleSample, r.Sample, plan, samples), "  ")
	default:
		l.para(tr(p, msgDoctorTitle, r.Node, plan, samples), "  ")
	}
	l.line("")
	if r.State == string(health.StateNothingToCheck) {
		l.para(nothingToCheck(p, r.StateReason, r.NotRDMANode, r.Checks), "  ")
		l.para(tr(p, msgNothingToCheckNote), "  ")
		l.line("")
	}
	// The plan's own doubtful values come first: every check below is judged
	// against them.
	for _, pw := range r.PlanWarnings {
		l.row(health.StatusWarn, tr(p, msgPlanWarningRow), "", pw)
	}
	if len(r.PlanWarnings) > 0 {
		l.line("")
	}
	for _, st := range health.StatusesWorstFirst() {
		if st == health.StatusOK && !opts.Verbose {
			printOKFolded(p, r.Checks, l.row)
			continue
		}
		if st == health.StatusSkipped && !opts.Verbose {
			row := l.row
			if r.State == string(health.StateNothingToCheck) {
				// The reason is the headline already.
				row = func(st health.Status, id, subject, msg string) {
					if rest, ok := strings.CutPrefix(msg, localReason(p, r.StateReason, r.Checks)); ok {
						msg = tr(p, msgReasonAbove) + rest
					}
					l.row(st, id, subject, msg)
				}
			}
			printSkipsFolded(p, r.Checks, row)
			continue
		}
		for _, f := range r.Checks {
			if f.Status != st {
				continue
			}
			l.row(st, f.ID, f.Subject, findingMessage(p, f))
			if fix := findingFix(p, f); fix != "" && (st == health.StatusFail || st == health.StatusWarn) {
				if at := cablingOf(r.Cabling, f.Subject, p); at != "" {
					l.detail(tr(p, msgAt), at)
				}
				l.detail(tr(p, msgFix), fix)
			}
		}
	}
	// Cabling comes after the findings: the first line read is the worst
	// finding, and each failing port's own "at:" line already names its
	// switch port.
	if len(r.Cabling) > 0 {
		l.line("")
		printCabling(l, r.Cabling)
	}
	printIncast(l, r.Incast, time.Now())
	l.line("")
	if n := len(r.PlanWarnings); n > 0 {
		l.para(tr(p, msgSummaryPlan, r.Summary["fail"], r.Summary["warn"], r.Summary["ok"], r.Summary["skipped"], n), "  ")
	} else {
		l.para(tr(p, msgSummary, r.Summary["fail"], r.Summary["warn"], r.Summary["ok"], r.Summary["skipped"]), "  ")
	}
}

// nothingToCheck is the headline of a node no check could judge: NOT AN
// RDMA NODE with the rest of the reason, or NOTHING TO CHECK with all of it.
// The reason is the English message of a finding among fs: printed in p's
// language through that finding.
func nothingToCheck(p *i18n.Printer, reason string, notRDMANode bool, fs []health.Finding) string {
	local := localReason(p, reason, fs)
	if notRDMANode {
		rest := strings.TrimPrefix(reason, health.SkipNotRDMANode+": ")
		for _, sep := range []string{"：", ": "} {
			if r, ok := strings.CutPrefix(local, p.Word(health.SkipNotRDMANode)+sep); ok {
				rest = r
				break
			}
		}
		return tr(p, msgNotRDMANode, rest)
	}
	return tr(p, msgNothingToCheck, local)
}

// localReason is reason, the English message of a finding among fs, in p's
// language.
func localReason(p *i18n.Printer, reason string, fs []health.Finding) string {
	for _, f := range fs {
		if f.Message == reason {
			return findingMessage(p, f)
		}
	}
	return p.Word(reason)
}

// printOKFolded prints one line per passing check: the message when one
// subject passed, else the subjects.
func printOKFolded(p *i18n.Printer, findings []health.Finding, line func(health.Status, string, string, string)) {
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
		line(health.StatusOK, id, tr(p, msgFoldedSubjects, len(fs)), strings.Join(names, " "))
	}
}

// printSkipsFolded prints node-wide skips that share a reason (no RDMA
// device, no plan) as one line, so the root cause above stays in view.
func printSkipsFolded(p *i18n.Printer, findings []health.Finding, line func(health.Status, string, string, string)) {
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
		line(health.StatusSkipped, tr(p, msgFoldedChecks, len(ids)), health.SubjectNode, tr(p, msgFoldedReason, printed[reason], strings.Join(ids, " ")))
	}
}
