package main

import (
	"fmt"
	"io"
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
		r.Note = fmt.Sprintf("cannot read the last incast: %v", err)
	case len(results) == 0:
		r.Note = fmt.Sprintf("the switch's PFC and ECN are not proven from this host yet: run `roce_exporter probe run incast --receiver %s` on it and on its senders at the same time (the command prints their names), or enable probes.incast", nodeName)
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

// printIncast writes the switch section of the text output.
func printIncast(w io.Writer, r *incastReport, now time.Time) {
	if r == nil {
		return
	}
	fmt.Fprintln(w, "\nThe switch under incast (PFC and ECN, proven from the hosts):")
	if r.Note != "" {
		fmt.Fprintf(w, "  %s\n", r.Note)
	}
	for _, l := range r.Lines {
		what := l.Result
		if l.Reason != "" {
			what += " " + l.Reason
		}
		fmt.Fprintf(w, "  %-4s  %s as %s of %s, %s ago\n", what, l.Device, l.Role, l.Peer, now.Sub(l.Start).Round(time.Minute))
		for _, s := range l.Said {
			fmt.Fprintf(w, "        %s\n", s)
		}
		for _, u := range l.Unseen {
			fmt.Fprintf(w, "        not seen here: %s\n", u)
		}
	}
}
