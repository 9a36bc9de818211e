package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sync"
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
	d.cmd = a.kp.Command("doctor", "Check this node against the cluster plan and print what is wrong and how to fix it. Exit 0: nothing fails; 1: a check fails; 2: a usage or plan error (a --path.* that does not exist); 3: nothing to check (every check skipped, as on a node without RDMA), neither a pass nor a failure. Logs go to stderr, at warn unless --log.level says otherwise.")
	d.output = d.cmd.Flag("output", "Output format: text or json.").Short('o').Default("text").Enum("text", "json")
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
	// State is the node's state over all checks (health.State: failing,
	// warning, healthy, nothing_to_check); StateReason says why nothing
	// could be checked.
	State       string `json:"state"`
	StateReason string `json:"state_reason,omitempty"`
	NotRDMANode bool   `json:"-"`
	// Sample names the sample node read instead of this machine.
	Sample string `json:"sample,omitempty"`
	// Incast is the last incast of each device (the switch's PFC and ECN).
	Incast *incastReport `json:"incast,omitempty"`
}

// Exit codes of the doctor.
const (
	exitOK             = 0
	exitFailed         = 1
	exitUsage          = 2
	exitNothingToCheck = 3
)

func (d *doctorCommand) run() int {
	plan, err := d.a.loadPlan()
	var invalid config.ValidationErrors
	switch {
	case errors.As(err, &invalid):
		fmt.Fprintf(os.Stderr, "roce_exporter doctor: the cluster plan is not valid:\n%v\n", err)
		return exitUsage
	case errors.Is(err, config.ErrPlanMissing):
		fmt.Fprintf(os.Stderr, "roce_exporter doctor: %v; or leave --config.file out to run only the checks that need no plan\n", err)
		return exitUsage
	case err != nil:
		fmt.Fprintf(os.Stderr, "roce_exporter doctor: cannot read the cluster plan: %v\n", err)
		return exitUsage
	}
	opts, ropts, err := d.a.options(d.collectors, plan)
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter doctor: %v\n", err)
		return exitUsage
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
		return exitUsage
	}
	defer rd.Close()
	pl, err := pipeline.New(pipeline.Options{Reader: rd, Plan: plan, NodeName: opts.NodeName, Health: true})
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter doctor: %v\n", err)
		return exitUsage
	}
	// Two collections --interval apart: the second judges what rose in
	// between; the first's findings are not shown.
	c, err := pl.Collect(ctx)
	samples := 1
	if err == nil && *d.interval > 0 {
		timer := time.NewTimer(*d.interval)
		stopShowing := showSampling(ctx, os.Stderr, isTerminal(os.Stderr), *d.interval, d.a.printer())
		select {
		case <-timer.C:
			stopShowing()
			c, err = pl.Collect(ctx)
		case <-ctx.Done():
			stopShowing()
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
		return exitUsage
	}
	findings := printableFindings(c.Findings)
	summary := health.Summarize(findings)
	report := doctorReport{Node: node.PrintableName(opts.NodeName), Plan: *d.a.configFile, Samples: samples, Summary: map[string]int{}, Checks: findings, Cabling: cabling(c.Snapshot),
		State: string(summary.State), StateReason: summary.Reason, NotRDMANode: summary.NotRDMANode(), Sample: opts.Sample}
	if plan != nil {
		for _, w := range plan.Warnings {
			report.PlanWarnings = append(report.PlanWarnings, node.Printable(w.Error()))
		}
		report.Incast = doctorIncast(plan, opts.NodeName)
	}
	for _, f := range findings {
		report.Summary[string(f.Status)]++
	}
	if *d.output == "json" {
		newJSONEncoder(os.Stdout).Encode(report)
	} else {
		// One write: the report is not interleaved with anything on stderr.
		var b bytes.Buffer
		printDoctor(&b, report, textOptions{Color: useColor(*d.color, os.Stdout), Width: textWidth(os.Stdout), Interval: *d.interval, Verbose: *d.verbose, Printer: d.a.printer()})
		os.Stdout.Write(b.Bytes())
	}
	switch summary.State {
	case health.StateFailing:
		return exitFailed
	case health.StateNothingToCheck:
		return exitNothingToCheck
	}
	return exitOK
}

// printableFindings writes each subject, a name from the node that may hold
// any bytes, as its label reads in /metrics (node.LabelUTF8) with control
// characters escaped (node.PrintableName): text and JSON need UTF-8, two
// names must not print alike, and a name must not drive the terminal.
func printableFindings(fs []health.Finding) []health.Finding {
	out := slices.Clone(fs)
	for i := range out {
		out[i].Subject = node.PrintableName(out[i].Subject)
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
	return isTerminal(f)
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// showSampling tells a person at a terminal that the doctor is waiting for
// its second sample, counting down on one line of w (stderr, so the report
// on stdout stays clean) until the returned function clears it. Nothing is
// written when w is not a terminal.
func showSampling(ctx context.Context, w io.Writer, terminal bool, interval time.Duration, p *i18n.Printer) (stop func()) {
	if !terminal {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		end := time.Now().Add(interval)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			left := time.Until(end).Round(time.Second)
			fmt.Fprintf(w, "\r\x1b[K%s", tr(p, msgSampling, max(left, 0)))
			select {
			case <-tick.C:
			case <-done:
				fmt.Fprint(w, "\r\x1b[K")
				return
			case <-ctx.Done():
				fmt.Fprint(w, "\r\x1b[K")
				return
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); <-finished }) }
}
