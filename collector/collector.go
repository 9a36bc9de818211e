// Package collector turns a pipeline.Collection (what the reader read of a
// node and the health checks' findings on it) and the probes' results into
// Prometheus metrics, and serves them.
//
// A collector is one source of metrics: the source collectors (rdma,
// netdev, pcie, ethtool, dcb) each export one part of the node.Snapshot,
// which the reader filled; the derived ones export the collection's health
// findings and the probe results. Every collector reports
// roce_scrape_collector_success and _duration_seconds.
package collector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/pipeline"
	"github.com/roce-exporter/roce_exporter/reader"
)

const namespace = "roce"

// Collector exports one part of a collection. Update is called once per
// collection, never concurrently with itself.
type Collector interface {
	Update(c *pipeline.Collection, out *Sink) error
}

type factory func(o *Options, logger *slog.Logger) Collector

type registration struct {
	name           string
	help           string
	defaultEnabled bool
	// source collectors export the reader source of the same name; their
	// success is the source's.
	source  bool
	factory factory
}

var registry = map[string]registration{}

// registerSource registers the collector of a reader source.
func registerSource(name string, f factory) {
	register(registration{name: name, help: reader.SourceHelp(name), defaultEnabled: true, source: true, factory: f})
}

// registerDerived registers a collector of what is derived from the
// snapshot or kept beside it.
func registerDerived(name, help string, f factory) {
	register(registration{name: name, help: help, defaultEnabled: true, factory: f})
}

func register(r registration) {
	if _, dup := registry[r.name]; dup {
		panic("collector registered twice: " + r.name)
	}
	registry[r.name] = r
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

// Sources returns the reader sources the given collectors export.
func Sources(collectors []string) []string {
	var out []string
	for _, n := range collectors {
		if registry[n].source {
			out = append(out, n)
		}
	}
	return out
}

var (
	scrapeDurationDesc = newGaugeDesc(namespace+"_scrape_collector_duration_seconds",
		"Time the collector took in the last scrape.", "collector")
	scrapeSuccessDesc = newGaugeDesc(namespace+"_scrape_collector_success",
		"1 if the collector read its source without error in the last scrape, 0 if the source is absent, failed or timed out.",
		"collector")
	readErrorsDesc = newCounterDesc(namespace+"_scrape_read_errors_total",
		"Files the collector skipped because they could not be read or parsed (EINVAL, EIO, EOPNOTSUPP, non-numeric; not \"N/A (no PMA)\", which the device does not support), and series it emitted twice (the first is kept).",
		"collector")
)

type runningCollector struct {
	name    string
	source  bool
	c       Collector
	lastErr string
	// duplicates counts series this collector emitted twice, refused by
	// the encoder; readErrorsSample is the index of its read-error sample
	// in the collection being made.
	duplicates       uint64
	readErrorsSample int
	// status is what the node page shows (status.go); guarded by
	// Exporter.statusMu.
	status CollectorStatus
}

// Exporter runs the collectors on the pipeline's collections and renders
// the result in the Prometheus text format.
type Exporter struct {
	opts       Options
	logger     *slog.Logger
	pipeline   *pipeline.Pipeline
	collectors []*runningCollector

	mu       sync.Mutex
	inflight *collection

	// Buffers reused by consecutive collections (which never overlap).
	all      Sink
	order    sortCache
	lastSize int
	current  *collection // the latest finished collection (guarded by mu)
	free     [][]byte    // output buffers no reader holds (guarded by mu)
	dupWarn  map[string]bool

	statusMu sync.Mutex
}

// collection is one run of every collector on one pipeline collection;
// concurrent scrapes share it.
type collection struct {
	done   chan struct{}
	text   []byte
	series int
	col    *pipeline.Collection
	refs   int // guarded by Exporter.mu
}

// NewExporter builds the enabled collectors on p, whose reader must read
// exactly the sources they export (Sources(o.Enabled)) and which must run
// the health checks when the health collector is on.
func NewExporter(o Options, p *pipeline.Pipeline, logger *slog.Logger) (*Exporter, error) {
	if want, have := Sources(o.Enabled), p.Sources(); !slices.Equal(sorted(want), sorted(have)) {
		return nil, fmt.Errorf("the reader reads %v, the collectors export %v", have, want)
	}
	if want := slices.Contains(o.Enabled, healthCollectorName); want != p.HealthEnabled() {
		return nil, fmt.Errorf("the health collector is %s but the pipeline's checks are %s", onOff(want), onOff(p.HealthEnabled()))
	}
	e := &Exporter{opts: o, logger: logger, pipeline: p}
	for _, name := range o.Enabled {
		reg, ok := registry[name]
		if !ok {
			return nil, fmt.Errorf("unknown collector %q", name)
		}
		e.collectors = append(e.collectors, &runningCollector{name: name, source: reg.source, c: reg.factory(&e.opts, logger.With("collector", name))})
	}
	return e, nil
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// Collectors returns the names of the running collectors.
func (e *Exporter) Collectors() []string {
	out := make([]string, len(e.collectors))
	for i, c := range e.collectors {
		out[i] = c.name
	}
	return out
}

// WriteText collects (or joins the collection in flight, so that a burst
// of concurrent scrapes costs one read of the hardware) and writes the
// exposition to w. It returns the number of series.
func (e *Exporter) WriteText(w interface{ Write([]byte) (int, error) }) (int, error) {
	c := e.collect()
	defer e.release(c)
	_, err := w.Write(c.text)
	return c.series, err
}

// Text collects (or joins a collection) and returns a copy of the
// exposition.
func (e *Exporter) Text() []byte {
	c := e.collect()
	defer e.release(c)
	return append([]byte(nil), c.text...)
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
	buf := e.takeBuffer()
	e.mu.Unlock()

	c.col = e.run()
	dups := e.all.sort(&e.order)
	e.countDuplicates(dups)
	c.text = e.all.write(buf, &e.order)
	c.series = len(e.all.samples) - len(dups)
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

// run exports a collection of the pipeline: the one in flight when a probe
// or the page is reading the node, else a new one. The pipeline has no
// context to give up on: the handler stops waiting at --web.timeout while
// the collection goes on.
func (e *Exporter) run() *pipeline.Collection {
	col, err := e.pipeline.Collect(context.Background())
	if err != nil {
		// Only a bug panics there; the scrape still answers, every source
		// failed, and the next scrape reads afresh.
		e.logger.Error("reading the node failed", "err", err)
		col = &pipeline.Collection{Snapshot: &node.Snapshot{Time: time.Now()}, When: time.Now()}
		for _, name := range e.pipeline.Sources() {
			col.Sources = append(col.Sources, reader.SourceResult{Name: name, Err: err})
		}
		col.HealthErr = err
	}
	e.all.reset()
	// Sources first: the derived collectors may export what the source
	// collectors' emission left (none does today), and a fixed order keeps
	// the output's shape the same every scrape, which lets render reuse
	// its sort.
	for i, rc := range e.collectors {
		if !rc.source {
			continue
		}
		sr, _ := col.Source(rc.name)
		switch {
		case sr.Stuck:
			e.all.emit(scrapeSuccessDesc, 0, rc.name)
			e.record(rc, errStuck, 0)
			continue
		case sr.TimedOut:
			e.all.emit(scrapeDurationDesc, sr.Duration.Seconds(), rc.name)
			e.all.emit(scrapeSuccessDesc, 0, rc.name)
			e.record(rc, errTimedOut, sr.Duration)
			continue
		}
		if err := e.update(i, col); err != nil && sr.Err == nil {
			sr.Err = err
		}
		e.finish(rc, sr.Err, sr.Duration)
	}
	for i, rc := range e.collectors {
		if rc.source {
			continue
		}
		begin := time.Now()
		err := e.update(i, col)
		d := time.Since(begin)
		if _, ok := rc.c.(*healthCollector); ok {
			// The pipeline ran the checks for everyone; they are still
			// this collector's work.
			d += col.HealthDuration
		}
		e.finish(rc, err, d)
	}
	for _, rc := range e.collectors {
		rc.readErrorsSample = len(e.all.samples)
		e.all.emit(readErrorsDesc, float64(col.ReadErrors[rc.name]+rc.duplicates), rc.name)
	}
	return col
}

// update runs collector i into the shared sink, turning a panic (a bug on
// garbage input) into a failed collector instead of a dead exporter.
func (e *Exporter) update(i int, col *pipeline.Collection) (err error) {
	mark := e.all.mark()
	e.all.owner = int32(i)
	defer func() {
		e.all.owner = noOwner
		if r := recover(); r != nil {
			err = fmt.Errorf("panic in collector: %v", r)
			e.all.truncate(mark)
		}
	}()
	return e.collectors[i].c.Update(col, &e.all)
}

// succeeded says whether a collector's run counts as a success: no error,
// or a source with nothing of its kind on the node (reader.ErrNotApplicable).
// The metric and the node page both judge by it.
func succeeded(err error) bool {
	return err == nil || errors.Is(err, reader.ErrNotApplicable)
}

func (e *Exporter) finish(rc *runningCollector, err error, d time.Duration) {
	success := 1.0
	if !succeeded(err) {
		success = 0
		msg := err.Error()
		repeated := rc.lastErr == msg
		rc.lastErr = msg
		switch {
		case errors.Is(err, reader.ErrNoData):
			e.logger.Debug("collector source absent", "collector", rc.name, "err", err)
		case repeated:
			e.logger.Debug("collector failed", "collector", rc.name, "err", err)
		default:
			e.logger.Error("collector failed", "collector", rc.name, "err", err)
		}
	} else {
		rc.lastErr = ""
	}
	e.all.emit(scrapeDurationDesc, d.Seconds(), rc.name)
	e.all.emit(scrapeSuccessDesc, success, rc.name)
	e.record(rc, err, d)
}

// countDuplicates charges every series the encoder refused as a second
// sample of one series to the collector that emitted it. Two files that map
// to one metric name would otherwise give Prometheus two values for one
// series, and it would reject the whole scrape.
func (e *Exporter) countDuplicates(dups []int32) {
	for _, i := range dups {
		s := &e.all.samples[i]
		if s.owner >= 0 && int(s.owner) < len(e.collectors) {
			rc := e.collectors[s.owner]
			rc.duplicates++
			e.all.samples[rc.readErrorsSample].value++
		}
		if len(e.dupWarn) < maxWarnedDuplicates && !e.dupWarn[s.desc.name] {
			if e.dupWarn == nil {
				e.dupWarn = map[string]bool{}
			}
			e.dupWarn[s.desc.name] = true
			e.logger.Warn("two sources feed one series; keeping the first", "metric", s.desc.name, "labels", e.all.labels[s.lo:s.hi])
		}
	}
}

// maxWarnedDuplicates bounds the metric names remembered as already warned
// about.
const maxWarnedDuplicates = 256
