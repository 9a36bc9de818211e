package probes

import (
	"sort"
	"time"
)

// freshness drops results that are too old to say anything about the link:
// with a fleet schedule a pair meets again only after a full sweep (days at
// a hundred nodes), so a link's last result would otherwise keep a fixed
// failure, or hide a new one behind an old success, for that long. The bound
// of a probe kind is derived from its schedule (config.FreshFor): a few of
// its intervals. Kinds without a bound never go stale.
type freshness struct {
	bound map[string]time.Duration
	clock func() time.Time
	// last is the start of the newest completed (not skipped) run per kind;
	// RoCEProbeNotRunRecently compares it with the same bound.
	last map[string]time.Time
	// pruned is when prune last walked the results: it runs at most once a
	// minute of the store's clock, so adding a result stays O(1).
	pruned time.Time
}

func newFreshness() freshness {
	return freshness{bound: map[string]time.Duration{}, clock: time.Now, last: map[string]time.Time{}}
}

func (f *freshness) now() time.Time { return f.clock() }

func (f *freshness) isFresh(r *Result, now time.Time) bool {
	b, ok := f.bound[r.Probe]
	return !ok || b <= 0 || now.Sub(r.Start) <= b
}

func (f *freshness) completed(r *Result) {
	if r.Start.After(f.last[r.Probe]) {
		f.last[r.Probe] = r.Start
	}
}

// prune forgets results four bounds old, so that a full sweep of a large
// fleet does not keep one result per peer and rail in memory. It walks all
// of the store's maps at once: they share one throttle, and a map pruned
// alone would wait for the others' minute.
func (f *freshness) prune(maps ...map[string]*Result) {
	now := f.now()
	if now.Sub(f.pruned) < time.Minute && !now.Before(f.pruned) {
		return
	}
	f.pruned = now
	for _, m := range maps {
		for k, r := range m {
			// Divided, not multiplied: 4 × a bound near the longest Duration
			// wrapped negative and made every result four bounds old.
			if b := f.bound[r.Probe]; b > 0 && now.Sub(r.Start)/4 > b {
				delete(m, k)
			}
		}
	}
}

// SetFreshness sets how long results of a probe kind count; 0 or unset
// keeps them until replaced.
func (s *Store) SetFreshness(kind string, bound time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fresh.bound[kind] = bound
}

// SetClock replaces the wall clock the freshness is judged by (tests and
// the simulation).
func (s *Store) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fresh.clock = now
}

// KindStatus is what the store knows about one probe kind as a whole.
type KindStatus struct {
	Probe string
	// Bound is how long a result counts (0: no bound).
	Bound time.Duration
	// LastCompleted is the start of the newest run that was not skipped.
	LastCompleted time.Time
	// Stale counts links whose last result is older than Bound: they are
	// no longer exported or judged.
	Stale int
}

// Kinds returns the status of every kind with a bound or a completed run,
// sorted by kind.
func (s *Store) Kinds() []KindStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	byKind := map[string]*KindStatus{}
	get := func(k string) *KindStatus {
		if byKind[k] == nil {
			byKind[k] = &KindStatus{Probe: k, Bound: s.fresh.bound[k]}
		}
		return byKind[k]
	}
	for k, b := range s.fresh.bound {
		if b > 0 {
			get(k)
		}
	}
	for k, t := range s.fresh.last {
		get(k).LastCompleted = t
	}
	now := s.fresh.now()
	for _, r := range s.latest {
		if !s.fresh.isFresh(r, now) {
			get(r.Probe).Stale++
		}
	}
	out := make([]KindStatus, 0, len(byKind))
	for _, k := range byKind {
		out = append(out, *k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Probe < out[j].Probe })
	return out
}
