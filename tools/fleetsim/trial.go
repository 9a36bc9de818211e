// Package fleetsim simulates a fleet of roce_exporter nodes probing each
// other, and Prometheus judging them with the shipped rules, on a virtual
// clock: no processes, no sockets.
//
// The nodes are real: every simulated node derives its turns from the real
// plan (config.Parse) and fleet schedule (probes/schedule), keeps its
// results in a real probes.Store, and exports them through the real
// collectors (collector.Renderer: the probe, rdma and lldp collectors).
// Prometheus is real: its TSDB, its PromQL engine and its rules package load
// alerts/ as they ship, scrape every node on the virtual clock and evaluate
// the rule groups at their interval; a fault is named when
// ALERTS{alertstate="firing"} holds the alert that names it. Only the
// fabric is made up: a topology of switches and spines and the faults
// injected into it (topology.go, faults.go, fabric.go).
package fleetsim

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/pipeline"
	"github.com/roce-exporter/roce_exporter/probes"
)

// Config is one simulated fleet and how long each trial runs.
type Config struct {
	Nodes, Rails, Spines int
	// Interval is probes.nic_test_interval, Share probes.max_fabric_share.
	Interval time.Duration
	Share    float64
	// Noise is the share of first attempts that fail and pass their retest.
	Noise float64
	// Scrape is Prometheus' scrape interval.
	Scrape time.Duration
	// Warmup is how long Prometheus scrapes and evaluates before the onset;
	// the nodes' stores run from fresh_rounds intervals before that.
	Warmup time.Duration
	// Deadline is how long after the onset a trial runs: a fault not named
	// by then is missed.
	Deadline time.Duration
	// Duration and Timeout are ib_write_bw's duration (-D) and timeout.
	Duration, Timeout time.Duration
	// WitnessSwitches: the nodes know the fleet's switches
	// (--probes.prometheus-url) when they choose witnesses.
	WitnessSwitches bool
	// Job is the scrape job's name.
	Job string
	// TSDB stores the series in Prometheus' own TSDB instead of memStore
	// (the same answers, slower). It implies Exact.
	TSDB bool
	// Exact runs every evaluation, even those that cannot change anything
	// (server.unchanged): the same outcome, slower.
	Exact bool
}

// DefaultConfig is the fleet of the README's table at a size.
func DefaultConfig(nodes int) Config {
	return Config{Nodes: nodes, Rails: 8, Spines: 8, Interval: 8 * time.Minute, Duration: 5 * time.Second, Timeout: 15 * time.Second,
		Share: 0.25, Noise: 0.02, WitnessSwitches: true,
		Scrape: 30 * time.Second, Warmup: 30 * time.Minute, Deadline: time.Hour, Job: "roce-exporter"}
}

// Outcome is one trial.
type Outcome struct {
	Class string
	Nodes int
	Seed  uint64
	// Faults says what was injected where.
	Faults []string
	// Named is the time from the onset until every fault was named; -1
	// when one was not named by the deadline.
	Named   time.Duration
	NamedBy []string
	// Wrong are the judged alerts that fired without a fault calling for them.
	Wrong []string
	// Firing holds, for every judged alert that fired, the spans of
	// evaluations it fired at, from the onset (negative: before it).
	Firing map[string][]Span
	// PeakShare is the largest share of the nodes under test at once.
	PeakShare float64
	Tests     int
	// Evaluations and Replayed count the rule group evaluations run and
	// those replayed because they could not change (server.unchanged).
	Evaluations, Replayed int
	// Queries and Reused count the rules' queries run by the engine and
	// answered again from an unchanged last answer.
	Queries, Reused int
	// Timeline is a digest of the judged alerts firing at every evaluation:
	// equal timelines, equal trials.
	Timeline uint64
}

// Span is a stretch of evaluations an alert fired at, from and to the
// evaluation's time since the onset.
type Span struct{ From, To time.Duration }

func (s Span) String() string {
	return fmt.Sprintf("%v..%v", s.From.Round(time.Second), s.To.Round(time.Second))
}

// attemptLength is how long one ib_write_bw attempt takes: its -D run plus
// the connection set-up; retestDelay is the scheduler's pause before a
// retest (probes/scheduler.go).
const (
	setupTime   = 2 * time.Second
	retestDelay = config.RetestDelay
)

type trial struct {
	cfg      Config
	rules    *RuleSet
	fleet    *fleet
	class    *Class
	seed     uint64
	faults   []Fault
	machines []*machine

	now                    time.Time
	clock                  func() time.Time
	onset, promStart, end  time.Time
	onsetApplied           bool
	events                 eventHeap
	nonce                  uint64
	busy                   []busySpan
	tests                  int
	named                  []time.Time
	namedBy                []string
	wrong                  map[string]bool
	firing                 map[string][]Span
	attemptLen, runTimeout time.Duration
	timeline               uint64
	triangulations         int
}

// Sim holds what the trials of one size and layout share.
type Sim struct {
	cfg    Config
	rules  *RuleSet
	fleets map[Layout]*fleet
}

// NewSim prepares trials of cfg judged by rules.
func NewSim(cfg Config, rules *RuleSet) *Sim {
	return &Sim{cfg: cfg, rules: rules, fleets: map[Layout]*fleet{}}
}

func (s *Sim) fleet(l Layout) (*fleet, error) {
	if f, ok := s.fleets[l]; ok {
		return f, nil
	}
	f, err := newFleet(s.cfg, l)
	if err != nil {
		return nil, err
	}
	s.fleets[l] = f
	return f, nil
}

// Prepare builds the fleets of the classes before trials run concurrently.
func (s *Sim) Prepare(classes []*Class) error {
	for _, c := range classes {
		if _, err := s.fleet(c.Layout); err != nil {
			return err
		}
	}
	return nil
}

// Run runs one seeded trial of a class.
func (s *Sim) Run(class *Class, seed uint64) (Outcome, error) {
	tr, t0, err := s.newTrial(class, seed)
	if err != nil {
		return Outcome{}, err
	}
	prom, err := newServer(s.rules, tr.promStart, tr.cfg.Scrape, tr.cfg.TSDB, tr.cfg.Exact)
	if err != nil {
		return Outcome{}, err
	}
	defer prom.close()
	if err := tr.loop(prom, t0); err != nil {
		return Outcome{}, fmt.Errorf("%s seed %d: %w", class.Name, seed, err)
	}
	o := tr.outcome()
	o.Evaluations, o.Replayed = prom.Evaluations, prom.Skipped
	o.Queries, o.Reused = prom.Queries, prom.Reused
	return o, nil
}

// newTrial picks a trial's faults and onset and starts its machines; t0 is
// when their schedule starts.
func (s *Sim) newTrial(class *Class, seed uint64) (*trial, time.Time, error) {
	fl, err := s.fleet(class.Layout)
	if err != nil {
		return nil, time.Time{}, err
	}
	cfg := s.cfg
	rng := rand.New(rand.NewPCG(seed, mix(class.Name)))
	tr := &trial{cfg: cfg, rules: s.rules, fleet: fl, class: class, seed: seed, wrong: map[string]bool{},
		firing: map[string][]Span{}}
	tr.clock = func() time.Time { return tr.now }
	tr.faults = class.pick(fl.topo, rng)
	tr.named = make([]time.Time, len(tr.faults))
	bw := fl.plan.Probes.IBWriteBW
	tr.attemptLen, tr.runTimeout = bw.Duration+setupTime, bw.Timeout

	// The stores fill from fresh_rounds intervals before Prometheus starts;
	// the onset falls anywhere in an interval.
	const base = 1_800_000_000 * time.Second
	t0 := time.Unix(0, int64(base/cfg.Interval*cfg.Interval))
	tr.promStart = t0.Add(time.Duration(fl.plan.Probes.FreshRounds+1) * cfg.Interval)
	tr.onset = tr.promStart.Add(cfg.Warmup + time.Duration(rng.Int64N(int64(cfg.Interval))))
	tr.end = tr.onset.Add(cfg.Deadline)
	tr.now = t0
	for i := range cfg.Nodes {
		m := &machine{index: i, up: true, linkDowned: make([]uint64, cfg.Rails), col: &pipeline.Collection{}}
		if err := tr.newExporter(m, fl.names[i]); err != nil {
			return nil, time.Time{}, err
		}
		tr.machines = append(tr.machines, m)
	}
	return tr, t0, nil
}

// loop runs the schedule, the scrapes and the rule evaluations in time
// order until the deadline.
func (tr *trial) loop(prom *server, t0 time.Time) error {
	sched := tr.fleet.sched
	epoch, round := sched.Epoch(t0), 0
	roundAt := sched.RoundStart(epoch, round)
	scrapeAt := tr.promStart.Truncate(tr.cfg.Scrape)
	if scrapeAt.Before(tr.promStart) {
		scrapeAt = scrapeAt.Add(tr.cfg.Scrape)
	}
	for {
		gi, evalAt := prom.nextEval()
		t := min64(roundAt, scrapeAt, evalAt)
		if len(tr.events) > 0 && !tr.events[0].at.After(t) {
			t = tr.events[0].at
		}
		if t.After(tr.end) {
			return nil
		}
		tr.now = t
		tr.applyOnset()
		switch {
		case len(tr.events) > 0 && tr.events[0].at.Equal(t):
			if e := heap.Pop(&tr.events).(*event); e.tri != nil {
				tr.triangulate(e.tri)
			} else {
				tr.complete(e)
			}
		case roundAt.Equal(t):
			tr.startRound(epoch, round, t)
			if round++; round == sched.Rounds() {
				epoch, round = epoch+1, 0
			}
			roundAt = sched.RoundStart(epoch, round)
		case scrapeAt.Equal(t):
			if err := tr.scrapeAll(prom); err != nil {
				return err
			}
			scrapeAt = scrapeAt.Add(tr.cfg.Scrape)
		default:
			firing, judged, err := prom.eval(gi)
			if err != nil {
				return err
			}
			if judged {
				tr.judge(firing)
			}
		}
	}
}

func min64(ts ...time.Time) time.Time {
	m := ts[0]
	for _, t := range ts[1:] {
		if t.Before(m) {
			m = t
		}
	}
	return m
}

// applyOnset injects the faults that change a machine itself: a node that
// goes down, an exporter restarted under another node's name.
func (tr *trial) applyOnset() {
	if tr.onsetApplied || tr.now.Before(tr.onset) {
		return
	}
	tr.onsetApplied = true
	for _, f := range tr.faults {
		switch f.Kind {
		case faultNodeDown:
			tr.machines[f.Node].up = false
		case faultCollision:
			// The error is only an unknown collector name, checked at start.
			_ = tr.newExporter(tr.machines[f.Impostor], tr.fleet.names[f.Node])
		}
	}
}

// scrapeAll scrapes every target once.
func (tr *trial) scrapeAll(prom *server) error {
	app := prom.appender()
	for _, m := range tr.machines {
		tr.updatePorts(m)
		if err := tr.scrapeTarget(app, m, tr.now); err != nil {
			app.Rollback()
			return err
		}
	}
	return app.Commit()
}

// updatePorts moves a flapping port's state and link-down counter.
func (tr *trial) updatePorts(m *machine) {
	for _, f := range tr.faults {
		if f.Kind != faultFlap || f.Node != m.index || !tr.active(tr.now) {
			continue
		}
		downs := uint64(tr.now.Sub(tr.onset)/flapPeriod) + 1
		if downs != m.linkDowned[f.Rail] {
			m.linkDowned[f.Rail] = downs
		}
		m.scrape.dirty = true // the port's state moves every 3 minutes
	}
}

// noise reports whether a first attempt fails on its own (a responder
// restarting, a burst of traffic): it passes its retest.
func (tr *trial) noise(epoch int64, round, client, rail int, nonce uint64) bool {
	x := mix(tr.seed, "noise", epoch, round, client, rail, nonce)
	return float64(x>>11)/(1<<53) < tr.cfg.Noise
}

// record queues a result for machine m's store when the run ends.
func (tr *trial) record(m *machine, at time.Time, peer string, rail int, start time.Time, a attempt, role string) *probes.Result {
	res := &probes.Result{Probe: probes.KindIBWriteBW, Peer: peer, Device: device(rail), PeerDevice: device(rail), Rail: rail, Role: role,
		Start: start, Duration: tr.attemptLen - setupTime, Success: a.ok, Reason: a.reason}
	if a.bandwidth > 0 {
		res.Bandwidth = &probes.Bandwidth{BytesPerSecond: a.bandwidth,
			ExpectedBytesPerSecond: tr.fleet.plan.Expectations.MinBandwidthFraction * lineRate, BaselineBytesPerSecond: healthyShare * lineRate}
	}
	heap.Push(&tr.events, &event{at: at, m: m, store: m.store, res: res})
	return res
}

// complete hands a finished run to its node's store (unless the exporter
// was restarted meanwhile: its results went with it).
func (tr *trial) complete(e *event) {
	if e.m.store != e.store || !e.m.up {
		return
	}
	if e.res.Skipped {
		e.store.Add(e.res) // counted, not a result
		return
	}
	e.store.Add(e.res)
	e.m.scrape.dirty = true
}

// judge reads the judged alerts firing at now.
func (tr *trial) judge(firing []Alert) {
	names := make([]string, len(firing))
	for i, a := range firing {
		names[i] = a.String()
	}
	sort.Strings(names)
	tr.timeline = mix(tr.timeline, tr.now.UnixMilli(), names)
	for _, a := range firing {
		right := false
		for i, f := range tr.faults {
			if tr.active(tr.now) && f.names(a, tr.fleet) {
				right = true
				if tr.named[i].IsZero() {
					tr.named[i] = tr.now
					tr.namedBy = append(tr.namedBy, a.String())
				}
			}
		}
		if !right {
			tr.wrong[a.String()] = true
		}
		at := tr.now.Sub(tr.onset)
		spans := tr.firing[a.String()]
		// Several groups are judged; an alert fired on if its group's last
		// evaluation (15 s ago, or 30 s for a slower group) had it.
		if n := len(spans); n > 0 && at-spans[n-1].To <= 30*time.Second {
			spans[n-1].To = at
		} else {
			tr.firing[a.String()] = append(spans, Span{at, at})
		}
	}
}

func (tr *trial) outcome() Outcome {
	o := Outcome{Class: tr.class.Name, Nodes: tr.cfg.Nodes, Seed: tr.seed, Named: -1, NamedBy: tr.namedBy, Tests: tr.tests, Timeline: tr.timeline}
	for _, f := range tr.faults {
		o.Faults = append(o.Faults, tr.describe(f))
	}
	last := tr.onset
	if len(tr.faults) == 0 {
		last = time.Time{} // nothing to name
	}
	for _, t := range tr.named {
		if t.IsZero() {
			last = time.Time{}
			break
		}
		last = max64(last, t)
	}
	if !last.IsZero() {
		o.Named = last.Sub(tr.onset)
	}
	for w := range tr.wrong {
		o.Wrong = append(o.Wrong, w)
	}
	o.Firing = tr.firing
	sort.Strings(o.Wrong)
	o.PeakShare = tr.peakShare()
	return o
}

func (tr *trial) describe(f Fault) string {
	fl := tr.fleet
	switch f.Kind {
	case faultNIC:
		return fmt.Sprintf("dead NIC %s %s", fl.names[f.Node], device(f.Rail))
	case faultDegradedNIC:
		return fmt.Sprintf("degraded NIC %s %s", fl.names[f.Node], device(f.Rail))
	case faultFlap:
		return fmt.Sprintf("flapping %s %s", fl.names[f.Node], device(f.Rail))
	case faultNode:
		return "bad node " + fl.names[f.Node]
	case faultNodeDown:
		return "node down " + fl.names[f.Node]
	case faultCollision:
		return fmt.Sprintf("%s's exporter runs as %s", fl.names[f.Impostor], fl.names[f.Node])
	case faultUplinks:
		return fmt.Sprintf("%s loses uplinks to spines %v", fl.topo.Switches()[f.Switch].Name, f.Uplinks)
	}
	return "?"
}

// busySpan is a machine under test.
type busySpan struct {
	from, to time.Time
	m        int
}

// peakShare is the largest share of the machines under test at once, from
// Prometheus' start on.
func (tr *trial) peakShare() float64 {
	type edge struct {
		at    time.Time
		delta int
		m     int
	}
	var edges []edge
	for _, b := range tr.busy {
		if b.to.Before(tr.promStart) {
			continue
		}
		edges = append(edges, edge{b.from, 1, b.m}, edge{b.to, -1, b.m})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // a run that ends frees its node before the next starts
	})
	per := make([]int, tr.cfg.Nodes)
	busy, peak := 0, 0
	for _, e := range edges {
		if e.delta > 0 {
			if per[e.m] == 0 {
				busy++
			}
			per[e.m]++
		} else {
			if per[e.m]--; per[e.m] == 0 {
				busy--
			}
		}
		peak = max(peak, busy)
	}
	return float64(peak) / float64(tr.cfg.Nodes)
}

// event is a run's result reaching a store, or (tri set) the start of a
// round's triangulation window.
type event struct {
	at    time.Time
	m     *machine
	store *probes.Store
	res   *probes.Result
	tri   *roundState
}

type eventHeap []*event

func (h eventHeap) Len() int           { return len(h) }
func (h eventHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h eventHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)        { *h = append(*h, x.(*event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func max64(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
