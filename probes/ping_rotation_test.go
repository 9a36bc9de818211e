package probes

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/probes/schedule"
)

// fakePinger stands in for the network: pings to the peers in down fail.
type fakePinger struct {
	mu    sync.Mutex
	down  map[string]bool
	peers []string
}

func (f *fakePinger) kind() string                                      { return KindPing }
func (f *fakePinger) readsNode() bool                                   { return false }
func (f *fakePinger) ownTraffic(target, *Result, time.Duration) traffic { return traffic{} }
func (f *fakePinger) probe(_ context.Context, t target, _ *node.Snapshot, res *Result) verdict {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.peers = append(f.peers, t.Peer)
	if f.down[t.Peer] {
		res.Ping = &Ping{LossRatio: 1}
		return verdict{ReasonTimeout, "no reply"}
	}
	res.Ping = &Ping{}
	return verdict{}
}

func (f *fakePinger) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.peers)
}

// pingLinks are the ping link results the store keeps (and exports), by peer.
func pingLinks(s *Scheduler) map[string]int {
	out := map[string]int{}
	for _, r := range s.Store().Latest() {
		if r.Probe == KindPing {
			out[r.Peer]++
		}
	}
	return out
}

// Above PingMeshPeers peers a node pings the rotation and its pinned peers;
// only the pinned peers' results are kept, so its ping series stay within
// PingPinnedPeers × rails whatever fails; a peer that stops answering is
// pinned (pinged every round, its series kept) until it answers again; every
// peer is pinged within the rotation's cover; every run is counted.
func TestPingRotationKeepsPinnedSeriesOnly(t *testing.T) {
	plan := fleetTestPlan(t, 40, "")
	s, _ := turnScheduler(t, plan, true) // its clock sits in a turn: the pair peer is pinned
	ping := &fakePinger{down: map[string]bool{}}
	s.ping = ping
	fleet := s.fleet[KindIBWriteBW]
	turn, _ := fleet.TurnOf("node01", fleet.Epoch(s.opts.Now()))
	ctx := context.Background()
	const round = int64(29_000_000)
	bound := schedule.PingPinnedPeers * 2

	first := s.pingRound(ctx, round)
	if len(first) > (schedule.PingRotationPeers+1)*2 {
		t.Fatalf("%d pings in a round", len(first))
	}
	if links := pingLinks(s); len(links) != 1 || links[turn.Peer] != 2 {
		t.Errorf("kept %v after a healthy round, want the pair peer %s's two rails only", links, turn.Peer)
	}
	// A rotating peer of the next round stops answering.
	var lost string
	for _, p := range s.pings.plan.Peers("node01", round+1, nil) {
		if p != turn.Peer {
			lost = p
			break
		}
	}
	ping.down[lost] = true
	s.pingRound(ctx, round+1)
	if links := pingLinks(s); links[lost] != 2 {
		t.Errorf("the failing peer %s is not kept: %v", lost, links)
	}
	ping.peers = nil
	s.pingRound(ctx, round+2)
	if !slices.Contains(ping.peers, lost) || slices.Contains(s.pings.plan.Peers("node01", round+2, nil), lost) {
		t.Errorf("%s is not pinged while it fails (pinged %v)", lost, ping.peers)
	}
	delete(ping.down, lost)
	s.pingRound(ctx, round+3)
	if links := pingLinks(s); links[lost] != 0 {
		t.Errorf("the recovered peer's series are kept: %v", links)
	}
	// Many peers down at once: the kept series stay bounded.
	for _, n := range plan.NodeNames()[1:] {
		ping.down[n] = true
	}
	pinged := map[string]bool{}
	for r := round + 4; r < round+4+int64(s.pings.plan.CoverRounds()); r++ {
		ping.peers = nil
		s.pingRound(ctx, r)
		for _, p := range ping.peers {
			pinged[p] = true
		}
		links := 0
		for _, n := range pingLinks(s) {
			links += n
		}
		if links > bound {
			t.Fatalf("round %d keeps %d ping links, over %d", r, links, bound)
		}
	}
	if len(pinged) != 39 {
		t.Errorf("%d of 39 peers pinged within %d rounds", len(pinged), s.pings.plan.CoverRounds())
	}
	var runs uint64
	for _, rc := range s.Store().Runs() {
		if rc.Probe == KindPing {
			runs += rc.Count
		}
	}
	if int(runs) < len(first) || runs == 0 {
		t.Errorf("%d ping runs counted", runs)
	}
}

// Up to PingMeshPeers peers: every peer's every rail, every result kept.
func TestPingFullMeshKeepsEverything(t *testing.T) {
	s, _ := turnScheduler(t, fleetTestPlan(t, 6, ""), true)
	s.ping = &fakePinger{down: map[string]bool{"node03": true}}
	s.pingRound(context.Background(), 1)
	if links := pingLinks(s); len(links) != 5 || links["node03"] != 2 {
		t.Errorf("full mesh kept %v", links)
	}
}
