package probes

import (
	"sort"
	"sync"
)

// historyLimit bounds the results kept for the landing page.
const historyLimit = 100

// Store keeps the latest result per link, run counters and a short
// history. It is what the probe collector exports at scrape time.
type Store struct {
	mu      sync.Mutex
	latest  map[string]*Result
	runs    map[[2]string]uint64 // {probe, result} -> count
	history []*Result
	fresh   freshness
	self    string // this node's plan name, the node label of the judgements
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{latest: map[string]*Result{}, runs: map[[2]string]uint64{}, fresh: newFreshness()}
}

// Add records a finished run. A skipped run is counted but does not
// replace the last real measurement of the link.
func (s *Store) Add(r *Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	outcome := "failure"
	switch {
	case r.Skipped:
		outcome = "skipped"
	case r.Success:
		outcome = "success"
	}
	s.runs[[2]string{r.Probe, outcome}]++
	if !r.Skipped {
		if r.Probe == KindNCCLGroup {
			// One series per leader: the last group it led.
			for k, old := range s.latest {
				if old.Probe == KindNCCLGroup {
					delete(s.latest, k)
				}
			}
		}
		s.latest[r.Key()] = r
		s.fresh.completed(r)
		s.fresh.prune(s.latest)
	}
	s.history = append(s.history, r)
	if len(s.history) > historyLimit {
		s.history = append(s.history[:0:0], s.history[len(s.history)-historyLimit:]...)
	}
}

// Latest returns the last non-skipped result of every link that is still
// fresh (see SetFreshness), sorted.
func (s *Store) Latest() []*Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.latest))
	now := s.fresh.now()
	for k, r := range s.latest {
		if s.fresh.isFresh(r, now) {
			keys = append(keys, k)
		}
	}
	// The map key is the result's Key: sort it once instead of building
	// two keys per comparison.
	sort.Strings(keys)
	out := make([]*Result, len(keys))
	for i, k := range keys {
		out[i] = s.latest[k]
	}
	return out
}

// Recent returns up to n results, newest first.
func (s *Store) Recent(n int) []*Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Result
	for i := len(s.history) - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, s.history[i])
	}
	return out
}

// RunCount is one roce_probe_runs_total series.
type RunCount struct {
	Probe, Result string
	Count         uint64
}

// Runs returns the run counters, sorted.
func (s *Store) Runs() []RunCount {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]RunCount, 0, len(s.runs))
	for k, v := range s.runs {
		out = append(out, RunCount{Probe: k[0], Result: k[1], Count: v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Probe != out[j].Probe {
			return out[i].Probe < out[j].Probe
		}
		return out[i].Result < out[j].Result
	})
	return out
}
