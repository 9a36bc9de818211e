// Package collector reads the RDMA, network and PCIe state of a node at
// scrape time and turns it into Prometheus metrics and a typed Snapshot that
// the health checks evaluate.
package collector

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

const namespace = "roce"

// ErrNoData means the collector's source does not exist on this node (no
// RDMA devices, no DCB support): success=0, logged at debug, not an error.
var ErrNoData = errors.New("source not present on this node")

// Collector reads one source. Update is never called concurrently with
// itself: the Exporter skips a collector whose previous run is still stuck.
type Collector interface {
	Update(s *Scrape, out *Sink) error
}

// Closer is implemented by collectors that hold resources (open files,
// netlink sockets) to release at shutdown.
type Closer interface{ Close() error }

// phase orders collectors inside one scrape: derived collectors (health)
// run after every source collector has finished or timed out, so they see
// the same snapshot without reading sysfs a second time.
type phase int

const (
	phaseSource phase = iota
	phaseDerived
)

type factory func(cfg *Config, logger *slog.Logger) (Collector, error)

type registration struct {
	name           string
	defaultEnabled bool
	phase          phase
	factory        factory
	help           string
}

var registry = map[string]registration{}

func registerCollector(name, help string, enabled bool, p phase, f factory) {
	if _, dup := registry[name]; dup {
		panic("collector registered twice: " + name)
	}
	registry[name] = registration{name: name, help: help, defaultEnabled: enabled, phase: p, factory: f}
}

// Names lists every registered collector, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Help returns the one-line description of a collector.
func Help(name string) string { return registry[name].help }

var (
	scrapeDurationDesc = newGaugeDesc(namespace+"_scrape_collector_duration_seconds",
		"Time the collector took in the last scrape.", "collector")
	scrapeSuccessDesc = newGaugeDesc(namespace+"_scrape_collector_success",
		"1 if the collector read its source without error in the last scrape, 0 if the source is absent, failed or timed out.",
		"collector")
	readErrorsDesc = newCounterDesc(namespace+"_scrape_read_errors_total",
		"Files the collector skipped because they could not be read or parsed (EINVAL, EIO, EOPNOTSUPP, non-numeric, \"N/A (no PMA)\").",
		"collector")
)

type runningCollector struct {
	name       string
	phase      phase
	c          Collector
	busy       atomic.Bool // an earlier Update is still running (stuck read)
	lastErr    atomic.Value
	sink       Sink // reused; owned by the goroutine while busy
	readErrors atomic.Uint64
}

// Exporter runs the enabled collectors concurrently per scrape and renders
// the result in the Prometheus text format.
type Exporter struct {
	cfg        *Config
	logger     *slog.Logger
	collectors []*runningCollector
	byName     map[string]*runningCollector
	topology   *topologyCache

	warnMu sync.Mutex
	warned map[string]bool

	mu       sync.Mutex
	inflight *collection

	// Buffers reused by consecutive collections (which never overlap).
	all      Sink
	order    sortCache
	lastSize int
	current  *collection // the latest finished collection; its snapshot is the previous one for rate checks
	free     [][]byte    // output buffers no reader holds (guarded by mu)
}

// collection is one run of every collector; concurrent scrapes share it.
type collection struct {
	done   chan struct{}
	text   []byte
	series int
	snap   *Snapshot
	refs   int // guarded by Exporter.mu
}

// NewExporter builds the enabled collectors. A collector whose factory
// fails is logged and left out; the others still run.
func NewExporter(cfg *Config, logger *slog.Logger) (*Exporter, error) {
	if err := cfg.finish(); err != nil {
		return nil, err
	}
	e := &Exporter{cfg: cfg, logger: logger, topology: newTopologyCache(cfg), byName: map[string]*runningCollector{}}
	for _, name := range cfg.Enabled {
		reg, ok := registry[name]
		if !ok {
			return nil, fmt.Errorf("unknown collector %q", name)
		}
		c, err := reg.factory(cfg, logger.With("collector", name))
		if err != nil {
			logger.Error("collector disabled: setup failed", "collector", name, "err", err)
			continue
		}
		rc := &runningCollector{name: name, phase: reg.phase, c: c}
		e.collectors = append(e.collectors, rc)
		e.byName[name] = rc
	}
	return e, nil
}

// Collectors returns the names of the running collectors.
func (e *Exporter) Collectors() []string {
	out := make([]string, len(e.collectors))
	for i, c := range e.collectors {
		out[i] = c.name
	}
	return out
}

// Snapshot runs one collection and returns the typed view of the node.
func (e *Exporter) Snapshot() *Snapshot {
	c := e.collect()
	defer e.release(c)
	return c.snap
}

// Text runs one collection (or joins the one in flight, so that a burst
// of concurrent scrapes costs one read of the hardware) and returns a copy
// of the rendered exposition.
func (e *Exporter) Text() []byte {
	c := e.collect()
	defer e.release(c)
	return append([]byte(nil), c.text...)
}

// WriteText collects (or joins a collection) and writes the exposition
// to w without copying it. It returns the number of series.
func (e *Exporter) WriteText(w interface{ Write([]byte) (int, error) }) (int, error) {
	c := e.collect()
	defer e.release(c)
	_, err := w.Write(c.text)
	return c.series, err
}

// collect returns a collection the caller holds a reference to; it must
// call release when done with the text. The references let the next
// collection render into a buffer nobody is still writing out.
func (e *Exporter) collect() *collection {
	e.mu.Lock()
	if c := e.inflight; c != nil {
		c.refs++
		e.mu.Unlock()
		<-c.done
		return c
	}
	// One reference for the caller, one for the exporter until the next
	// collection replaces this one.
	c := &collection{done: make(chan struct{}), refs: 2}
	e.inflight = c
	var prev *Snapshot
	if e.current != nil {
		prev = e.current.snap
	}
	buf := e.takeBuffer()
	e.mu.Unlock()

	c.snap = e.run(prev)
	c.text = e.all.render(buf, &e.order)
	c.series = len(e.all.samples)
	e.lastSize = len(c.text)

	e.mu.Lock()
	e.inflight = nil
	old := e.current
	e.current = c
	e.mu.Unlock()
	close(c.done)
	if old != nil {
		e.release(old)
	}
	return c
}

func (e *Exporter) release(c *collection) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c.refs--
	if c.refs == 0 && c.text != nil {
		e.free = append(e.free, c.text[:0])
		c.text = nil
	}
}

// takeBuffer reuses the output buffer of a collection nobody reads any
// more: on a 32-port node the text is half a megabyte per scrape, which
// would otherwise dominate the garbage collector's work. Call with e.mu.
func (e *Exporter) takeBuffer() []byte {
	if n := len(e.free); n > 0 {
		b := e.free[n-1]
		e.free = e.free[:n-1]
		return b
	}
	return make([]byte, 0, e.lastSize+e.lastSize/8)
}

type result struct {
	rc       *runningCollector
	err      error
	duration time.Duration
}

func (e *Exporter) run(prev *Snapshot) *Snapshot {
	s := newScrape(e, prev)
	e.all.reset()
	e.runPhase(s, phaseSource)
	s.seal()
	e.runPhase(s, phaseDerived)
	for _, rc := range e.collectors {
		e.all.emit(readErrorsDesc, float64(rc.readErrors.Load()), rc.name)
	}
	return s.snap
}

func (e *Exporter) runPhase(s *Scrape, p phase) {
	var started []*runningCollector
	for _, rc := range e.collectors {
		if rc.phase != p {
			continue
		}
		if !rc.busy.CompareAndSwap(false, true) {
			// The previous run is blocked in a read that cannot be
			// cancelled; starting another would pile up goroutines.
			e.logger.Debug("collector still stuck in an earlier scrape, skipped", "collector", rc.name)
			e.all.emit(scrapeSuccessDesc, 0, rc.name)
			continue
		}
		started = append(started, rc)
	}
	if len(started) == 0 {
		return
	}
	// Each goroutine writes its own slot and then flags it; only the last
	// one to finish wakes the waiter, since every wake-up costs a futex
	// call on the scrape path.
	results := make([]result, len(started))
	finished := make([]atomic.Bool, len(started))
	var remaining atomic.Int64
	remaining.Store(int64(len(started)))
	allDone := make(chan struct{})
	for i, rc := range started {
		go func() {
			rc.sink.reset()
			begin := time.Now()
			err := safeUpdate(rc, s, &rc.sink)
			d := time.Since(begin)
			if p == phaseSource {
				s.update(func(sn *Snapshot) { sn.Sources[rc.name] = err == nil })
			}
			results[i] = result{rc: rc, err: err, duration: d}
			finished[i].Store(true)
			// Clear busy before reporting, or the next scrape could start
			// before this goroutine gets to run again and skip the
			// collector as stuck.
			rc.busy.Store(false)
			if remaining.Add(-1) == 0 {
				close(allDone)
			}
		}()
	}
	timer := time.NewTimer(e.cfg.Timeout)
	select {
	case <-allDone:
	case <-timer.C:
	}
	timer.Stop()
	// Append in collector order, not completion order: the output then has
	// the same shape every scrape, which lets render reuse its sort.
	for i, rc := range started {
		if finished[i].Load() {
			e.finish(results[i])
			continue
		}
		e.logger.Warn("collector timed out; its source is not answering", "collector", rc.name, "timeout", e.cfg.Timeout)
		e.all.emit(scrapeDurationDesc, e.cfg.Timeout.Seconds(), rc.name)
		e.all.emit(scrapeSuccessDesc, 0, rc.name)
	}
}

// safeUpdate turns a panic in a collector (a parser bug on garbage input)
// into a failed collection instead of a dead exporter.
func safeUpdate(rc *runningCollector, s *Scrape, sink *Sink) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic in collector: %v", r)
			sink.reset()
		}
	}()
	return rc.c.Update(s, sink)
}

func (e *Exporter) finish(r result) {
	success := 1.0
	if r.err != nil {
		success = 0
		msg := r.err.Error()
		repeated := r.rc.lastErr.Swap(msg) == msg
		switch {
		case errors.Is(r.err, ErrNoData):
			e.logger.Debug("collector source absent", "collector", r.rc.name, "err", r.err)
		case repeated:
			e.logger.Debug("collector failed", "collector", r.rc.name, "err", r.err)
		default:
			e.logger.Error("collector failed", "collector", r.rc.name, "err", r.err)
		}
	} else {
		r.rc.lastErr.Store("")
	}
	e.all.appendSink(&r.rc.sink)
	e.all.emit(scrapeDurationDesc, r.duration.Seconds(), r.rc.name)
	e.all.emit(scrapeSuccessDesc, success, r.rc.name)
}

// maxWarnedPaths bounds the memory spent remembering which unreadable
// files were already reported at warn level.
const maxWarnedPaths = 4096

// warnOnce logs the first failure of a path at warn level and repeats at
// debug, so a permanently broken file does not flood the log every scrape.
func (e *Exporter) warnOnce(collector, path string, err error) {
	e.warnMu.Lock()
	first := !e.warned[path]
	if first && len(e.warned) < maxWarnedPaths {
		if e.warned == nil {
			e.warned = map[string]bool{}
		}
		e.warned[path] = true
	}
	e.warnMu.Unlock()
	if first {
		e.logger.Warn("skipping unreadable file", "collector", collector, "path", path, "err", err)
	} else {
		e.logger.Debug("skipping unreadable file", "collector", collector, "path", path, "err", err)
	}
}

// Close releases the collectors' resources.
func (e *Exporter) Close() error {
	var errs []error
	for _, rc := range e.collectors {
		if c, ok := rc.c.(Closer); ok {
			if rc.busy.Load() {
				continue // still in use by a stuck read
			}
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}
