package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kingpin/v2"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/probes"
	"github.com/roce-exporter/roce_exporter/reader"
)

type probeCommand struct {
	a         *app
	runCmd    *kingpin.CmdClause
	parseCmd  *kingpin.CmdClause
	runKind   *string
	runPeer   *string
	parseKind *string
	parseFile *string
	stateDir  *string
}

func newProbeCommand(a *app) *probeCommand {
	p := &probeCommand{a: a}
	p.stateDir = a.kp.Flag("probes.state-dir", "Directory for probe baselines (overrides the plan's probes.state_dir).").PlaceHolder("DIR").String()
	cmd := a.kp.Command("probe", "Run a fabric probe now, or parse a saved probe output.")
	p.runCmd = cmd.Command("run", "Run one probe now from this node and print the results as JSON (perftest probes need the peers' exporters serving their responders).")
	p.runKind = p.runCmd.Arg("kind", "ib_write_bw, ib_write_lat, nccl or ping.").Required().Enum(probes.KindIBWriteBW, probes.KindIBWriteLat, probes.KindNCCL, probes.KindPing)
	p.runPeer = p.runCmd.Flag("peer", "Only probe this peer node (default: every peer).").String()
	p.parseCmd = cmd.Command("parse", "Parse a saved ib_write_bw / ib_write_lat / nccl-tests output (text or JSON) and print JSON.")
	p.parseKind = p.parseCmd.Arg("kind", "ib_write_bw, ib_write_lat or nccl.").Required().Enum(probes.KindIBWriteBW, probes.KindIBWriteLat, probes.KindNCCL)
	p.parseFile = p.parseCmd.Arg("file", "The saved output; - for standard input.").Required().String()
	return p
}

// stateDirFor picks the baseline directory: the flag, else the plan.
func (p *probeCommand) stateDirFor(plan *config.Plan) string {
	if *p.stateDir != "" {
		return *p.stateDir
	}
	return plan.Probes.StateDir
}

func (p *probeCommand) runNow() int {
	plan, err := p.a.loadPlan()
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter: %v\n", err)
		return 2
	}
	if plan == nil {
		fmt.Fprintln(os.Stderr, "roce_exporter: probe run needs the cluster plan (--config.file)")
		return 2
	}
	_, ropts, err := p.a.options(plan)
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter: %v\n", err)
		return 2
	}
	ropts.Sources = []string{node.SourceRDMA}
	rd, err := reader.New(ropts, p.a.logger)
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter: %v\n", err)
		return 2
	}
	defer rd.Close()
	sched, err := probes.New(probes.Options{
		Plan: plan, Self: config.SelfName(*p.a.nodeName), Node: snapshotNode(rd),
		StateDir: p.stateDirFor(plan), Logger: p.a.logger,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	results, err := sched.RunOnce(ctx, *p.runKind, *p.runPeer)
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter: %v\n", err)
		return 2
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	failed := false
	for _, r := range results {
		enc.Encode(r)
		failed = failed || (!r.Success && !r.Skipped)
	}
	if len(results) == 0 {
		fmt.Fprintln(os.Stderr, "roce_exporter: nothing to probe (no peer, or no rail with an address)")
		return 1
	}
	if failed {
		return 1
	}
	return 0
}

// parsedOutput is the stable JSON of `probe parse`.
type parsedOutput struct {
	Kind                    string             `json:"kind"`
	BandwidthBytesPerSecond float64            `json:"bandwidth_bytes_per_second,omitempty"`
	LatencySeconds          map[string]float64 `json:"latency_seconds,omitempty"`
	BusBandwidth            map[uint64]float64 `json:"bus_bandwidth_bytes_per_second,omitempty"`
	WrongResults            int64              `json:"wrong_results,omitempty"`
	Rows                    int                `json:"rows"`
	Warnings                []string           `json:"warnings,omitempty"`
	Errors                  []string           `json:"errors,omitempty"`
	Reason                  string             `json:"reason"`
	Hint                    string             `json:"hint,omitempty"`
}

func (p *probeCommand) parse() int {
	var data []byte
	var err error
	// kingpin hands a lone "-" argument over as "".
	if *p.parseFile == "-" || *p.parseFile == "" {
		data, err = readAllLimited(os.Stdin)
	} else {
		var f *os.File
		if f, err = os.Open(*p.parseFile); err == nil {
			data, err = readAllLimited(f)
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter: %v\n", err)
		return 2
	}
	out := parseProbeOutput(*p.parseKind, data)
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	enc.Encode(out)
	if out.Reason != "" {
		return 1
	}
	return 0
}

// readAllLimited reads a saved output; real ones are kilobytes, a
// gigabyte file is a mistake that must not exhaust memory.
func readAllLimited(r io.Reader) ([]byte, error) {
	const limit = 64 << 20
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if len(data) > limit {
		return nil, fmt.Errorf("input larger than %d MiB", limit>>20)
	}
	return data, nil
}

// parseProbeOutput accepts text or JSON, telling them apart by content.
func parseProbeOutput(kind string, data []byte) parsedOutput {
	out := parsedOutput{Kind: kind}
	isJSON := json.Valid(data) || bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("{"))
	var err error
	switch kind {
	case probes.KindNCCL:
		var r *probes.NCCLResult
		if isJSON {
			r, err = probes.ParseNCCLJSON(data)
		} else {
			r, err = probes.ParseNCCL(bytes.NewReader(data))
		}
		if r != nil {
			out.BandwidthBytesPerSecond = r.AvgBusBandwidthBytesPerSecond
			out.Rows, out.Warnings, out.Errors, out.Reason = len(r.Rows), r.Warnings, r.Errors, r.Reason
			out.BusBandwidth, out.WrongResults = r.BusBandwidthBySize(), r.WrongResults()
		}
	default:
		var r *probes.PerftestResult
		if isJSON {
			r, err = probes.ParsePerftestJSON(data)
		} else {
			r, err = probes.ParsePerftest(bytes.NewReader(data))
		}
		if r != nil {
			out.BandwidthBytesPerSecond = r.BandwidthBytesPerSecond
			out.Rows = len(r.Rows) + len(r.LatencyRows)
			out.Warnings, out.Errors, out.Reason = r.Warnings, r.Errors, r.Reason
			if n := len(r.LatencyRows); n > 0 {
				row := r.LatencyRows[n-1]
				out.LatencySeconds = map[string]float64{"avg": row.Avg, "min": row.Min, "max": row.Max, "p99": row.P99}
			}
		}
	}
	if err != nil && out.Reason == "" {
		out.Reason = probes.ReasonExecError
	}
	if out.Reason != "" {
		out.Hint = probes.Hint(out.Reason)
	}
	return out
}
