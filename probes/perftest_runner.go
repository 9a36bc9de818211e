package probes

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/probes/parse"
)

// Link is one rail-matched pair: a local device and the peer's device on
// the same rail.
type Link struct {
	Rail       int
	Device     string // local RDMA device
	LocalIP    string
	Peer       string // peer node name
	PeerDevice string
	PeerIP     string
}

// perftestRunner runs ib_write_bw / ib_write_lat clients and responders.
type perftestRunner struct {
	kind     string
	cfg      config.Perftest
	fraction float64 // minimum share of the port rate
	node     NodeInfo
	base     *Baselines
	logger   *slog.Logger
	// tclass is the plan's RoCE traffic class (DSCP<<2 | ECT), passed as perftest's
	// --tclass when haveTClass; rocePrio is the PFC priority RoCE must land on, -1
	// when the plan sets none (then where the bytes went is not judged).
	tclass     int
	haveTClass bool
	rocePrio   int
}

// newPerftestRunner makes a runner for kind with the plan's traffic class.
func newPerftestRunner(kind string, cfg config.Perftest, plan *config.Plan, node NodeInfo, base *Baselines, logger *slog.Logger) *perftestRunner {
	r := &perftestRunner{kind: kind, cfg: cfg, fraction: plan.Expectations.MinBandwidthFraction, node: node, base: base, logger: logger, rocePrio: -1}
	r.tclass, r.haveTClass = plan.Expectations.RoCETrafficClass()
	if p := plan.Expectations.PFCPriority; p != nil {
		r.rocePrio = *p
	}
	return r
}

func (r *perftestRunner) latency() bool { return r.kind == KindIBWriteLat }

// args builds the perftest argv. Server and client must get identical
// options (perftest's own rule); the client adds the server address.
func (r *perftestRunner) args(l Link, gid int, haveGID bool, server bool) []string {
	argv := []string{r.cfg.Command, config.PerftestDeviceFlag, l.Device, "-i", "1", config.PerftestPortFlag, strconv.Itoa(int(r.cfg.PortRange.First) + l.Rail), "-F"}
	if haveGID {
		argv = append(argv, config.PerftestGIDIndexFlag, strconv.Itoa(gid))
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
	if r.cfg.UseCUDA {
		if g, ok := r.nearestGPU(l.Device); ok {
			argv = append(argv, config.PerftestUseCUDAFlag+"="+strconv.Itoa(g))
		}
	}
	argv = append(argv, r.cfg.ExtraArgs...)
	if !server {
		argv = append(argv, l.PeerIP)
	}
	return argv
}

func (r *perftestRunner) gid(l Link) (int, bool) {
	if r.cfg.GIDIndex != nil {
		return *r.cfg.GIDIndex, true
	}
	ip, err := netip.ParseAddr(l.LocalIP)
	if err != nil {
		return 0, false
	}
	return r.node.GIDIndex(l.Device, ip)
}

// connectRetries: a responder restarts after every test, so a client can
// arrive during the gap; only that failure is retried.
const connectRetries = 3

// runClient measures one link. The whole run, retries included, is bounded
// by the configured timeout.
func (r *perftestRunner) runClient(ctx context.Context, l Link) *Result {
	res := &Result{Probe: r.kind, Peer: l.Peer, Device: l.Device, PeerDevice: l.PeerDevice, Start: time.Now()}
	gid, haveGID := r.gid(l)
	argv := r.args(l, gid, haveGID, false)
	res.Command = argv
	deadline := time.Now().Add(r.cfg.Timeout)
	before, counted := r.priorityTraffic(l.Device)
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
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
	res.Duration = time.Since(res.Start)
	res.ExitCode, res.StderrTail = out.ExitCode, out.Stderr
	r.evaluate(res, out)
	if counted {
		if after, ok := r.priorityTraffic(l.Device); ok {
			r.judgePriority(res, before, after)
		}
	}
	if _, ok := r.nearestGPU(l.Device); r.cfg.UseCUDA && !ok {
		res.Warnings = append(res.Warnings, "use_cuda: no GPU known near "+l.Device+" (no NVIDIA GPU, or the gpu collector is off): tested from host memory")
	}
	return res
}

// priorityTraffic reads the device's per-priority counters when the runner can
// judge them: a bandwidth test, a plan with a RoCE priority and a NodeInfo that
// reads them.
func (r *perftestRunner) priorityTraffic(device string) (PriorityTraffic, bool) {
	pc, ok := r.node.(PriorityCounters)
	if !ok || r.latency() || r.rocePrio < 0 {
		return PriorityTraffic{}, false
	}
	return pc.PriorityTraffic(device)
}

// Thresholds of the wrong-priority verdict: the priority counters count whole
// frames (headers on top of the payload perftest counts), so a test on the RoCE
// priority shows at least the bytes it moved there; under half means most went
// elsewhere. Below the floor the test moved too little to tell from other traffic.
const (
	minRoCEPriorityShare = 0.5
	minBytesToJudge      = 64 << 20
)

// judgePriority proves where the bytes of a bandwidth run went: the client is
// the sender of ib_write_bw, so the bytes it moved (the growth of its port's
// port_xmit_data, or the reported bandwidth times the duration) must appear in
// the tx byte counter of the RoCE priority. A run that measured no bandwidth
// (it failed for another reason) is left alone.
func (r *perftestRunner) judgePriority(res *Result, before, after PriorityTraffic) {
	if res.BandwidthBytesPerSecond <= 0 || !after.Have[r.rocePrio] || !before.Have[r.rocePrio] {
		return
	}
	delta := func(p int) uint64 {
		if after.TX[p] < before.TX[p] {
			return 0 // counter reset
		}
		return after.TX[p] - before.TX[p]
	}
	var anyPrio uint64
	for p := 0; p < 8; p++ {
		anyPrio += delta(p)
	}
	var moved uint64
	switch {
	case before.HaveRDMA && after.HaveRDMA && after.RDMATX > before.RDMATX:
		moved = after.RDMATX - before.RDMATX
	case anyPrio > 0 && r.cfg.Duration > 0:
		// No RDMA data counters: what perftest says it sent.
		moved = uint64(res.BandwidthBytesPerSecond * r.cfg.Duration.Seconds())
	default:
		// Not one counter moved while the test ran: the counters are not live (a
		// replayed node), so there is nothing to prove either way.
		return
	}
	if moved < minBytesToJudge {
		return
	}
	share := float64(delta(r.rocePrio)) / float64(moved)
	res.RoCEPriorityShare = &share
	if share >= minRoCEPriorityShare {
		return
	}
	top := -1
	var topBytes uint64
	for p := 0; p < 8; p++ {
		if p != r.rocePrio && after.Have[p] && delta(p) > topBytes {
			top, topBytes = p, delta(p)
		}
	}
	msg := fmt.Sprintf("the test sent %d bytes but priority %d (PFC, RoCE) counted %d (%.0f%%)", moved, r.rocePrio, delta(r.rocePrio), 100*share)
	if top >= 0 {
		res.CarriedOnPriority = &top
		msg += fmt.Sprintf("; priority %d carried %d", top, topBytes)
	}
	res.Warnings = append(res.Warnings, msg)
	res.fail(ReasonWrongPriority)
}

// gpuPlacement is the optional part of NodeInfo that knows the GPUs.
type gpuPlacement interface {
	// NearestGPU is the index (nvidia-smi / CUDA_DEVICE_ORDER=PCI_BUS_ID
	// order) of the GPU nearest the RDMA device in the PCIe tree.
	NearestGPU(device string) (int, bool)
}

func (r *perftestRunner) nearestGPU(device string) (int, bool) {
	if p, ok := r.node.(gpuPlacement); ok {
		return p.NearestGPU(device)
	}
	return 0, false
}

func perftestOutcome(out execResult) string {
	parsed, err := parse.Perftest(bytes.NewReader(combined(out)))
	switch {
	case parsed != nil && parsed.Reason != "":
		return parsed.Reason
	case err != nil:
		return ReasonExecError
	}
	return ""
}

// combined joins stdout and stderr: perftest prints results on stdout and
// most errors on stderr, and the parser classifies line by line.
func combined(out execResult) []byte {
	b := make([]byte, 0, len(out.Stdout)+len(out.Stderr)+1)
	b = append(b, out.Stdout...)
	b = append(b, '\n')
	return append(b, out.Stderr...)
}

func (r *perftestRunner) evaluate(res *Result, out execResult) {
	if res.failedToRun(out) {
		return
	}
	parsed, err := parse.Perftest(bytes.NewReader(combined(out)))
	if parsed != nil {
		res.Warnings = parsed.Warnings
	}
	if reason := parse.PerftestFailureReason(out.ExitCode, parsed, err); reason != "" {
		res.fail(reason)
		return
	}
	if r.latency() {
		if len(parsed.LatencyRows) == 0 {
			res.fail(ReasonExecError)
			return
		}
		row := parsed.LatencyRows[len(parsed.LatencyRows)-1]
		res.LatencySeconds = map[string]float64{"avg": row.Avg, "min": row.Min, "max": row.Max}
		if row.P99 > 0 {
			res.LatencySeconds["p99"] = row.P99
		}
		res.Success = true
		return
	}
	res.BandwidthBytesPerSecond = parsed.BandwidthBytesPerSecond
	if rate, ok := r.node.PortRateBitsPerSecond(res.Device); ok {
		res.ExpectedBytesPerSecond = r.fraction * rate / 8
	}
	judgeBandwidth(res, r.base, r.logger)
}

// responder keeps one perftest server listening for a local device.
// perftest servers have no accept timeout and exit after one test, so the
// responder restarts the server after every test and kills one that nobody
// connected to within the idle timeout (a hung server would otherwise
// hold the port forever).
type responder struct {
	runner *perftestRunner
	link   Link
	locks  *deviceLocks
	logger *slog.Logger
	// onServed receives the output of every test a client ran against
	// this responder: perftest prints the same report on both sides.
	onServed func(l Link, out execResult, connectedAt time.Time, completed bool)
	// served counts tests a client ran against this responder; only
	// run's goroutine touches it.
	served int
}

// connectedMarker: perftest prints the queue pair addresses once a client
// has connected and the out-of-band exchange is done.
var connectedMarker = []byte("remote address")

func (rs *responder) run(ctx context.Context) {
	var backoff restartBackoff
	for ctx.Err() == nil {
		gid, haveGID := rs.runner.gid(rs.link)
		argv := rs.runner.args(rs.link, gid, haveGID, true)
		connected := make(chan struct{})
		var once sync.Once
		var seen []byte
		p, err := startCommand(ctx, argv, nil, func(b []byte) {
			seen = append(seen, b...)
			if bytes.Contains(seen, connectedMarker) {
				once.Do(func() { close(connected) })
			}
			if len(seen) > 64<<10 {
				seen = seen[len(seen)-4096:]
			}
		})
		if err != nil {
			delay := backoff.failed()
			rs.logger.Warn("probe responder cannot start", "device", rs.link.Device, "err", err, "retry_in", delay)
			if !sleepCtx(ctx, delay) {
				return
			}
			continue
		}
		idle := time.NewTimer(rs.runner.cfg.Timeout)
		locked := false
		finished := false
		var connectedAt time.Time
		overran := false
		for !finished {
			select {
			case <-p.done: // also when ctx ends: that kills the process
				finished = true
			case <-idle.C:
				// Nobody connected (or a test overran): restart it.
				overran = !connectedAt.IsZero()
				p.kill()
				<-p.done
				finished = true
			case <-connected:
				connected = nil
				connectedAt = time.Now()
				locked = rs.locks.tryLock(rs.link.Device)
				idle.Reset(rs.runner.cfg.Duration + 30*time.Second)
				rs.served++
			}
		}
		idle.Stop()
		if locked {
			rs.locks.unlock(rs.link.Device)
		}
		out := p.result()
		if !connectedAt.IsZero() && ctx.Err() == nil && rs.onServed != nil {
			out.TimedOut = overran
			rs.onServed(rs.link, out, connectedAt, !overran)
		}
		if p.endedBy == nil && connectedAt.IsZero() {
			// A perftest server waits for its client; one that ends on its
			// own without one (no device, port in use, a wrapper that exits
			// 0 at once) was restarted 1,511 times in 10 s.
			delay := backoff.failed()
			rs.logger.Warn("probe responder exited without serving a test; restarting after a delay", "device", rs.link.Device,
				"exit", out.ExitCode, "ran", time.Since(p.begin).Round(time.Millisecond), "stderr", lastLine(out.Stderr), "retry_in", delay)
			if !sleepCtx(ctx, delay) {
				return
			}
			continue
		}
		backoff.reset()
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// deviceLocks makes sure two locally started probes never share a device.
type deviceLocks struct {
	mu   sync.Mutex
	busy map[string]bool
}

func newDeviceLocks() *deviceLocks { return &deviceLocks{busy: map[string]bool{}} }

func (d *deviceLocks) tryLock(devices ...string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, dev := range devices {
		if d.busy[dev] {
			return false
		}
	}
	for _, dev := range devices {
		d.busy[dev] = true
	}
	return true
}

// lock waits up to wait for every device to be free.
func (d *deviceLocks) lock(ctx context.Context, wait time.Duration, devices ...string) bool {
	deadline := time.Now().Add(wait)
	for {
		if d.tryLock(devices...) {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
}

func (d *deviceLocks) unlock(devices ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, dev := range devices {
		delete(d.busy, dev)
	}
}
