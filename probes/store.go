package probes

import (
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/roce-exporter/roce_exporter/probes/schedule"
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
	// untestable are this node's rails no peer can test, per pair probe kind.
	untestable map[string][]int
	identity   identity
	state      stateDir
	// unreached are links whose client never reached this node in a turn
	// (NoteUnreached), keyed as latest: judged as failures, not exported.
	unreached map[string]*Result
	// shadowed holds, per pair-probe link whose latest result is a refused
	// connection, the measurement before it: a refusal says the peer's
	// responder was not listening (busy with another test), nothing of the
	// link, so Judge and Outcomes keep judging the link by what it last
	// measured, as the recording rules do (they count a refusal as neither).
	shadowed map[string]*Result
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{latest: map[string]*Result{}, runs: map[[2]string]uint64{}, fresh: newFreshness(),
		unreached: map[string]*Result{}, shadowed: map[string]*Result{}}
}

// Add records a finished run. A skipped run is counted but does not
// replace the last real measurement of the link.
func (s *Store) Add(r *Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs[[2]string{r.Probe, outcomeOf(r)}]++
	if !r.Skipped {
		if r.Probe == KindNCCLGroup {
			// One series per leader: the last group it led.
			for k, old := range s.latest {
				if old.Probe == KindNCCLGroup {
					delete(s.latest, k)
				}
			}
		}
		if r.Probe == KindIncast {
			// One series per device: the last incast it took part in, as
			// receiver or sender (the peers change every time).
			for k, old := range s.latest {
				if old.Probe == KindIncast && old.Device == r.Device {
					delete(s.latest, k)
				}
			}
		}
		k := r.Key()
		if old := s.latest[k]; isRefused(r) && old != nil && !isRefused(old) {
			s.shadowed[k] = old
		} else if !isRefused(r) {
			delete(s.shadowed, k)
		}
		s.latest[k] = r
		s.fresh.completed(r)
		s.fresh.prune(s.latest, s.shadowed, s.unreached)
	}
	s.history = append(s.history, r)
	if len(s.history) > historyLimit {
		s.history = append(s.history[:0:0], s.history[len(s.history)-historyLimit:]...)
	}
}

// NoteUnreached records that the client peer of a turn that began at start
// reached this node on other rails but never on these (schedule.Unreached),
// one per link (the device of each rail, in links' order). Judge counts such
// a link as failed with the peer until a newer result of the link replaces
// it: the far end's third failure after a dead NIC's last pass, with its two
// witnesses. It is no result: nothing was measured, so nothing is exported.
func (s *Store) NoteUnreached(kind, peer string, rails []int, device func(rail int) string, start time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rail := range rails {
		r := &Result{Probe: kind, Peer: peer, Device: device(rail), Rail: rail, Role: "server", Start: start, Reason: "not_reached"}
		if r.Device == "" {
			continue
		}
		s.unreached[r.Key()] = r
	}
	s.fresh.prune(s.latest, s.shadowed, s.unreached)
}

// FarEndRails are the rails the far end (server) of turn triangulates, from
// the tests it served (schedule.FarEndRails); the rails its client reached
// on others but never on these are noted as unreached (NoteUnreached), each
// with its device. The scheduler and the simulator both call it.
func (s *Store) FarEndRails(kind string, turn schedule.Turn, rails int, device func(rail int) string) []int {
	served := s.Outcomes(kind)
	if silent := schedule.Unreached(turn, served, rails); len(silent) > 0 {
		s.NoteUnreached(kind, turn.Peer, silent, device, turn.Start)
	}
	return schedule.FarEndRails(turn, served, rails)
}

// isRefused is a pair test whose connection the peer refused: no
// measurement of the link.
func isRefused(r *Result) bool {
	return isPairProbe(r.Probe) && !r.Success && !r.Skipped && r.Reason == ReasonConnectRefused
}

// measured is the result a link is judged by: its latest, or the measurement
// a refused connection shadows (nil: none).
func (s *Store) measured(k string, latest *Result) *Result {
	if latest != nil && isRefused(latest) {
		return s.shadowed[k]
	}
	return latest
}

// outcomeOf is a run's result label in roce_probe_runs_total.
func outcomeOf(r *Result) string {
	switch {
	case r.Skipped:
		return "skipped"
	case r.Success:
		return "success"
	}
	return "failure"
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

// SetUntestableRails records the rails of this node that no peer of the plan
// can test with a pair probe kind (config.Plan.UntestableRails).
func (s *Store) SetUntestableRails(kind string, rails []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.untestable == nil {
		s.untestable = map[string][]int{}
	}
	s.untestable[kind] = slices.Clone(rails)
}

// UntestableRails are the rails per pair probe kind that no peer can test; a
// kind is present when it runs.
func (s *Store) UntestableRails() map[string][]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.untestable)
}

// SetIdentityMismatch records that this node's addresses were judged against
// its plan entry: mismatch when none of the entry's compute IPs is on the
// node (identity.go). Until it is called the identity is unknown.
func (s *Store) SetIdentityMismatch(mismatch bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.identity = identityVerified
	if mismatch {
		s.identity = identityMismatch
	}
}

// IdentityMismatch says whether this node's addresses show it is not the
// plan entry it runs as (the pair probes and ping stand aside); known is
// false while that could not be judged.
func (s *Store) IdentityMismatch() (mismatch, known bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.identity == identityMismatch, s.identity != identityUnknown
}

// CountRun counts a run in roce_probe_runs_total without keeping its result
// as a link's: a ping of a rotating peer that passed (ping at scale keeps
// link results only for its pinned peers).
func (s *Store) CountRun(r *Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs[[2]string{r.Probe, outcomeOf(r)}]++
	if !r.Skipped {
		s.fresh.completed(r)
	}
}

// ForgetLinks drops the kept results of kind whose peer keep refuses.
func (s *Store) ForgetLinks(kind string, keep func(peer string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range []map[string]*Result{s.latest, s.shadowed, s.unreached} {
		for k, r := range m {
			if r.Probe == kind && !keep(r.Peer) {
				delete(m, k)
			}
		}
	}
}
