package probes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/probes/schedule"
)

// Options configures a Scheduler.
type Options struct {
	Plan *config.Plan
	// Self is this node's name in the plan.
	Self string
	// Node is the node as the exporter's pipeline reads it: a run collects it
	// before it starts and, when it must, after it ends.
	Node Node
	// StateDir holds the persisted baselines ("" keeps them in memory).
	StateDir string
	Logger   *slog.Logger
	// Now is the wall clock (tests replace it).
	Now func() time.Time
	// Topology names the switch of a node's rail, for the choice of
	// witnesses (schedule.Triangulate); nil when unknown.
	Topology schedule.SwitchOf
}

// Scheduler runs the plan's probes on their intervals: rail-matched
// perftest pairs from the round-robin schedule, NCCL from the leader, and
// ping to every peer. Results go to a Store the exporter reads at scrape
// time.
type Scheduler struct {
	opts      Options
	self      *config.Node
	fleet     map[string]*schedule.FleetSchedule // per pair probe kind; the plan does not change
	store     *Store
	base      *Baselines
	locks     *deviceLocks
	gate      loadGate
	bw        *perftestRunner
	lat       *perftestRunner
	nccl      *ncclRunner
	ncclGroup *ncclRunner
	// ping is the pingRunner (a prober, so that tests can stand in for the
	// network).
	ping prober
	// incast is the incast schedule, nil when the incast does not run;
	// incastReceiver and incastSender are its two sides.
	incast                       *schedule.IncastSchedule
	incastReceiver, incastSender *incastRunner
	// incastHeadStart is incastHeadStart (tests shorten it).
	incastHeadStart time.Duration
	logger          *slog.Logger
	// retestPause is schedule.RetestDelay, busyPause schedule.BusyPause
	// (tests shorten them).
	retestPause time.Duration
	busyPause   func(self, witness string) time.Duration

	pings *pingState
	// identityMu guards the last identity judged, so that a change is
	// logged once.
	identityMu sync.Mutex
	identity   identity
}

// New validates that the node is in the plan and loads the baselines.
func New(opts Options) (*Scheduler, error) {
	if opts.Plan == nil {
		return nil, errors.New("probes need a cluster plan (--config.file)")
	}
	self, ok := opts.Plan.Node(opts.Self)
	if !ok {
		return nil, fmt.Errorf("node %q is not in the cluster plan; set --node.name", opts.Self)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	base, stateErr := LoadBaselines(opts.StateDir, opts.Logger)
	if stateErr != nil {
		// Refusing to start would take /metrics down with the probes on
		// every node of a plan whose nodes have no writable state volume
		// (a DaemonSet with a read-only root). The probes run; only the
		// baselines are lost at each restart, and that is said loudly.
		opts.Logger.Error("the probe state directory cannot be written: probes run, but their baselines are kept in memory only and lost at every restart; mount a writable volume there or set probes.state_dir (--probes.state-dir)",
			"dir", opts.StateDir, "err", stateErr)
		base, _ = LoadBaselines("", opts.Logger)
	}
	p := opts.Plan.Probes
	s := &Scheduler{
		opts: opts, self: self, store: NewStore(), base: base, locks: newDeviceLocks(), logger: opts.Logger, retestPause: schedule.RetestDelay, busyPause: schedule.BusyPause,
		gate:      loadGate{limit: p.MaxPortUtilization},
		bw:        newPerftestRunner(KindIBWriteBW, p.IBWriteBW, opts.Plan),
		lat:       newPerftestRunner(KindIBWriteLat, p.IBWriteLat, opts.Plan),
		nccl:      &ncclRunner{probeKind: KindNCCL, plan: opts.Plan, self: self},
		ncclGroup: &ncclRunner{probeKind: KindNCCLGroup, plan: opts.Plan, self: self},
		ping:      &pingRunner{count: p.Ping.Count, timeout: p.Ping.Timeout, interval: 200 * time.Millisecond},
		fleet: map[string]*schedule.FleetSchedule{
			KindIBWriteBW:  schedule.NewFleetSchedule(opts.Plan.NodeNames(), p.IBWriteBW.Schedule, p.MaxFabricShare),
			KindIBWriteLat: schedule.NewFleetSchedule(opts.Plan.NodeNames(), p.IBWriteLat.Schedule, p.MaxFabricShare),
		},
	}
	s.incastReceiver, s.incastSender = newIncastRunner(opts.Plan, self.Name, true), newIncastRunner(opts.Plan, self.Name, false)
	s.incastHeadStart = incastHeadStart
	if p.Enabled && p.Incast.Enabled {
		s.incast = schedule.NewIncastSchedule(opts.Plan.NodeNames(), p.Incast.Schedule, p.Incast.Senders, p.MaxFabricShare)
	}
	s.store.SetClock(opts.Now)
	s.store.SetSelf(self.Name)
	s.store.setState(opts.StateDir, stateErr, base)
	s.pings = newPingState(opts.Plan.NodeNames())
	for _, kind := range []string{KindIBWriteBW, KindIBWriteLat} {
		if !pairKindRuns(p, kind) {
			continue
		}
		rails := opts.Plan.UntestableRails(self.Name)
		s.store.SetUntestableRails(kind, rails)
		if len(rails) > 0 {
			opts.Logger.Warn("rails no peer in the plan can test: the pair probes pair rail i with rail i, and every other node has fewer rails",
				"probe", kind, "rails", fmt.Sprint(rails))
		}
	}
	for kind, sch := range map[string]config.Schedule{KindIBWriteBW: p.IBWriteBW.Schedule, KindIBWriteLat: p.IBWriteLat.Schedule, KindNCCL: p.NCCL.Schedule, KindNCCLGroup: p.NCCL.Schedule, KindPing: p.Ping.Schedule} {
		if sch.Enabled {
			s.store.SetFreshness(kind, config.FreshFor(sch, p.FreshRounds))
		}
	}
	if p.Incast.Enabled {
		s.store.SetFreshness(KindIncast, config.FreshFor(p.Incast.Schedule, p.IncastFreshRounds()))
	}
	return s, nil
}

// Store is where results are kept.
func (s *Scheduler) Store() *Store { return s.store }

// Run starts the responders and probe loops and blocks until ctx ends;
// it then kills every child process group and returns.
func (s *Scheduler) Run(ctx context.Context) {
	var wg sync.WaitGroup
	p := s.opts.Plan.Probes
	for _, r := range []*perftestRunner{s.bw, s.lat} {
		if !r.cfg.Enabled {
			continue
		}
		for _, l := range s.localLinks() {
			rs := s.newResponder(r, l, s.logger)
			wg.Add(1)
			go func() { defer wg.Done(); rs.run(ctx) }()
		}
		wg.Add(1)
		go func(r *perftestRunner) {
			defer wg.Done()
			s.pairLoop(ctx, r)
		}(r)
	}
	if p.NCCL.Enabled && p.NCCL.Leader != "" && p.NCCL.Leader == s.self.Name {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.loop(ctx, KindNCCL, p.NCCL.Schedule, func(int64) { s.runNCCL(ctx) })
		}()
	}
	if p.NCCL.Enabled && p.NCCL.GroupSize >= 2 && p.NCCL.Interval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.loop(ctx, KindNCCLGroup, p.NCCL.Schedule, func(epoch int64) {
				if sleepCtx(ctx, schedule.GroupOffset(p.NCCL.Interval)) {
					s.runNCCLGroup(ctx, epoch)
				}
			})
		}()
	}
	if s.incast != nil {
		wg.Add(1)
		go func() { defer wg.Done(); s.incastLoop(ctx) }()
	}
	if p.Ping.Enabled {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.loop(ctx, KindPing, p.Ping.Schedule, func(round int64) { s.pingRound(ctx, round) })
		}()
	}
	wg.Wait()
}

// loop runs fn once per interval, at a wall-clock-aligned time plus a
// jitter every node derives from the round number, so paired nodes agree
// on timing without talking to each other.
func (s *Scheduler) loop(ctx context.Context, kind string, sch config.Schedule, fn func(round int64)) {
	interval := sch.Interval
	if interval <= 0 {
		return
	}
	for {
		now := s.opts.Now()
		round := now.UnixNano()/int64(interval) + 1
		at := schedule.RoundStart(kind, sch, round)
		select {
		case <-ctx.Done():
			return
		case <-time.After(at.Sub(now)):
		}
		fn(round)
	}
}

// localLinks are this node's rails with an RDMA device.
func (s *Scheduler) localLinks() []Link {
	var out []Link
	for idx, i := range s.self.Interfaces {
		if i.RDMADevice == "" {
			continue
		}
		out = append(out, Link{Rail: idx, Device: i.RDMADevice, LocalIP: addrString(i)})
	}
	return out
}

func addrString(i *config.ComputeInterface) string {
	if !i.Address.IsValid() {
		return ""
	}
	return i.IP().String()
}

// links pairs rail i of this node with rail i of the peer, in the order the
// plan lists each node's compute interfaces, so a bad NIC or cable shows up
// on one rail instead of on the whole node. When the counts differ only the
// common prefix is paired; a plan check reports the mismatch.
func (s *Scheduler) links(peer *config.Node) []Link {
	var out []Link
	for idx := 0; idx < len(s.self.Interfaces) && idx < len(peer.Interfaces); idx++ {
		li, pi := s.self.Interfaces[idx], peer.Interfaces[idx]
		dev := li.RDMADevice
		if dev == "" {
			dev = li.Netdev
		}
		out = append(out, Link{Rail: idx, Device: dev, LocalIP: addrString(li), Peer: peer.Name, PeerDevice: pi.RDMADevice, PeerIP: addrString(pi)})
	}
	return out
}

// inNCCLWindow reports whether the cluster-wide NCCL run is due: pair
// probes stand aside so they neither disturb nor are disturbed by it.
func (s *Scheduler) inNCCLWindow(now time.Time) bool {
	n := s.opts.Plan.Probes.NCCL
	if !n.Enabled || n.Interval <= 0 {
		return false
	}
	epoch := now.UnixNano() / int64(n.Interval)
	start := schedule.RoundStart(KindNCCL, n.Schedule, epoch)
	if !now.Before(start) && now.Before(start.Add(n.Timeout)) {
		return true
	}
	// The group runs, half an interval later (their own jitter and start).
	groups := schedule.RoundStart(KindNCCLGroup, n.Schedule, epoch).Add(schedule.GroupOffset(n.Interval))
	return n.GroupSize >= 2 && !now.Before(groups) && now.Before(groups.Add(n.Timeout))
}

// pairLoop runs this node's side of the fleet schedule: once per epoch, in
// the round the schedule gives it, as the client (our responders serve the
// peer when it is the client); then, when the test failed, the
// triangulation of either end (triangulate.go).
func (s *Scheduler) pairLoop(ctx context.Context, r *perftestRunner) {
	fleet := s.fleet[r.kind()]
	for {
		turn, ok := fleet.NextTurn(s.self.Name, s.opts.Now())
		if !ok {
			return // fewer than two nodes, or no interval
		}
		if !sleepUntil(ctx, s.opts.Now, turn.Start) {
			return
		}
		if s.judgeIdentity(s.configOfNode(ctx, r.kind())) == identityMismatch {
			continue // logged by judgeIdentity; neither end of this turn is ours to run
		}
		var results []*Result
		if turn.IsClient {
			peer, _ := s.opts.Plan.Node(turn.Peer)
			results = s.runPerftest(ctx, r, peer, fleet.RoundEnd(turn.Epoch, turn.Round))
		}
		s.triangulateAfterTurn(ctx, r, turn, results)
	}
}

// runPerftest measures every rail to one peer, rails in parallel. A rail
// that fails is tested once more when the round leaves time before
// deadline (zero: no retest); only a failure the retest confirms is
// recorded as one.
func (s *Scheduler) runPerftest(ctx context.Context, r *perftestRunner, peer *config.Node, deadline time.Time) []*Result {
	return s.testLinks(ctx, r, s.links(peer), deadline, "")
}

// testLinks is runPerftest on some links. A test of the diagnosis (a witness
// test, a far end's test of its absent client) sets aside a rail whose
// connection was refused, with refusedSkip as the reason: the peer's
// responder was busy or not listening, which says nothing of the link, and
// the diagnosis raises no alert of its own. A scheduled test (refusedSkip "")
// records the refusal (RoCEProbeFailing says the responder is not running).
func (s *Scheduler) testLinks(ctx context.Context, r *perftestRunner, links []Link, deadline time.Time, refusedSkip string) []*Result {
	results := make([]*Result, len(links))
	var wg sync.WaitGroup
	for i, l := range links {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := linkTarget(l)
			run := func() *Result {
				res := s.guarded(ctx, r.kind(), t, func() *Result { return s.measure(ctx, r, t) })
				if refusedSkip != "" && res != nil && !res.Success && !res.Skipped && res.Reason == ReasonConnectRefused {
					res.Reason, res.Hint = "", ""
					res.skip(refusedSkip)
				}
				return res
			}
			res := run()
			if res != nil && !res.Success && !res.Skipped && !deadline.IsZero() &&
				s.opts.Now().Add(s.retestPause+r.cfg.Timeout).Before(deadline) && sleepCtx(ctx, s.retestPause) {
				if again := run(); again != nil && !again.Skipped {
					if again.Success {
						again.Warnings = append(again.Warnings, "passed on a retest after the first attempt failed: "+res.Reason)
					}
					res = again
				}
			}
			if res != nil {
				res.Rail = l.Rail
			}
			results[i] = res
		}()
	}
	wg.Wait()
	for _, res := range results {
		if res != nil {
			s.store.Add(res)
		}
	}
	return results
}

// guarded applies the scheduling rules every probe this node starts obeys:
// never overlap another probe on the same device, and stand aside during
// the NCCL window (the load gate is measure's: it needs the node's read).
// Nil when ctx ended before or during the run: that is not a measurement.
func (s *Scheduler) guarded(ctx context.Context, kind string, t target, run func() *Result) *Result {
	skip := func(reason string) *Result {
		return (&Result{Probe: kind, Peer: t.Peer, Device: t.Device, PeerDevice: t.PeerDevice, Start: s.opts.Now()}).skip(reason)
	}
	if kind != KindNCCL && kind != KindNCCLGroup && s.inNCCLWindow(s.opts.Now()) {
		return skip("the cluster-wide NCCL probe is running")
	}
	if isPairProbe(kind) {
		// An incast round loads up to max_fabric_share of the nodes by itself:
		// every pair test that would overlap it stands aside (every node knows
		// the incast schedule), so the fabric never carries both.
		if why := s.inIncast(s.pairTimeout(kind)); why != "" {
			return skip(why)
		}
	}
	if !s.locks.lock(ctx, 30*time.Second, t.devices...) {
		return skip("another probe is using the device")
	}
	defer s.locks.unlock(t.devices...)
	if ctx.Err() != nil {
		return nil
	}
	res := run()
	if ctx.Err() != nil {
		return nil // shut down mid-run: not a measurement
	}
	return res
}

// pairTimeout is how long a pair probe's run may last.
func (s *Scheduler) pairTimeout(kind string) time.Duration {
	if kind == KindIBWriteLat {
		return s.lat.cfg.Timeout
	}
	return s.bw.cfg.Timeout
}

// localDevices are this node's RDMA devices: what an NCCL run loads.
func (s *Scheduler) localDevices() []string {
	var devs []string
	for _, l := range s.localLinks() {
		devs = append(devs, l.Device)
	}
	return devs
}

// runNCCL runs the whole-cluster NCCL probe (this node leads it).
func (s *Scheduler) runNCCL(ctx context.Context) *Result {
	t := target{nodes: s.opts.Plan.NodeNames(), devices: s.localDevices()}
	res := s.guarded(ctx, KindNCCL, t, func() *Result { return s.measure(ctx, s.nccl, t) })
	if res != nil {
		s.store.Add(res)
	}
	return res
}

// pingPeers pings every rail of every peer, or of the one peer named.
func (s *Scheduler) pingPeers(ctx context.Context, only string) []*Result {
	var peers []string
	for _, p := range s.opts.Plan.Peers(s.self.Name) {
		if only == "" || p.Name == only {
			peers = append(peers, p.Name)
		}
	}
	return s.pingTargets(ctx, peers, func(*Result) bool { return true })
}

// pingTargets pings every rail of peers, 16 at a time; keep says whether a
// result is kept as its link's (else it is only counted).
func (s *Scheduler) pingTargets(ctx context.Context, peers []string, keep func(*Result) bool) []*Result {
	var out []*Result
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for _, name := range peers {
		peer, ok := s.opts.Plan.Node(name)
		if !ok {
			continue
		}
		for _, l := range s.links(peer) {
			if _, err := netip.ParseAddr(l.PeerIP); err != nil {
				continue
			}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				res := s.measure(ctx, s.ping, linkTarget(l))
				if ctx.Err() != nil {
					return
				}
				mu.Lock()
				out = append(out, res)
				mu.Unlock()
				if keep(res) {
					s.store.Add(res)
				} else {
					s.store.CountRun(res)
				}
			}()
		}
	}
	wg.Wait()
	return out
}

// RunOnce runs one probe now and returns its results (roce_exporter probe
// run). For perftest the peer's exporter must be serving its responders.
func (s *Scheduler) RunOnce(ctx context.Context, kind, peer string) ([]*Result, error) {
	if peer != "" {
		if _, ok := s.opts.Plan.Node(peer); !ok {
			return nil, fmt.Errorf("peer %q is not in the cluster plan", peer)
		}
	}
	switch kind {
	case KindIBWriteBW, KindIBWriteLat:
		r := s.bw
		if kind == KindIBWriteLat {
			r = s.lat
		}
		var out []*Result
		for _, p := range s.opts.Plan.Peers(s.self.Name) {
			if peer == "" || p.Name == peer {
				out = append(out, s.runPerftest(ctx, r, p, time.Time{})...)
			}
		}
		return out, nil
	case KindNCCL:
		if res := s.runNCCL(ctx); res != nil {
			return []*Result{res}, nil
		}
		return nil, ctx.Err()
	case KindPing:
		return s.pingPeers(ctx, peer), nil
	case KindIncast:
		// This node receives from the schedule's choice of senders; RunIncast
		// names others.
		return s.RunIncast(ctx, s.self.Name, IncastSenders(s.opts.Plan, s.self.Name, s.opts.Plan.Probes.Incast.Senders))
	}
	return nil, fmt.Errorf("unknown probe %q (want %s, %s, %s, %s or %s)", kind, KindIBWriteBW, KindIBWriteLat, KindNCCL, KindPing, KindIncast)
}
