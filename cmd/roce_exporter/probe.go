package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/alecthomas/kingpin/v2"

	"github.com/roce-exporter/roce_exporter/collector"
	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/internal/safefile"
	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/pipeline"
	"github.com/roce-exporter/roce_exporter/probes"
	"github.com/roce-exporter/roce_exporter/probes/parse"
	"github.com/roce-exporter/roce_exporter/reader"
)

type probeCommand struct {
	a        *app
	runCmd   *kingpin.CmdClause
	parseCmd *kingpin.CmdClause
	runKind  *string
	runPeer  *string
	// runReceiver and runSenders name an incast's group.
	runReceiver *string
	runSenders  *[]string
	parseKind   *string
	parseFile   *string
	// parseLargeMessage is the NCCL large-message threshold for parse,
	// which has no plan to read it from.
	parseLargeMessage *string
	stateDir          *string
	paths             *collector.PathFlags
	judgeCmd          *kingpin.CmdClause
	judgeURL          *string
	judgePrometheus   *string
}

func newProbeCommand(a *app) *probeCommand {
	p := &probeCommand{a: a}
	cmd := a.kp.Command("probe", "Run a fabric probe now, or parse a saved probe output.")
	p.runCmd = cmd.Command("run", "Run one probe now from this node and print the results as JSON (perftest probes need the peers' exporters serving their responders; an incast needs the same command run on the receiver and every sender at about the same time, e.g. with pdsh).")
	p.runKind = p.runCmd.Arg("kind", "ib_write_bw, ib_write_lat, nccl, ping or incast.").Required().Enum(probes.KindIBWriteBW, probes.KindIBWriteLat, probes.KindNCCL, probes.KindPing, probes.KindIncast)
	p.runPeer = p.runCmd.Flag("peer", "Only probe this peer node (default: every peer).").String()
	p.runReceiver = p.runCmd.Flag("receiver", "incast: the node that receives (default: this node). Run the same command on it and on every sender.").String()
	p.runSenders = p.runCmd.Flag("senders", "incast: the nodes that write into the receiver, comma-separated or repeated (default: the probes.incast.senders nodes after the receiver in name order).").Strings()
	p.stateDir = stateDirFlag(p.runCmd)
	p.paths = collector.RegisterPathFlags(p.runCmd)
	p.parseCmd = cmd.Command("parse", "Parse a saved ib_write_bw / ib_write_lat / nccl-tests output (text or JSON) and print JSON.")
	p.parseKind = p.parseCmd.Arg("kind", "ib_write_bw, ib_write_lat or nccl.").Required().Enum(probes.KindIBWriteBW, probes.KindIBWriteLat, probes.KindNCCL)
	p.parseFile = p.parseCmd.Arg("file", "The saved output; - for standard input.").Required().String()
	p.parseLargeMessage = p.parseCmd.Flag("large-message-bytes", "nccl: judge the best bus bandwidth among message sizes from this one up (the largest size if none reaches it), as the plan's probes.nccl.large_message_bytes does. K, M, G are powers of 1024.").
		Default(config.DefaultNCCLLargeMessageBytes.String()).String()
	p.judgeCmd = cmd.Command("judge", "Print this node's probe judgement from the running exporter: per rail the distinct peers its fresh results failed and passed with, and whether that points at a NIC, the node or a peer/path. Exit 1 when a rail fails.")
	p.judgeURL = p.judgeCmd.Flag("url", "The running exporter's metrics.").Default("http://localhost:14791/metrics").String()
	p.judgePrometheus = p.judgeCmd.Flag("prometheus.url", "A Prometheus that evaluates the fleet's alerts: say whether the failing rails sit under a switch its rules name RoCEProbeSuspectSwitch (this node is then that switch's victim). Optional.").Default("").String()
	return p
}

func stateDirFlag(cmd *kingpin.CmdClause) *string {
	return cmd.Flag("probes.state-dir", "Directory for probe baselines (overrides the plan's probes.state_dir).").PlaceHolder("DIR").String()
}

// stateDirFor picks the baseline directory: the flag, else the plan.
func stateDirFor(flag string, plan *config.Plan) string {
	if flag != "" {
		return flag
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
	sources := []string{node.SourceRDMA}
	if *p.runKind == probes.KindIncast {
		// Pause frames and port drops are ethtool's.
		sources = append(sources, node.SourceEthtool)
	}
	ropts, err := p.paths.ReaderOptions(sources...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter: %v\n", err)
		return 2
	}
	rd, err := reader.New(ropts, p.a.logger)
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter: %v\n", err)
		return 2
	}
	defer rd.Close()
	pl, err := pipeline.New(pipeline.Options{Reader: rd})
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter: %v\n", err)
		return 2
	}
	sched, err := probes.New(probes.Options{
		Plan: plan, Self: config.SelfName(*p.a.nodeName), Node: pipelineNode{pl},
		StateDir: stateDirFor(*p.stateDir, plan), Logger: p.a.logger,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var results []*probes.Result
	if *p.runKind == probes.KindIncast {
		results, err = p.runIncast(ctx, sched, plan)
	} else {
		results, err = sched.RunOnce(ctx, *p.runKind, *p.runPeer)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter: %v\n", err)
		return 2
	}
	enc := newJSONEncoder(os.Stdout)
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

// runIncast runs this node's side of the incast the flags name.
func (p *probeCommand) runIncast(ctx context.Context, sched *probes.Scheduler, plan *config.Plan) ([]*probes.Result, error) {
	receiver := *p.runReceiver
	if receiver == "" {
		receiver = config.SelfName(*p.a.nodeName)
	}
	var senders []string
	for _, s := range *p.runSenders {
		for _, name := range strings.Split(s, ",") {
			if name = strings.TrimSpace(name); name != "" {
				senders = append(senders, name)
			}
		}
	}
	if len(senders) == 0 {
		senders = probes.IncastSenders(plan, receiver, plan.Probes.Incast.Senders)
	}
	fmt.Fprintf(os.Stderr, "roce_exporter: incast of %s into %s; run `roce_exporter probe run incast --receiver %s --senders %s` on each of them at the same time (pdsh -w %s,%s ...)\n",
		strings.Join(senders, ", "), receiver, receiver, strings.Join(senders, ","), receiver, strings.Join(senders, ","))
	return sched.RunIncast(ctx, receiver, senders)
}

// parsedOutput is the stable JSON of `probe parse`. Measured values are
// printed even when zero; null (or an absent NCCL-only key) means the
// output did not measure it.
type parsedOutput struct {
	Kind string `json:"kind"`
	// BandwidthBytesPerSecond is the number a probe is judged on: perftest's
	// BW average at the largest size; for NCCL the large-message bus
	// bandwidth, never nccl-tests' average over all sizes.
	BandwidthBytesPerSecond *float64 `json:"bandwidth_bytes_per_second"`
	// NCCL: the size the bandwidth was measured at, the threshold it was
	// picked with, whether no size reached it, and nccl-tests' average.
	BandwidthMessageBytes             *uint64            `json:"bandwidth_message_bytes,omitempty"`
	LargeMessageBytes                 uint64             `json:"large_message_bytes,omitempty"`
	LargeMessageFallback              *bool              `json:"large_message_fallback,omitempty"`
	AverageBusBandwidthBytesPerSecond *float64           `json:"average_bus_bandwidth_bytes_per_second,omitempty"`
	LatencySeconds                    map[string]float64 `json:"latency_seconds,omitempty"`
	// Sizes holds every NCCL result row, by message size.
	Sizes        []ncclSizeOutput `json:"sizes,omitempty"`
	WrongResults *int64           `json:"wrong_results"`
	Rows         int              `json:"rows"`
	Warnings     []string         `json:"warnings,omitempty"`
	Errors       []string         `json:"errors,omitempty"`
	Reason       string           `json:"reason"`
	Hint         string           `json:"hint,omitempty"`
	// NCCLTransport is NCCL's own transport report (NCCL_DEBUG=INFO lines in
	// the output): network, HCAs, channels with GPUDirect RDMA.
	NCCLTransport *parse.Transport `json:"nccl_transport,omitempty"`
}

// ncclPlacementOutput is one placement of an NCCL row. Wrong is null when
// nccl-tests did not count wrong elements (-c 0, or the old format, which
// printed MaxError instead).
type ncclPlacementOutput struct {
	TimeSeconds                 float64  `json:"time_seconds"`
	AlgorithmBandwidthPerSecond float64  `json:"algorithm_bandwidth_bytes_per_second"`
	BusBandwidthPerSecond       float64  `json:"bus_bandwidth_bytes_per_second"`
	Wrong                       *int64   `json:"wrong"`
	MaxError                    *float64 `json:"max_error,omitempty"`
}

// ncclSizeOutput is one NCCL row: the in-place numbers (the ones nccl-tests
// averages and the exporter exports by size), and the out-of-place ones.
type ncclSizeOutput struct {
	Bytes uint64 `json:"bytes"`
	Count uint64 `json:"count"`
	Type  string `json:"type"`
	RedOp string `json:"redop,omitempty"`
	Root  *int   `json:"root,omitempty"`
	ncclPlacementOutput
	OutOfPlace *ncclPlacementOutput `json:"out_of_place,omitempty"`
}

func (p *probeCommand) parse() int {
	largeMessage, err := config.ParseSizeBytes(*p.parseLargeMessage)
	if err != nil || largeMessage < 1 {
		fmt.Fprintf(os.Stderr, "roce_exporter: --large-message-bytes: %v\n", err)
		return 2
	}
	var data []byte
	// kingpin hands a lone "-" argument over as "".
	name := *p.parseFile
	if name == "-" || name == "" {
		name = "standard input"
		data, err = safefile.ReadAll(os.Stdin, parse.MaxOutputBytes)
	} else {
		var f *os.File
		if f, err = os.Open(name); err == nil {
			data, err = safefile.ReadAll(f, parse.MaxOutputBytes)
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter: %v\n", err)
		return 2
	}
	out, parseErr := parseProbeOutput(*p.parseKind, data, uint64(largeMessage))
	switch out.Reason {
	case probes.ReasonNotToolOutput:
		fmt.Fprintf(os.Stderr, "roce_exporter: %s is not %s output: nothing in it is the program's own\n", name, toolOf(*p.parseKind))
	case probes.ReasonParseError:
		fmt.Fprintf(os.Stderr, "roce_exporter: could not parse %s as %s output: %v\n", name, *p.parseKind, parseErr)
	}
	newJSONEncoder(os.Stdout).Encode(out)
	if out.Reason != "" {
		return 1
	}
	return 0
}

// toolOf names the program whose output a probe kind parses.
func toolOf(kind string) string {
	if kind == probes.KindNCCL {
		return "nccl-tests"
	}
	return kind
}

// parseProbeOutput accepts text or JSON, telling them apart by content. It
// returns the parser's error too, for the message on stderr.
func parseProbeOutput(kind string, data []byte, largeMessage uint64) (parsedOutput, error) {
	out := parsedOutput{Kind: kind}
	isJSON := json.Valid(data) || bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("{"))
	var err error
	switch kind {
	case probes.KindNCCL:
		var r *parse.NCCLResult
		if isJSON {
			r, err = parse.NCCLJSON(data)
		} else {
			r, err = parse.NCCL(bytes.NewReader(data))
			if tr := parse.NCCLTransport(string(data)); tr.Reported() {
				out.NCCLTransport = &tr
			}
		}
		if r != nil {
			out.fillNCCL(r, largeMessage)
		}
		// A run that passed everything else but moved its data over TCP
		// sockets fails on that, as the probe's own verdict does.
		if out.NCCLTransport != nil && out.NCCLTransport.SocketFallback() && out.Reason == "" {
			out.Reason, out.Hint = probes.ReasonSocketFallback, probes.Hint(probes.ReasonSocketFallback)
		}
	default:
		var r *parse.PerftestResult
		if isJSON {
			r, err = parse.PerftestJSON(data)
		} else {
			r, err = parse.Perftest(bytes.NewReader(data))
		}
		if r != nil {
			out.fillPerftest(r)
		}
	}
	if err != nil && out.Reason == "" {
		// Only reading the input can fail without a reason (it is too
		// large): nothing of it was parsed.
		out.Reason = probes.ReasonParseError
	}
	if out.Reason != "" {
		out.Hint = probes.Hint(out.Reason)
	}
	return out, err
}

func (out *parsedOutput) fillPerftest(r *parse.PerftestResult) {
	out.Rows = len(r.Rows) + len(r.LatencyRows)
	out.Warnings, out.Errors, out.Reason = r.Warnings, r.Errors, r.Reason
	if len(r.Rows) > 0 {
		bw := r.BandwidthBytesPerSecond
		out.BandwidthBytesPerSecond = &bw
	}
	if n := len(r.LatencyRows); n > 0 {
		row := r.LatencyRows[n-1]
		out.LatencySeconds = map[string]float64{"avg": roundDigits(row.Avg)}
		// In duration mode (-D) perftest prints the average only; the other
		// statistics are not zero, they were not measured.
		for stat, v := range map[string]float64{"min": row.Min, "max": row.Max, "p99": row.P99} {
			if v > 0 {
				out.LatencySeconds[stat] = roundDigits(v)
			}
		}
	}
}

func (out *parsedOutput) fillNCCL(r *parse.NCCLResult, largeMessage uint64) {
	out.Rows, out.Warnings, out.Errors, out.Reason = len(r.Rows), r.Warnings, r.Errors, r.Reason
	out.LargeMessageBytes = largeMessage
	if lm, ok := r.LargeMessageBusBandwidth(largeMessage); ok {
		out.BandwidthBytesPerSecond, out.BandwidthMessageBytes, out.LargeMessageFallback = &lm.BytesPerSecond, &lm.SizeBytes, &lm.Fallback
		if lm.Fallback {
			out.Warnings = append(out.Warnings, parse.NCCLFallbackNote(largeMessage, lm.SizeBytes))
		}
	}
	if r.HasAverage {
		avg := r.AvgBusBandwidthBytesPerSecond
		out.AverageBusBandwidthBytesPerSecond = &avg
	}
	if len(r.Rows) > 0 {
		wrong := r.WrongResults()
		out.WrongResults = &wrong
	}
	for _, row := range r.Rows {
		size := ncclSizeOutput{Bytes: row.SizeBytes, Count: row.Count, Type: row.Type, RedOp: row.RedOp,
			ncclPlacementOutput: ncclPlacement(row.InPlace)}
		if row.Root >= 0 {
			size.Root = &row.Root
		}
		if oop := ncclPlacement(row.OutOfPlace); row.OutOfPlace.TimeSeconds > 0 {
			size.OutOfPlace = &oop
		}
		out.Sizes = append(out.Sizes, size)
	}
	// Numeric order; rows of one size (-d all, -o all) keep their order.
	slices.SortStableFunc(out.Sizes, func(a, b ncclSizeOutput) int { return cmp.Compare(a.Bytes, b.Bytes) })
}

func ncclPlacement(m parse.NCCLMeasurement) ncclPlacementOutput {
	p := ncclPlacementOutput{TimeSeconds: roundDigits(m.TimeSeconds), AlgorithmBandwidthPerSecond: m.AlgBWBytesPerSecond, BusBandwidthPerSecond: m.BusBWBytesPerSecond}
	if m.Wrong >= 0 {
		p.Wrong = &m.Wrong
	}
	if m.MaxError >= 0 {
		p.MaxError = &m.MaxError
	}
	return p
}

// roundDigits drops the binary noise of a µs to s conversion (26.95e-6 would
// print as 0.000026949999999999998): nccl-tests prints at most 6 digits.
func roundDigits(v float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	if err != nil {
		return v
	}
	return r
}
