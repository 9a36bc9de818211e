package main

import (
	"time"

	"github.com/roce-exporter/roce_exporter/config"
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
}

func doctorIncast(plan *config.Plan, nodeName string) *incastReport {
	if plan == nil || plan.Expectations.LinkLayer != config.LinkLayerEthernet {
		return nil
	}
	results, err := probes.LastIncast(plan.Probes.StateDir, nodeName)
	r := &incastReport{}
	switch {
	case err != nil:
		r.Note = tr(msgIncastUnreadable, err)
	case len(results) == 0:
		r.Note = tr(msgIncastNone, nodeName)
	}
	for _, res := range results {
		l := incastLine{Device: res.Device, Role: res.Incast.Role, Peer: res.Peer, Start: res.Start, Result: "ok", Reason: res.Reason, Said: res.Warnings, Unseen: res.Incast.Unseen}
		switch {
		case res.Skipped:
			l.Result, l.Said = "cannot tell", []string{res.SkipReason}
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
	l.line("")
	l.line(tr(msgIncastTitle))
	if r.Note != "" {
		para(r.Note, "  ", "  ")
	}
	const under = "        "
	for _, in := range r.Lines {
		what := in.Result
		if in.Reason != "" {
			what += " " + in.Reason
		}
		para(tr(msgIncastLine, what, in.Device, in.Role, in.Peer, now.Sub(in.Start).Round(time.Minute)), "  ", under)
		for _, s := range in.Said {
			para(s, under, under)
		}
		for _, u := range in.Unseen {
			para(tr(msgIncastUnseen, u), under, under)
		}
	}
}
