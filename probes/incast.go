package probes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/probes/parse"
	"github.com/roce-exporter/roce_exporter/probes/schedule"
)

// The incast probe: the senders of a group (schedule.IncastSchedule, or the
// operator's `probe run incast`) write at full rate into the receiver's NIC on
// every common rail at once, one ib_write_bw client each, into one
// ib_write_bw server per sender on the receiver (a perftest server accepts
// exactly one client). The switch port towards the receiver is then
// oversubscribed senders:1 and must pause the senders (PFC) or mark the
// packets (ECN) rather than drop them. Both sides read their node before and
// after the run and judge what their own port counted (incast_judge.go); the
// receiver cannot read the senders' counters nor they its, so each result
// names what it could not see and where that is.

// incastRunner is one side of the incast: the receiver's servers or a
// sender's client, with the incast's perftest settings.
type incastRunner struct {
	perf     *perftestRunner
	receiver bool
	// self is this node's plan name (the receiver's name in its own result).
	self string
	want incastExpect
	// startWindow is how long a sender keeps trying a receiver that refuses
	// (its servers start a moment later, or the operator started the
	// receiver's `probe run incast` after this one); retryPause is the pause
	// between tries.
	startWindow, retryPause time.Duration
}

// incastHeadStart is how long a sender waits for the receiver's servers to
// listen after the agreed start.
const incastHeadStart = 2 * time.Second

func newIncastRunner(plan *config.Plan, self string, receiver bool) *incastRunner {
	in := plan.Probes.Incast
	r := &incastRunner{perf: newPerftestRunner(KindIncast, in.Perftest, plan), receiver: receiver, self: self, retryPause: time.Second}
	r.want.rocePrio = r.perf.rocePrio
	r.want.ecn = plan.Expectations.ECN == nil || *plan.Expectations.ECN
	// Room for the test itself after the last try: the server it reaches is
	// killed at the receiver's timeout.
	r.startWindow = min(30*time.Second, max(3*time.Second, in.Timeout-in.Duration-incastHeadStart-5*time.Second))
	return r
}

func (r *incastRunner) kind() string { return KindIncast }

// readsNode: the counters the verdict is read from, the GID index, the
// port rate, and the load gate.
func (r *incastRunner) readsNode() bool { return true }

// incastPort is the receiver's server for sender slot on rail, of n senders.
func (r *incastRunner) incastPort(rail, slot, n int) int {
	return int(r.perf.cfg.PortRange.First) + rail*n + slot
}

func (r *incastRunner) probe(ctx context.Context, t target, before *node.Snapshot, res *Result) verdict {
	want := r.want
	want.senders = t.nodes
	if r.receiver {
		want.receiver = r.self
		res.Incast = &Incast{Role: IncastReceiver, Receiver: r.self, Senders: t.nodes, want: want}
		return r.serve(ctx, t, before, res)
	}
	want.receiver = t.Peer
	res.Incast = &Incast{Role: IncastSender, Receiver: t.Peer, Senders: t.nodes, want: want}
	return r.send(ctx, t, before, res)
}

// incastServer is one of the receiver's perftest servers.
type incastServer struct {
	mu        sync.Mutex
	seen      []byte
	connected time.Time
	ended     time.Time
	out       execResult
}

func (s *incastServer) watch(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.connected.IsZero() {
		return
	}
	s.seen = append(s.seen, b...)
	if bytes.Contains(s.seen, connectedMarker) {
		s.connected, s.seen = time.Now(), nil
	} else if len(s.seen) > 64<<10 {
		s.seen = s.seen[len(s.seen)-4096:]
	}
}

func (s *incastServer) connectedAt() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connected
}

// serve runs one server per sender on the rail and waits for them: each
// ends after its sender's test; once one has, the servers no sender reached
// are stopped (a sender that comes later would not write at the same time).
func (r *incastRunner) serve(ctx context.Context, t target, before *node.Snapshot, res *Result) verdict {
	in := res.Incast
	if before == nil {
		res.skip("the node could not be read before the incast: its counters are what an incast is judged on")
		return verdict{}
	}
	at := r.perf.placement(before, t.Link)
	ctx, cancel := context.WithTimeoutCause(ctx, r.perf.cfg.Timeout, errTimeout)
	defer cancel()
	servers := make([]*incastServer, len(t.nodes))
	procs := make([]*process, len(t.nodes))
	for k := range t.nodes {
		argv := r.perf.argsOnPort(t.Link, at, true, r.incastPort(t.Rail, k, len(t.nodes)))
		if k == 0 {
			res.Command = argv
		}
		servers[k] = &incastServer{}
		p, err := startCommand(ctx, argv, nil, servers[k].watch)
		if err != nil {
			cancel()
			for _, q := range procs[:k] {
				<-q.done
			}
			res.StderrTail = err.Error()
			return failed(ReasonExecError)
		}
		procs[k] = p
	}
	ended := make(chan int, len(procs))
	for k, p := range procs {
		go func() {
			<-p.done
			servers[k].ended = time.Now()
			servers[k].out = p.result()
			ended <- k
		}()
	}
	for remaining := len(procs); remaining > 0; remaining-- {
		k := <-ended
		if !servers[k].connectedAt().IsZero() {
			for j, s := range servers {
				if s.connectedAt().IsZero() {
					procs[j].kill()
				}
			}
		}
	}
	var runFailed string
	var firstEnd, lastStart time.Time
	var tails []string
	for k, s := range servers {
		start := s.connectedAt()
		if start.IsZero() {
			continue
		}
		in.SendersConnected++
		if start.After(lastStart) {
			lastStart = start
		}
		if firstEnd.IsZero() || s.ended.Before(firstEnd) {
			firstEnd = s.ended
		}
		if v, didNotRun := failedToRun(res, s.out); didNotRun {
			runFailed = cmpReason(runFailed, v.reason)
			continue
		}
		parsed, err := parse.Perftest(bytes.NewReader(s.out.combined()))
		if parsed != nil && parsed.BandwidthBytesPerSecond > 0 {
			in.BytesPerSecond += parsed.BandwidthBytesPerSecond
		}
		if reason := parse.PerftestFailureReason(s.out.ExitCode, parsed, err); reason != "" {
			runFailed = cmpReason(runFailed, reason)
			tails = append(tails, fmt.Sprintf("server for %s: %s", t.nodes[k], lastLine(s.out.Stderr)))
		}
	}
	res.StderrTail = strings.Join(tails, "\n")
	if in.SendersConnected > 0 {
		in.OverlapSeconds = max(0, firstEnd.Sub(lastStart).Seconds())
	}
	if ctx.Err() != nil && context.Cause(ctx) != errTimeout {
		return verdict{}
	}
	switch {
	case in.SendersConnected < 2:
		res.skip(fmt.Sprintf("%d of the %d senders (%s) wrote into this receiver within %v: not an incast (a sender stood aside, or does not run the probe)",
			in.SendersConnected, len(t.nodes), strings.Join(t.nodes, ", "), r.perf.cfg.Timeout))
		return verdict{}
	case r.perf.cfg.Duration > 0 && in.OverlapSeconds < r.perf.cfg.Duration.Seconds()/2:
		res.skip(fmt.Sprintf("the senders wrote at once for only %.1f s of their %v: not an incast", in.OverlapSeconds, r.perf.cfg.Duration))
		return verdict{}
	}
	in.runFailed = runFailed
	return failed(runFailed)
}

// cmpReason keeps the first failure reason.
func cmpReason(have, next string) string {
	if have != "" {
		return have
	}
	return next
}

// send runs this sender's client against its server on the receiver,
// trying again while the receiver refuses within the start window.
func (r *incastRunner) send(ctx context.Context, t target, before *node.Snapshot, res *Result) verdict {
	in := res.Incast
	at := r.perf.placement(before, t.Link)
	port := r.incastPort(t.Rail, t.slot, len(t.nodes))
	argv := r.perf.argsOnPort(t.Link, at, false, port)
	res.Command = argv
	deadline := time.Now().Add(r.perf.cfg.Timeout)
	startBy := time.Now().Add(r.startWindow)
	var out execResult
	for {
		out = runCommand(ctx, time.Until(deadline), argv, nil, nil)
		if out.TimedOut || out.Err != nil || ctx.Err() != nil || perftestOutcome(out) != ReasonConnectRefused ||
			time.Now().Add(r.retryPause).After(startBy) || !sleepCtx(ctx, r.retryPause) {
			break
		}
	}
	res.ExitCode, res.StderrTail = out.ExitCode, out.Stderr
	if ctx.Err() != nil {
		return verdict{}
	}
	if v, didNotRun := failedToRun(res, out); didNotRun {
		in.runFailed = v.reason
		return v
	}
	parsed, err := parse.Perftest(bytes.NewReader(out.combined()))
	if parsed != nil {
		res.Warnings = parsed.Warnings
		in.BytesPerSecond = parsed.BandwidthBytesPerSecond
	}
	reason := parse.PerftestFailureReason(out.ExitCode, parsed, err)
	if reason == ReasonConnectRefused {
		res.skip(fmt.Sprintf("%s did not serve the incast on port %d (connection refused for %v): it stood aside (its port busy, another probe, the NCCL window) or does not run the probe",
			t.Peer, port, r.startWindow.Round(time.Second)))
		return verdict{}
	}
	if before == nil {
		res.skip("the node could not be read before the incast: its counters are what an incast is judged on")
		return verdict{}
	}
	in.runFailed = reason
	return failed(reason)
}

// ownTraffic: the receiver takes in what the senders reported together, a
// sender sends what it reported; the other direction carries their ACKs.
func (r *incastRunner) ownTraffic(_ target, res *Result, elapsed time.Duration) traffic {
	if res.Incast == nil {
		return traffic{}
	}
	moved := res.Incast.BytesPerSecond * max(elapsed, r.perf.cfg.Duration).Seconds()
	if r.receiver {
		return traffic{rx: moved, tx: ackShare * moved}
	}
	return traffic{tx: moved, rx: ackShare * moved}
}

// wantsAfter: a run that moved traffic is judged on the counters; one that
// moved none (a sender that could not start, a receiver no sender reached)
// keeps its own verdict.
func (r *incastRunner) wantsAfter(_ *node.Snapshot, res *Result) bool {
	if res.Skipped || res.Incast == nil {
		return false
	}
	if r.receiver {
		return res.Incast.SendersConnected >= 2
	}
	return res.Incast.BytesPerSecond > 0 || res.Incast.runFailed == ReasonRetryExceeded || res.Incast.runFailed == ReasonTimeout
}

func (r *incastRunner) judgeAfter(before, after *node.Snapshot, res *Result) verdict {
	rb, ok1 := incastReadingOf(before, res.Device)
	ra, ok2 := incastReadingOf(after, res.Device)
	if !ok1 || !ok2 {
		res.skip(res.Device + " has no Ethernet port in the node's reading: nothing to judge the incast by")
		return verdict{}
	}
	from, to, direction := rb.rxData, ra.rxData, "received"
	if !r.receiver {
		from, to, direction = rb.txData, ra.txData, "sent"
	}
	if rb.data && ra.data && (to < from || to-from < minBytesToJudge) {
		res.skip(fmt.Sprintf("the port's data counters %s %d bytes while the incast ran: they are not live (a replayed node) or were reset, so nothing can be judged", direction, int64(to-from)))
		return verdict{}
	}
	if r.receiver {
		rate, _ := portRate(after, res.Device)
		return judgeIncastReceiver(res, rb, ra, res.Incast.want, rate/8)
	}
	return judgeIncastSender(res, rb, ra, res.Incast.want)
}

// incastLoop runs this node's side of every incast the schedule gives it.
func (s *Scheduler) incastLoop(ctx context.Context) {
	for {
		g, ok := s.incast.NextGroup(s.self.Name, s.opts.Now())
		if !ok {
			return
		}
		if !sleepUntil(ctx, s.opts.Now, g.Start) {
			return
		}
		if s.judgeIdentity(s.configOfNode(ctx, KindIncast)) == identityMismatch {
			continue // logged by judgeIdentity: an incast here would be recorded in another node's name
		}
		s.runIncastGroup(ctx, g)
	}
}

// incastTargets are this node's part of g: for the receiver one target per
// rail every sender has too, for a sender one per rail towards the
// receiver's address on it.
func (s *Scheduler) incastTargets(g schedule.IncastGroup) []target {
	if g.Receiver == s.self.Name {
		rails := len(s.self.Interfaces)
		for _, name := range g.Senders {
			if n, ok := s.opts.Plan.Node(name); ok {
				rails = min(rails, len(n.Interfaces))
			}
		}
		var out []target
		for _, l := range s.localLinks() {
			if l.Rail < rails {
				l.Peer = strings.Join(g.Senders, "+")
				out = append(out, target{Link: l, nodes: g.Senders, devices: []string{l.Device}})
			}
		}
		return out
	}
	slot := g.Slot(s.self.Name)
	peer, ok := s.opts.Plan.Node(g.Receiver)
	if slot < 0 || !ok {
		return nil
	}
	var out []target
	for _, l := range s.links(peer) {
		if l.PeerIP == "" || s.self.Interfaces[l.Rail].RDMADevice == "" {
			continue
		}
		out = append(out, target{Link: l, nodes: g.Senders, devices: []string{l.Device}, slot: slot})
	}
	return out
}

// runIncastGroup runs this node's side of g on every rail at once and
// stores the results.
func (s *Scheduler) runIncastGroup(ctx context.Context, g schedule.IncastGroup) []*Result {
	runner := s.incastSender
	if g.Receiver == s.self.Name {
		runner = s.incastReceiver
	} else if !sleepCtx(ctx, s.incastHeadStart) {
		return nil
	}
	targets := s.incastTargets(g)
	results := make([]*Result, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := s.guarded(ctx, KindIncast, t, func() *Result { return s.measure(ctx, runner, t) })
			if res != nil {
				res.Rail = t.Rail
			}
			results[i] = res
		}()
	}
	wg.Wait()
	var out []*Result
	for _, res := range results {
		if res != nil {
			s.store.Add(res)
			out = append(out, res)
		}
	}
	if len(out) > 0 {
		s.saveIncast()
	}
	return out
}

// inIncast names an incast round that a run of timeout starting now would
// overlap; "" when none.
func (s *Scheduler) inIncast(timeout time.Duration) string {
	if s.incast == nil {
		return ""
	}
	now := s.opts.Now()
	g, ok := s.incast.During(now, now.Add(timeout))
	if !ok {
		return ""
	}
	return fmt.Sprintf("an incast round runs from %s (receiver %s among others): pair probes stand aside within max_fabric_share", g.Start.UTC().Format(time.TimeOnly), g.Receiver)
}

// IncastSenders are the senders `probe run incast` uses for receiver when
// none are named: the n nodes after it in name order, wrapping around.
func IncastSenders(plan *config.Plan, receiver string, n int) []string {
	names := plan.NodeNames()
	at := slices.Index(names, receiver)
	if at < 0 {
		return nil
	}
	var out []string
	for i := 1; i < len(names) && len(out) < n; i++ {
		out = append(out, names[(at+i)%len(names)])
	}
	slices.Sort(out)
	return out
}

// RunIncast runs this node's side of an incast of senders into receiver now
// (roce_exporter probe run incast): the receiver's servers, or this sender's
// client. Every member runs the same command at about the same time; nothing
// tells the others.
func (s *Scheduler) RunIncast(ctx context.Context, receiver string, senders []string) ([]*Result, error) {
	senders = slices.Clone(senders)
	slices.Sort(senders)
	for _, n := range append([]string{receiver}, senders...) {
		if _, ok := s.opts.Plan.Node(n); !ok {
			return nil, fmt.Errorf("%q is not in the cluster plan", n)
		}
	}
	switch {
	case len(senders) < 2:
		return nil, errors.New("an incast needs at least two senders")
	case slices.Contains(senders, receiver):
		return nil, fmt.Errorf("%s cannot send into itself", receiver)
	case len(slices.Compact(slices.Clone(senders))) != len(senders):
		return nil, errors.New("a sender is named twice")
	case receiver != s.self.Name && !slices.Contains(senders, s.self.Name):
		return nil, fmt.Errorf("this node (%s) is neither the receiver %s nor one of the senders %s", s.self.Name, receiver, strings.Join(senders, ", "))
	}
	if ports, need := s.opts.Plan.Probes.Incast.PortRange.Len(), len(senders)*len(s.self.Interfaces); ports < need {
		return nil, fmt.Errorf("probes.incast.port_range %s has %d ports; %d senders on %d rails need %d", s.opts.Plan.Probes.Incast.PortRange, ports, len(senders), len(s.self.Interfaces), need)
	}
	return s.runIncastGroup(ctx, schedule.IncastGroup{Receiver: receiver, Senders: senders, Start: s.opts.Now()}), nil
}
