package collector

import (
	"errors"
	"slices"
	"sync"
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

// Status is the exporter's view of the node at its latest collection: what
// the landing page shows.
type Status struct {
	// Collected is when the collection ended.
	Collected  time.Time
	Collectors []CollectorStatus
	// HealthEnabled says whether the health collector runs; Findings are
	// its verdicts at Collected, worst first.
	HealthEnabled bool
	Findings      []health.Finding
}

// pageMaxAge is how old a collection the page may show: Prometheus
// scrapes every 15–60 s and the page reuses its collection, but a node
// nobody scrapes still gets a fresh reading.
const pageMaxAge = 10 * time.Second

// Status returns the latest collection's state, collecting first when
// there is none or it is older than pageMaxAge.
func (e *Exporter) Status() Status {
	e.statusMu.Lock()
	stale := time.Since(e.collected) > pageMaxAge
	e.statusMu.Unlock()
	if stale {
		e.release(e.collect())
	}
	e.statusMu.Lock()
	defer e.statusMu.Unlock()
	st := Status{Collected: e.collected}
	for _, rc := range e.collectors {
		st.Collectors = append(st.Collectors, rc.status)
		if hc, ok := rc.c.(*healthCollector); ok {
			st.HealthEnabled = true
			st.Findings = hc.latest()
		}
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

// findingsStore keeps the health collector's latest findings.
type findingsStore struct {
	mu       sync.Mutex
	findings []health.Finding
}

// set keeps a scrape's findings as they are: sorting them is the page's
// work, done when somebody looks, not on every scrape.
func (f *findingsStore) set(fs []health.Finding) {
	f.mu.Lock()
	f.findings = fs
	f.mu.Unlock()
}

// latest returns the findings worst first. Stable: within a status the
// checks keep the doctor's order (layer by layer, ports in rail order).
func (f *findingsStore) latest() []health.Finding {
	f.mu.Lock()
	sorted := slices.Clone(f.findings)
	f.mu.Unlock()
	health.SortWorstFirst(sorted)
	return sorted
}
