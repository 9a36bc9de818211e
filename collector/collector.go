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

	"github.com/prometheus/client_golang/prometheus"
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
	scrapeDurationDesc = prometheus.NewDesc(namespace+"_scrape_collector_duration_seconds",
		"Time the collector took in the last scrape.", []string{"collector"}, nil)
	scrapeSuccessDesc = prometheus.NewDesc(namespace+"_scrape_collector_success",
		"1 if the collector read its source without error in the last scrape, 0 if the source is absent, failed or timed out.",
		[]string{"collector"}, nil)
)

type runningCollector struct {
	name    string
	phase   phase
	c       Collector
	busy    atomic.Bool // an earlier Update is still running (stuck read)
	lastErr atomic.Value
}

// Exporter runs the enabled collectors concurrently per scrape and
// implements prometheus.Collector.
type Exporter struct {
	cfg        *Config
	logger     *slog.Logger
	collectors []*runningCollector
	readErrors *prometheus.CounterVec
	topology   *topologyCache

	warnMu sync.Mutex
	warned map[string]bool

	mu       sync.Mutex
	inflight *collection
	previous *Snapshot
	latest   *Snapshot
}

type collection struct {
	done    chan struct{}
	metrics []prometheus.Metric
	snap    *Snapshot
}

// NewExporter builds the enabled collectors. A collector whose factory
// fails is logged and left out; the others still run.
func NewExporter(cfg *Config, logger *slog.Logger) (*Exporter, error) {
	if err := cfg.finish(); err != nil {
		return nil, err
	}
	e := &Exporter{
		cfg:    cfg,
		logger: logger,
		readErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "scrape_read_errors_total",
			Help: "Files the collector skipped because they could not be read or parsed (EINVAL, EIO, EOPNOTSUPP, non-numeric, \"N/A (no PMA)\").",
		}, []string{"collector"}),
		topology: newTopologyCache(cfg),
	}
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
		e.collectors = append(e.collectors, &runningCollector{name: name, phase: reg.phase, c: c})
		e.readErrors.WithLabelValues(name)
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

// Describe sends nothing: the exporter is an unchecked collector because
// the set of series (counters, priorities) changes with the hardware.
func (e *Exporter) Describe(chan<- *prometheus.Desc) {}

// Collect runs one collection, or joins the one already in flight so that a
// burst of concurrent scrapes costs one read of the hardware.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	c := e.collect()
	for _, m := range c.metrics {
		ch <- m
	}
}

// Snapshot runs one collection and returns the typed view of the node.
func (e *Exporter) Snapshot() *Snapshot { return e.collect().snap }

func (e *Exporter) collect() *collection {
	e.mu.Lock()
	if c := e.inflight; c != nil {
		e.mu.Unlock()
		<-c.done
		return c
	}
	c := &collection{done: make(chan struct{})}
	e.inflight = c
	prev := e.latest
	e.mu.Unlock()

	c.metrics, c.snap = e.run(prev)

	e.mu.Lock()
	e.inflight = nil
	e.previous, e.latest = prev, c.snap
	e.mu.Unlock()
	close(c.done)
	return c
}

type result struct {
	rc       *runningCollector
	sink     *Sink
	err      error
	duration time.Duration
}

func (e *Exporter) run(prev *Snapshot) ([]prometheus.Metric, *Snapshot) {
	s := newScrape(e, prev)
	var out []prometheus.Metric
	for _, p := range []phase{phaseSource, phaseDerived} {
		out = e.runPhase(s, p, out)
		if p == phaseSource {
			s.seal()
		}
	}
	out = append(out, collectCounterVec(e.readErrors)...)
	return out, s.snap
}

func (e *Exporter) runPhase(s *Scrape, p phase, out []prometheus.Metric) []prometheus.Metric {
	var started []*runningCollector
	results := make(chan result, len(e.collectors))
	for _, rc := range e.collectors {
		if rc.phase != p {
			continue
		}
		if !rc.busy.CompareAndSwap(false, true) {
			// The previous run is blocked in a read that cannot be
			// cancelled; starting another would pile up goroutines.
			e.logger.Debug("collector still stuck in an earlier scrape, skipped", "collector", rc.name)
			out = append(out, prometheus.MustNewConstMetric(scrapeSuccessDesc, prometheus.GaugeValue, 0, rc.name))
			continue
		}
		started = append(started, rc)
		go func(rc *runningCollector) {
			sink := &Sink{}
			begin := time.Now()
			err := safeUpdate(rc, s, sink)
			// Clear busy before reporting, or the next scrape could start
			// before this goroutine gets to run again and skip the
			// collector as stuck.
			rc.busy.Store(false)
			results <- result{rc: rc, sink: sink, err: err, duration: time.Since(begin)}
		}(rc)
	}
	timer := time.NewTimer(e.cfg.Timeout)
	defer timer.Stop()
	pending := make(map[*runningCollector]bool, len(started))
	for _, rc := range started {
		pending[rc] = true
	}
	for len(pending) > 0 {
		select {
		case r := <-results:
			delete(pending, r.rc)
			out = append(out, e.finish(r)...)
			if p == phaseSource {
				ok := r.err == nil
				s.update(func(sn *Snapshot) { sn.Sources[r.rc.name] = ok })
			}
		case <-timer.C:
			for rc := range pending {
				e.logger.Warn("collector timed out; its source is not answering", "collector", rc.name, "timeout", e.cfg.Timeout)
				out = append(out,
					prometheus.MustNewConstMetric(scrapeDurationDesc, prometheus.GaugeValue, e.cfg.Timeout.Seconds(), rc.name),
					prometheus.MustNewConstMetric(scrapeSuccessDesc, prometheus.GaugeValue, 0, rc.name))
			}
			return out
		}
	}
	return out
}

// safeUpdate turns a panic in a collector (a parser bug on garbage input)
// into a failed collection instead of a dead exporter.
func safeUpdate(rc *runningCollector, s *Scrape, sink *Sink) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic in collector: %v", r)
			sink.metrics = nil
		}
	}()
	return rc.c.Update(s, sink)
}

func (e *Exporter) finish(r result) []prometheus.Metric {
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
	return append(r.sink.metrics,
		prometheus.MustNewConstMetric(scrapeDurationDesc, prometheus.GaugeValue, r.duration.Seconds(), r.rc.name),
		prometheus.MustNewConstMetric(scrapeSuccessDesc, prometheus.GaugeValue, success, r.rc.name))
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

func collectCounterVec(v *prometheus.CounterVec) []prometheus.Metric {
	ch := make(chan prometheus.Metric, 16)
	go func() { v.Collect(ch); close(ch) }()
	var out []prometheus.Metric
	for m := range ch {
		out = append(out, m)
	}
	return out
}

// Sink collects one collector's metrics for one scrape.
type Sink struct{ metrics []prometheus.Metric }

func (s *Sink) gauge(d *prometheus.Desc, v float64, labels ...string) {
	s.metrics = append(s.metrics, prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...))
}

func (s *Sink) counter(d *prometheus.Desc, v float64, labels ...string) {
	s.metrics = append(s.metrics, prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...))
}

// Len reports how many metrics were emitted.
func (s *Sink) Len() int { return len(s.metrics) }
