package probes

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/node"
)

// A probe run reads the node at most twice: once before it (everything the
// run needs, and the load gate when the previous collection is a usable
// window) and once after it, only when something needs what moved: the load
// gate without a window before, or the priority proof. Ping reads nothing.
func TestProbeRunReadsTheNodeAtMostTwice(t *testing.T) {
	fixture, _ := fixtureNode(t)
	for _, c := range []struct {
		name  string
		mode  string
		node  Node
		run   func(s *Scheduler) []*Result
		reads int64
	}{
		{"bandwidth, idle window before", "bw_ok", fakeNode{rate: 400e9, gid: 3, previous: 15 * time.Second}, runBW, 1},
		{"bandwidth, no window before", "bw_ok", fakeNode{rate: 400e9, gid: 3}, runBW, 2},
		// The priority proof and the load gate share the read after.
		{"bandwidth, priority counters, no window", "bw_ok", fixture, runBW, 2},
		{"latency, no window before", "lat_ok", fakeNode{rate: 400e9, gid: 3}, func(s *Scheduler) []*Result {
			return []*Result{s.measure(context.Background(), s.lat, linkTarget(link0))}
		}, 2},
		{"bandwidth, both rails through the schedule", "bw_ok", fakeNode{rate: 400e9, gid: 3}, func(s *Scheduler) []*Result {
			peer, _ := s.opts.Plan.Node("node02")
			return s.runPerftest(context.Background(), s.bw, peer, time.Time{})
		}, 4},
		{"nccl, idle window before", "nccl_ok", fakeNode{rate: 400e9, gid: 3, previous: 15 * time.Second, gdrKnown: true}, runNCCL, 1},
		{"nccl, no window before", "nccl_ok", fakeNode{rate: 400e9, gid: 3, gdr: true, gdrKnown: true}, runNCCL, 2},
		{"ping", "", fakeNode{rate: 400e9, gid: 3}, func(s *Scheduler) []*Result {
			s.ping = &pingRunner{count: 1, timeout: 200 * time.Millisecond, interval: 50 * time.Millisecond}
			return []*Result{s.measure(context.Background(), s.ping, linkTarget(Link{Device: "lo", LocalIP: "127.0.0.1", Peer: "self", PeerIP: "127.0.0.1"}))}
		}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			standinEnv(t, c.mode)
			n := &countingNode{Node: c.node}
			s := newTestScheduler(t, testPlan(t, "0.9", ""), n)
			results := c.run(s)
			if got := n.reads.Load(); got != c.reads {
				t.Errorf("%d reads of the node for %d runs, want %d", got, len(results), c.reads)
			}
			for _, r := range results {
				if r == nil || r.Skipped || (r.Probe != KindPing && !r.Success) {
					t.Errorf("the run did not measure: %+v", r)
				}
			}
		})
	}
}

func runBW(s *Scheduler) []*Result {
	return []*Result{s.measure(context.Background(), s.bw, linkTarget(link0))}
}

func runNCCL(s *Scheduler) []*Result { return []*Result{s.runNCCL(context.Background())} }

// A responder reads the node once per server it starts, and judges the
// tests it serves on that read.
func TestResponderReadsTheNodeOncePerServer(t *testing.T) {
	dir := standinEnv(t, "bw_ok")
	t.Setenv("STANDIN_SERVER", "serve")
	n := &countingNode{Node: fakeNode{rate: 400e9, gid: 3}}
	s := newTestScheduler(t, testPlan(t, "0.9", ""), n)
	rs := s.newResponder(s.bw, s.localLinks()[0], s.logger)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rs.run(ctx)
	// The context may end between a read and the start it was for: one read
	// more than starts, never more.
	if starts, reads := len(calls(t, dir)), n.reads.Load(); starts < 2 || reads < int64(starts) || reads > int64(starts)+1 {
		t.Errorf("%d reads for %d servers started", reads, starts)
	}
	if latest := s.Store().Latest(); len(latest) != 1 || latest[0].Bandwidth == nil || latest[0].Bandwidth.ExpectedBytesPerSecond != 0.9*400e9/8 {
		t.Errorf("served tests not judged on the node's port rate: %+v", latest)
	}
}

// The gate on the window before the run: a port busy over the previous
// collection's window skips the run without starting it; an idle one runs;
// a previous collection too old or too recent is no window, so the run goes
// ahead and is judged on what moved while it ran.
func TestLoadGateBeforeTheRun(t *testing.T) {
	for _, c := range []struct {
		name    string
		node    fakeNode
		skipped bool
		reads   int64
	}{
		{"busy window", fakeNode{rate: 400e9, gid: 3, previous: 15 * time.Second, util: 0.6}, true, 1},
		{"idle window", fakeNode{rate: 400e9, gid: 3, previous: 15 * time.Second, util: 0.05}, false, 1},
		{"busy, but the previous collection is too old", fakeNode{rate: 400e9, gid: 3, previous: 10 * time.Minute, util: 0.6}, false, 2},
		{"busy, but the previous collection is too recent", fakeNode{rate: 400e9, gid: 3, previous: 200 * time.Millisecond, util: 0.6}, false, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := standinEnv(t, "bw_ok")
			n := &countingNode{Node: c.node}
			s := newTestScheduler(t, testPlan(t, "0.9", ""), n)
			res := s.measure(context.Background(), s.bw, linkTarget(link0))
			if res.Skipped != c.skipped || res.Success == c.skipped {
				t.Fatalf("skipped %v success %v (%s), want skipped %v", res.Skipped, res.Success, res.SkipReason, c.skipped)
			}
			ran := calls(t, dir)[0] != ""
			if ran == c.skipped {
				t.Errorf("ran %v, skipped %v: %q", ran, c.skipped, calls(t, dir))
			}
			if c.skipped && !strings.Contains(res.SkipReason, "mlx5_0 already carries 60% of its rate (limit 10%)") {
				t.Errorf("skip reason %q", res.SkipReason)
			}
			if got := n.reads.Load(); got != c.reads {
				t.Errorf("%d reads, want %d", got, c.reads)
			}
		})
	}
}

// The gate without a window before: the run goes ahead, and when its port
// moved clearly more than the run's own traffic meanwhile, its result is
// set aside (skipped, logged, not a failure, not a baseline sample);
// otherwise it is judged as usual.
func TestLoadGateDuringTheRun(t *testing.T) {
	for _, c := range []struct {
		name, mode string
		kind       string
		others     float64 // share of the port rate others sent each way while it ran
		setAside   bool
	}{
		{"bandwidth, others at half the rate", "bw_ok_timed", KindIBWriteBW, 0.5, true},
		{"bandwidth, others under the limit", "bw_ok_timed", KindIBWriteBW, 0.05, false},
		{"bandwidth, nothing besides its own", "bw_ok_timed", KindIBWriteBW, 0, false},
		{"latency, others at half the rate", "lat_ok", KindIBWriteLat, 0.5, true},
		{"latency, nothing besides its own", "lat_ok", KindIBWriteLat, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			standinEnv(t, c.mode)
			var logs bytes.Buffer
			n := &countingNode{Node: &busyNode{fakeNode: fakeNode{rate: 400e9, gid: 3}, share: c.others}}
			s, err := New(Options{Plan: testPlan(t, "0.9", ""), Self: "node01", Node: n, StateDir: t.TempDir(),
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			r := s.bw
			if c.kind == KindIBWriteLat {
				r = s.lat
			}
			peer, _ := s.opts.Plan.Node("node02")
			res := s.runPerftest(context.Background(), r, peer, time.Time{})[0]
			if res.Skipped != c.setAside || res.Success == c.setAside || res.Reason != "" {
				t.Fatalf("skipped %v success %v reason %q (%s), want set aside %v", res.Skipped, res.Success, res.Reason, res.SkipReason, c.setAside)
			}
			baseline, _ := s.base.Baseline(res.baselineKey())
			if c.setAside {
				if !strings.Contains(res.SkipReason, "besides the probe's own traffic while it ran (limit 10%)") ||
					!strings.Contains(logs.String(), "probe result set aside") {
					t.Errorf("reason %q, logs:\n%s", res.SkipReason, logs.String())
				}
				if baseline != 0 || len(s.Store().Latest()) != 0 {
					t.Errorf("a set-aside run counted: baseline %v, latest %+v", baseline, s.Store().Latest())
				}
			} else if c.kind == KindIBWriteBW && baseline != 392.34e9/8 {
				t.Errorf("a judged run's bandwidth did not join the baseline: %v", baseline)
			}
			if got := n.reads.Load(); got != 4 {
				t.Errorf("%d reads for two rails, want 4", got)
			}
		})
	}
}

// latestNode is a fakeNode whose pipeline already holds a collection taken
// age ago.
type latestNode struct {
	fakeNode
	age time.Duration
}

func (l latestNode) Latest() *node.Snapshot { return l.at(time.Now().Add(-l.age), 0) }

// A responder takes the GID index and port rate from the newest collection
// when it is recent (every scrape makes one), and reads the node itself only
// when it is not: a server restarting every timeout must not cost a full
// collection each time.
func TestResponderUsesARecentCollection(t *testing.T) {
	for _, c := range []struct {
		name  string
		age   time.Duration
		reads bool
	}{{"recent collection", 10 * time.Second, false}, {"stale collection", time.Hour, true}} {
		t.Run(c.name, func(t *testing.T) {
			dir := standinEnv(t, "bw_ok")
			t.Setenv("STANDIN_SERVER", "serve")
			n := &countingNode{Node: latestNode{fakeNode{rate: 400e9, gid: 3}, c.age}}
			s := newTestScheduler(t, testPlan(t, "0.9", ""), n)
			rs := s.newResponder(s.bw, s.localLinks()[0], s.logger)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			rs.run(ctx)
			starts := len(calls(t, dir))
			if starts < 2 {
				t.Fatalf("%d servers started", starts)
			}
			if reads := n.reads.Load(); (reads > 0) != c.reads {
				t.Errorf("%d reads for %d servers started; want reads: %v", reads, starts, c.reads)
			}
			if latest := s.Store().Latest(); len(latest) != 1 || latest[0].Bandwidth == nil || latest[0].Bandwidth.ExpectedBytesPerSecond != 0.9*400e9/8 {
				t.Errorf("served tests not judged on the node's port rate: %+v", latest)
			}
		})
	}
}
