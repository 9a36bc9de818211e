package probes

import (
	"sort"
	"sync"
	"time"

	"github.com/roce-exporter/roce_exporter/probes/parse"
)

// Probe kinds.
const (
	KindIBWriteBW  = "ib_write_bw"
	KindIBWriteLat = "ib_write_lat"
	KindNCCL       = "nccl"
	KindPing       = "ping"
)

// Result is one probe run, as exported and shown on the landing page.
type Result struct {
	Probe  string `json:"probe"`
	Peer   string `json:"peer"`
	Device string `json:"device"`
	// PeerDevice is the rail-matched device on the peer.
	PeerDevice string `json:"peer_device,omitempty"`
	// Rail is the plan's rail index of Device (pair probes only): rail-matched
	// devices may have different names on different nodes, so cross-node rules
	// join on it.
	Rail int `json:"rail,omitempty"`
	// Role is "server" when a peer's client ran the test against one of
	// this node's responders; empty for tests this node started.
	Role     string        `json:"role,omitempty"`
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"duration_ns"`

	Success    bool   `json:"success"`
	Skipped    bool   `json:"skipped,omitempty"`
	SkipReason string `json:"skip_reason,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Hint       string `json:"hint,omitempty"`

	// BandwidthBytesPerSecond is the number the run is judged on: perftest's
	// BW average at the largest size; for NCCL the large-message bus
	// bandwidth (the best busbw at or above the plan's large_message_bytes).
	BandwidthBytesPerSecond float64            `json:"bandwidth_bytes_per_second,omitempty"`
	ExpectedBytesPerSecond  float64            `json:"expected_bandwidth_bytes_per_second,omitempty"`
	BaselineBytesPerSecond  float64            `json:"baseline_bandwidth_bytes_per_second,omitempty"`
	LatencySeconds          map[string]float64 `json:"latency_seconds,omitempty"`
	LossRatio               *float64           `json:"loss_ratio,omitempty"`
	// BandwidthMessageBytes is the NCCL message size BandwidthBytesPerSecond
	// was measured at.
	BandwidthMessageBytes uint64 `json:"bandwidth_message_bytes,omitempty"`
	// LargeMessageFallback: no NCCL message reached large_message_bytes, so
	// the largest size was judged (a warning says so too).
	LargeMessageFallback bool `json:"large_message_fallback,omitempty"`
	// AverageBusBandwidthBytesPerSecond is nccl-tests' own "Avg bus
	// bandwidth", the mean over every size, for reference only: the small,
	// latency-bound sizes pull it far below what the links carry. Nil when
	// the run printed no usable average.
	AverageBusBandwidthBytesPerSecond *float64 `json:"average_bus_bandwidth_bytes_per_second,omitempty"`
	// BusBandwidth is NCCL's busbw per message size (bytes/s, in-place).
	BusBandwidth map[uint64]float64 `json:"bus_bandwidth_bytes_per_second,omitempty"`
	WrongResults int64              `json:"wrong_results,omitempty"`
	// RoCEPriorityShare is the share of the bytes a bandwidth test sent that the
	// RoCE priority's tx byte counter counted, and CarriedOnPriority the priority
	// that counted most of them when it was another; nil when not measured.
	RoCEPriorityShare *float64 `json:"roce_priority_share,omitempty"`
	CarriedOnPriority *int     `json:"carried_on_priority,omitempty"`
	// NCCLTransport is NCCL's own report of its transport (NCCL_DEBUG=INFO);
	// nil for other probes or when the output held none.
	NCCLTransport *parse.Transport `json:"nccl_transport,omitempty"`

	Command    []string `json:"command,omitempty"`
	ExitCode   int      `json:"exit_code"`
	StderrTail string   `json:"stderr_tail,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
}

// Key identifies the link (or run) a result belongs to. Both ends of a
// link record it, each with the other as peer.
func (r *Result) Key() string { return r.Probe + "|" + r.Peer + "|" + r.Device }

// baselineKey names the link's history in the baseline store. NCCL runs
// used to be judged on nccl-tests' average, a fraction of the large-message
// number: that history stays under the old key, so the two never share a
// median that would hide a regression for the next several runs.
func (r *Result) baselineKey() string {
	if r.Probe == KindNCCL {
		return r.Key() + "|large_message"
	}
	if r.Probe == KindNCCLGroup {
		// Groups rotate: one baseline for every group this node leads.
		return KindNCCLGroup + "|large_message"
	}
	return r.Key()
}

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
