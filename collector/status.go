package collector

import (
	"errors"
	"slices"
	"time"

	"github.com/roce-exporter/roce_exporter/health"
	"github.com/roce-exporter/roce_exporter/reader"
)

// The errors a source collector records when its read did not run to the
// end; the metrics say the same with roce_scrape_collector_success 0.
var (
	errStuck    = errors.New("an earlier read of this source is still blocked in the kernel; not read")
	errTimedOut = errors.New("the read did not finish within --collector.timeout")
)

// CollectorStatus is one collector's latest run, for the node page.
type CollectorStatus struct {
	Name string
	// LastRun is when the latest run ended; zero before the first.
	LastRun time.Time
	// LastSuccess is when a run last ended without error; zero if none has.
	LastSuccess time.Time
	Duration    time.Duration
	// Err is the latest run's error ("" on success).
	Err string
	// Absent: the source does not exist on this node (no RDMA driver, no
	// DCB support); not a fault of the exporter.
	Absent bool
}

// Status is the exporter's view of the node: what the landing page shows.
type Status struct {
	// Collected is when the latest collection of the node ended.
	Collected  time.Time
	Collectors []CollectorStatus
	// HealthEnabled says whether the health collector runs; Findings are
	// the checks' verdicts at Collected, worst first.
	HealthEnabled bool
	Findings      []health.Finding
}

// pageMaxAge is how old a collection the page may show: Prometheus
// scrapes every 15–60 s and the page reuses its collection, but a node
// nobody scrapes still gets a fresh reading.
const pageMaxAge = 10 * time.Second

// Status returns the collectors' latest runs and the pipeline's latest
// collection (which a probe may have made after the last scrape), running
// the collectors first when they have not run within pageMaxAge.
func (e *Exporter) Status() Status {
	e.mu.Lock()
	stale := e.current == nil || time.Since(e.current.col.When) > pageMaxAge
	e.mu.Unlock()
	if stale {
		e.release(e.collect())
	}
	latest := e.pipeline.Latest()
	st := Status{HealthEnabled: e.pipeline.HealthEnabled()}
	if latest != nil {
		st.Collected = latest.When
		// Sorting is the page's work, done when somebody looks, not on
		// every scrape.
		st.Findings = slices.Clone(latest.Findings)
		health.SortWorstFirst(st.Findings)
	}
	e.statusMu.Lock()
	defer e.statusMu.Unlock()
	for _, rc := range e.collectors {
		st.Collectors = append(st.Collectors, rc.status)
	}
	return st
}

// record keeps rc's latest run for Status. Collections never overlap, but
// Status reads while one runs.
func (e *Exporter) record(rc *runningCollector, err error, d time.Duration) {
	now := time.Now()
	e.statusMu.Lock()
	defer e.statusMu.Unlock()
	s := &rc.status
	s.Name, s.LastRun, s.Duration = rc.name, now, d
	s.Err, s.Absent = "", false
	if succeeded(err) {
		s.LastSuccess = now
		return
	}
	s.Err = err.Error()
	s.Absent = errors.Is(err, reader.ErrNoData)
}
