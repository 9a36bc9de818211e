package main

import (
	"time"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/probes"
)

// incastLine is one device's last incast as the doctor shows it. The switch's
// PFC and ECN are no host setting a check could read: only an incast proves
// them, and the doctor shows the last one the exporter (or `probe run
// incast`) saved in the probe state directory.
type incastLine struct {
	Device string    `json:"device"`
	Role   string    `json:"role"`
	Peer   string    `json:"peer"`
	Start  time.Time `json:"start"`
	Result string    `json:"result"`
	Reason string    `json:"reason,omitempty"`
	Said   []string  `json:"said,omitempty"`
	Unseen []string  `json:"unseen,omitempty"`
}

// incastReport is the switch section of the doctor: the last incast of each
// device, or what to run when there is none (Note). Nil without a plan or on
// InfiniBand, where the incast does not apply.
type incastReport struct {
	Lines []incastLine `json:"last,omitempty"`
	Note  string       `json:"note,omitempty"`
	// note is Note as a message and its arguments, for the text in the
	// reader's language; the JSON keeps the English.
	note []any
}

func doctorIncast(plan *config.Plan, nodeName string) *incastReport {
	if plan == nil || plan.Expectations.LinkLayer != config.LinkLayerEthernet {
		return nil
	}
	results, err := probes.LastIncast(plan.Probes.StateDir, nodeName)
	r := &incastReport{}
	switch {
	case err != nil:
		r.note = []any{msgIncastUnreadable, err}
	case len(results) == 0:
		r.note = []any{msgIncastNone, node.PrintableName(nodeName)}
	}
	if len(r.note) > 0 {
		r.Note = tr(nil, r.note[0].(string), r.note[1:]...)
	}
	for _, res := range results {
		// The reasons and warnings quote the peers' programs and the
		// switch: what would drive the terminal is taken out.
		l := incastLine{Device: node.PrintableName(res.Device), Role: res.Incast.Role, Peer: node.PrintableName(res.Peer), Start: res.Start, Result: "ok",
			Reason: node.Printable(res.Reason), Said: printableAll(res.Warnings), Unseen: printableAll(res.Incast.Unseen)}
		switch {
		case res.Skipped:
			l.Result, l.Said = "cannot tell", []string{node.Printable(res.SkipReason)}
		case !res.Success:
			l.Result = "FAIL"
		}
		r.Lines = append(r.Lines, l)
	}
	return r
}

// printIncast writes the switch section of the text output, wrapped like
// the rest of the report.
func printIncast(l *textLayout, r *incastReport, now time.Time) {
	if r == nil {
		return
	}
	para := func(text, head, hang string) {
		for _, s := range wrap(text, head, hang, l.opts.Width) {
			l.line(s)
		}
	}
	p := l.opts.Printer
	l.line("")
	l.line(tr(p, msgIncastTitle))
	switch {
	case len(r.note) > 0:
		para(tr(p, r.note[0].(string), r.note[1:]...), "  ", "  ")
	case r.Note != "":
		para(r.Note, "  ", "  ")
	}
	const under = "        "
	for _, in := range r.Lines {
		what := p.Word(in.Result)
		if in.Reason != "" {
			what += " " + in.Reason
		}
		para(tr(p, msgIncastLine, what, in.Device, in.Role, in.Peer, now.Sub(in.Start).Round(time.Minute)), "  ", under)
		for _, s := range in.Said {
			para(s, under, under)
		}
		for _, u := range in.Unseen {
			para(tr(p, msgIncastUnseen, u), under, under)
		}
	}
}

func printableAll(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = node.Printable(s)
	}
	return out
}
