package probes

import (
	"bytes"
	"context"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/probes/parse"
)

// perftestRunner runs ib_write_bw / ib_write_lat clients; the responders
// (responder.go) run its servers with the same options.
type perftestRunner struct {
	probeKind string
	cfg       config.Perftest
	fraction  float64 // minimum share of the port rate
	// tclass is the plan's RoCE traffic class (DSCP<<2 | ECT), passed as perftest's
	// --tclass when haveTClass; rocePrio is the PFC priority RoCE must land on, -1
	// when the plan sets none (then where the bytes went is not judged).
	tclass     int
	haveTClass bool
	rocePrio   int
	// retryPause is the pause before a refused connection is tried again.
	retryPause time.Duration
}

// newPerftestRunner makes a runner for kind with the plan's traffic class.
func newPerftestRunner(kind string, cfg config.Perftest, plan *config.Plan) *perftestRunner {
	r := &perftestRunner{probeKind: kind, cfg: cfg, fraction: plan.Expectations.MinBandwidthFraction, rocePrio: -1, retryPause: 2 * time.Second}
	r.tclass, r.haveTClass = plan.Expectations.RoCETrafficClass()
	if p := plan.Expectations.PFCPriority; p != nil {
		r.rocePrio = *p
	}
	return r
}

func (r *perftestRunner) kind() string { return r.probeKind }

// readsNode: the GID index of the link's address, the port rate the floor is
// a share of, the GPU nearest the NIC for --use_cuda_bus_id, and the load gate.
func (r *perftestRunner) readsNode() bool { return true }

func (r *perftestRunner) latency() bool { return r.probeKind == KindIBWriteLat }

// perftestPlacement is what the node says about running perftest on a link:
// the GID index of its address and the GPU nearest its device.
type perftestPlacement struct {
	gid     int
	haveGID bool
	// gpu is the PCI address of the GPU nearest the device, "" when none is known.
	gpu string
}

// placement reads the link's GID index (the plan's, else the device's RoCE v2
// GID carrying the link's address) and, with use_cuda, its nearest GPU.
func (r *perftestRunner) placement(snap *node.Snapshot, l Link) perftestPlacement {
	var p perftestPlacement
	if r.cfg.GIDIndex != nil {
		p.gid, p.haveGID = *r.cfg.GIDIndex, true
	} else if ip, err := netip.ParseAddr(l.LocalIP); err == nil {
		p.gid, p.haveGID = gidIndex(snap, l.Device, ip)
	}
	if g := nearestGPU(snap, l.Device); r.cfg.UseCUDA && g != nil {
		p.gpu = g.Place.Address()
	}
	return p
}

// args builds the perftest argv. Server and client must get identical
// options (perftest's own rule); the client adds the server address.
func (r *perftestRunner) args(l Link, at perftestPlacement, server bool) []string {
	return r.argsOnPort(l, at, server, int(r.cfg.PortRange.First)+l.Rail)
}

// argsOnPort is args with the TCP port of perftest's out-of-band exchange
// given: the incast runs several servers per rail.
func (r *perftestRunner) argsOnPort(l Link, at perftestPlacement, server bool, port int) []string {
	argv := []string{r.cfg.Command, config.PerftestDeviceFlag, l.Device, "-i", "1", config.PerftestPortFlag, strconv.Itoa(port), "-F"}
	if at.haveGID {
		argv = append(argv, config.PerftestGIDIndexFlag, strconv.Itoa(at.gid))
	}
	if r.cfg.MessageSize > 0 {
		argv = append(argv, config.PerftestSizeFlag, strconv.FormatInt(int64(r.cfg.MessageSize), 10))
	}
	if !r.latency() {
		argv = append(argv, "--report_gbits")
		if r.cfg.QueuePairs > 0 {
			argv = append(argv, config.PerftestQueuePairsFlag, strconv.Itoa(r.cfg.QueuePairs))
		}
	}
	if r.cfg.Duration > 0 {
		argv = append(argv, config.PerftestDurationFlag, strconv.Itoa(int(r.cfg.Duration.Round(time.Second)/time.Second)))
	}
	if r.haveTClass {
		// The GRH traffic class of every packet (perftest: "Set the Traffic Class in
		// GRH"): without it the test runs on whatever class the device defaults to,
		// not the one NCCL is told to use.
		argv = append(argv, config.PerftestTrafficClassFlag+"="+strconv.Itoa(r.tclass))
	}
	if r.cfg.UseCUDA && at.gpu != "" {
		// By PCI address: --use_cuda=<n> is CUDA's device order (fastest first
		// unless CUDA_DEVICE_ORDER=PCI_BUS_ID), which need not be the PCI order
		// the node's GPU indices follow. perftest hands it to
		// cuDeviceGetByPCIBusId, which takes sysfs' domain:bus:device.function.
		argv = append(argv, config.PerftestUseCUDABusIDFlag+"="+at.gpu)
	}
	argv = append(argv, r.cfg.ExtraArgs...)
	if !server {
		argv = append(argv, l.PeerIP)
	}
	return argv
}

// connectRetries: a responder restarts after every test, so a client can
// arrive during the gap; only that failure is retried.
const connectRetries = 3

// probe measures one link as the client. The whole run, retries included,
// is bounded by the configured timeout.
func (r *perftestRunner) probe(ctx context.Context, t target, before *node.Snapshot, res *Result) verdict {
	at := r.placement(before, t.Link)
	argv := r.args(t.Link, at, false)
	res.Command = argv
	deadline := time.Now().Add(r.cfg.Timeout)
	var out execResult
	for attempt := 0; ; attempt++ {
		remaining := time.Until(deadline)
		if remaining <= 0 {
			out.TimedOut = true
			break
		}
		out = runCommand(ctx, remaining, argv, nil, nil)
		if out.TimedOut || out.Err != nil || ctx.Err() != nil || attempt+1 >= connectRetries {
			break
		}
		if perftestOutcome(out) != ReasonConnectRefused {
			break
		}
		sleepCtx(ctx, r.retryPause)
	}
	res.ExitCode, res.StderrTail = out.ExitCode, out.Stderr
	v := r.evaluate(res, out, before)
	if r.cfg.UseCUDA && at.gpu == "" {
		res.Warnings = append(res.Warnings, "use_cuda: no GPU known near "+t.Device+" (no NVIDIA GPU, or the gpu collector is off): tested from host memory")
	}
	return v
}

func perftestOutcome(out execResult) string {
	parsed, err := parse.Perftest(bytes.NewReader(out.combined()))
	switch {
	case parsed != nil && parsed.Reason != "":
		return parsed.Reason
	case err != nil:
		return ReasonExecError
	}
	return ""
}

// evaluate reads what one perftest process printed, on either end of the
// link (perftest prints the same report on both): the latency statistics, or
// the bandwidth with its floor, the plan's share of the port rate in snap.
func (r *perftestRunner) evaluate(res *Result, out execResult, snap *node.Snapshot) verdict {
	if v, didNotRun := failedToRun(res, out); didNotRun {
		return v
	}
	parsed, err := parse.Perftest(bytes.NewReader(out.combined()))
	if parsed != nil {
		res.Warnings = parsed.Warnings
	}
	if reason := parse.PerftestFailureReason(out.ExitCode, parsed, err); reason != "" {
		return failed(reason)
	}
	if r.latency() {
		if len(parsed.LatencyRows) == 0 {
			return failed(ReasonExecError)
		}
		row := parsed.LatencyRows[len(parsed.LatencyRows)-1]
		res.Latency = &Latency{Seconds: map[string]float64{"avg": row.Avg, "min": row.Min, "max": row.Max}}
		if row.P99 > 0 {
			res.Latency.Seconds["p99"] = row.P99
		}
		return verdict{}
	}
	res.Bandwidth = &Bandwidth{BytesPerSecond: parsed.BandwidthBytesPerSecond}
	if rate, ok := portRate(snap, res.Device); ok {
		res.Bandwidth.ExpectedBytesPerSecond = r.fraction * rate / 8
	}
	return verdict{}
}

// perftestMessageBytes is perftest's default message size of a latency test.
const perftestMessageBytes = 2

// ownTraffic bounds what the client moved: a bandwidth test sends at most its
// average over the longer of the test's duration and the run (perftest's
// warm-up margins lie inside both) and gets acknowledgements back, both ways
// with -b; a latency test has one message in flight, at most one message per
// average latency each way.
func (r *perftestRunner) ownTraffic(_ target, res *Result, elapsed time.Duration) traffic {
	if r.latency() {
		if res.Latency == nil || res.Latency.Seconds["avg"] <= 0 {
			return traffic{}
		}
		size := float64(perftestMessageBytes)
		if r.cfg.MessageSize > 0 {
			size = float64(r.cfg.MessageSize)
		}
		each := size / res.Latency.Seconds["avg"] * elapsed.Seconds()
		return traffic{tx: each, rx: each}
	}
	sent := res.measuredBandwidth() * max(elapsed, r.cfg.Duration).Seconds()
	if slices.Contains(r.cfg.ExtraArgs, "-b") || slices.Contains(r.cfg.ExtraArgs, "--bidirectional") {
		return traffic{tx: sent, rx: sent}
	}
	return traffic{tx: sent, rx: ackShare * sent}
}

// wantsAfter: where a bandwidth run's bytes went is proved when the plan
// names the RoCE priority, the run measured, and the node reads that
// priority's counters.
func (r *perftestRunner) wantsAfter(before *node.Snapshot, res *Result) bool {
	if r.latency() || r.rocePrio < 0 || res.measuredBandwidth() <= 0 {
		return false
	}
	_, ok := priorityTrafficOf(before, res.Device)
	return ok
}

func (r *perftestRunner) judgeAfter(before, after *node.Snapshot, res *Result) verdict {
	pb, ok1 := priorityTrafficOf(before, res.Device)
	pa, ok2 := priorityTrafficOf(after, res.Device)
	if !ok1 || !ok2 {
		return verdict{}
	}
	return judgePriority(res, pb, pa, r.rocePrio, r.cfg.Duration)
}
