package probes

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/roce-exporter/roce_exporter/probes/schedule"
)

// SetSelf names the node the store belongs to.
func (s *Store) SetSelf(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.self = name
}

// Self is the node the store belongs to ("" when not set).
func (s *Store) Self() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.self
}

// DeviceJudgement is what one node can judge about one of its rails from its
// own fresh pair-probe results: how many distinct peers it failed and passed
// with. Whether the peers themselves are healthy is a cross-node question,
// answered by the recording rules (alerts/recording_rules.yml) from every
// node's judgements.
type DeviceJudgement struct {
	Probe       string
	Device      string
	Rail        int
	PeersFailed int
	// PeersPassed counts the peers whose pass still speaks for the rail: a
	// pass followed by failures with three or more other peers is superseded
	// (supersededBy), as a NIC that broke since no longer passes.
	PeersPassed int
	// LastPassed is the start of the newest such pass (zero: none): a path is
	// suspected only when both ends passed with others after the failure.
	LastPassed time.Time
	// FailedPeers are the peers it failed with, sorted (shown, not exported).
	FailedPeers []string
}

// supersededBy is how many later failures, with as many different peers,
// make a pass no evidence for its rail any more. A rail that broke fails with
// its scheduled peer and, at once, with its two witnesses (triangulate.go):
// three failures after every pass it had. Fewer are not enough: a broken path
// between two switches fails every flow hashed onto it, and a node behind it
// can fail with two peers in a row across it while its NIC is sound; its
// passes must stand. A triangulation also gives such a node passes after
// each failure (a witness elsewhere), which no later failure of the path
// outnumbers.
const supersededBy = 3

// Judge returns the judgement of every device with a fresh pair-probe
// result, sorted by probe and device. Each link counts once, with its last
// fresh measurement (a refused connection is none): a fixed link stops counting as failed as soon as it passes,
// and a broken rail stops counting as passing as soon as it failed with
// supersededBy peers after its passes.
func (s *Store) Judge() []DeviceJudgement {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.fresh.now()
	byDev := map[[2]string][]*Result{}
	add := func(r *Result) {
		if !isPairProbe(r.Probe) || r.Peer == "" || !s.fresh.isFresh(r, now) {
			return
		}
		k := [2]string{r.Probe, r.Device}
		byDev[k] = append(byDev[k], r)
	}
	for k, r := range s.latest {
		if r = s.measured(k, r); r == nil {
			continue
		}
		if u := s.unreached[k]; u != nil && u.Start.After(r.Start) {
			continue // the client's newer test never reached the link
		}
		add(r)
	}
	for k, u := range s.unreached {
		if r := s.measured(k, s.latest[k]); r == nil || u.Start.After(r.Start) {
			add(u)
		}
	}
	out := map[[2]string]*DeviceJudgement{}
	for k, rs := range byDev {
		j := &DeviceJudgement{Probe: rs[0].Probe, Device: rs[0].Device, Rail: rs[0].Rail}
		out[k] = j
		for _, r := range rs {
			if !r.Success {
				j.PeersFailed++
				j.FailedPeers = append(j.FailedPeers, r.Peer)
				continue
			}
			if failuresAfter(rs, r.Start) >= supersededBy {
				continue
			}
			j.PeersPassed++
			if r.Start.After(j.LastPassed) {
				j.LastPassed = r.Start
			}
		}
	}
	return SortedJudgements(out)
}

// failuresAfter counts the failing results (one per peer: a link's latest)
// that started after t.
func failuresAfter(rs []*Result, t time.Time) int {
	n := 0
	for _, r := range rs {
		if !r.Success && r.Start.After(t) {
			n++
		}
	}
	return n
}

func isPairProbe(kind string) bool { return kind == KindIBWriteBW || kind == KindIBWriteLat }

// Outcomes are the fresh measurements of one pair probe kind, as the pure
// schedule reads a node's own view (schedule.Triangulate, FarEndRails).
func (s *Store) Outcomes(kind string) []schedule.Outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.fresh.now()
	var out []schedule.Outcome
	for k, r := range s.latest {
		if r = s.measured(k, r); r != nil && r.Probe == kind && r.Peer != "" && s.fresh.isFresh(r, now) {
			out = append(out, schedule.Outcome{Peer: r.Peer, Rail: r.Rail, Passed: r.Success, At: r.Start})
		}
	}
	return out
}

// SortedJudgements lists judgements by probe, then device, each with its
// failed peers sorted: the order the page, the metrics and probe judge show.
func SortedJudgements[K comparable](byDev map[K]*DeviceJudgement) []DeviceJudgement {
	out := make([]DeviceJudgement, 0, len(byDev))
	for _, j := range byDev {
		sort.Strings(j.FailedPeers)
		out = append(out, *j)
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Probe != out[b].Probe {
			return out[a].Probe < out[b].Probe
		}
		return out[a].Device < out[b].Device
	})
	return out
}

// LocalVerdict sums up the judgements of one probe kind the way the
// fleet's alerts will, as far as one node can see: a rail failing with two
// or more peers points at that NIC (or its cable or leaf port), every rail
// failing at the node, a single failing peer at that peer or the path to it.
// Only the alerts can confirm that the peers are healthy.
func LocalVerdict(js []DeviceJudgement, probe string) string {
	var rails, failing, suspect int
	var lines []string
	for _, j := range js {
		if j.Probe != probe {
			continue
		}
		rails++
		if j.PeersFailed > 0 {
			failing++
		}
		if j.PeersFailed >= 2 && j.PeersPassed == 0 {
			suspect++
		}
	}
	switch {
	case rails == 0:
		return "no fresh " + probe + " results"
	case rails >= 2 && suspect == rails:
		return "every rail fails with two or more peers: suspect this node (alert RoCEProbeSuspectNode once the peers pass with others)"
	}
	for _, j := range js {
		if j.Probe != probe || j.PeersFailed == 0 {
			continue
		}
		if j.PeersFailed >= 2 && j.PeersPassed == 0 {
			lines = append(lines, fmt.Sprintf("%s (rail %d) fails with %d peers (%s), passes with %d: suspect this NIC, its cable or leaf port (alert RoCEProbeSuspectNICPort)",
				j.Device, j.Rail, j.PeersFailed, strings.Join(j.FailedPeers, ", "), j.PeersPassed))
		} else {
			lines = append(lines, fmt.Sprintf("%s (rail %d) fails with %s only, passes with %d: suspect the peer or the path to it (alert RoCEProbeSuspectPath when both ends pass with others)",
				j.Device, j.Rail, strings.Join(j.FailedPeers, ", "), j.PeersPassed))
		}
	}
	if failing == 0 {
		return fmt.Sprintf("every rail passes with every peer tested (%d rails)", rails)
	}
	return strings.Join(lines, "; ")
}
