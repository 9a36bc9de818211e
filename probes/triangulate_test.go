package probes

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/probes/schedule"
)

// fleetTestPlan is a plan of n nodes (node01 …) with two rails each, every
// pair probe command a stand-in, probes tested every hour with the whole plan
// in one round (max_fabric_share 1).
func fleetTestPlan(t *testing.T, n int, probes string) *config.Plan {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "networks:\n  management: 10.0.0.0/24\n  compute: [192.168.100.0/24, 192.168.101.0/24]\nnodes:\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - name: node%02d\n    management_ip: 10.0.0.%d\n    interfaces:\n", i, 10+i)
		fmt.Fprintf(&b, "      - {netdev: ens1f0np0, rdma_device: mlx5_0, ip: 192.168.100.%d/24}\n", 10+i)
		fmt.Fprintf(&b, "      - {netdev: ens2f0np0, rdma_device: mlx5_1, ip: 192.168.101.%d/24}\n", 10+i)
	}
	fmt.Fprintf(&b, "probes:\n  enabled: true\n  ib_write_bw:\n    command: %s\n    interval: 1h\n    timeout: 5s\n    duration: 1s\n%s", standin(t, "perftest"), probes)
	plan, err := config.Parse("fleet.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// turnScheduler is node01's scheduler with its clock stopped at the
// triangulation window of a turn in which it is the client (client) or the
// server, and the pauses shortened.
func turnScheduler(t *testing.T, plan *config.Plan, client bool) (*Scheduler, schedule.Turn) {
	t.Helper()
	var now time.Time
	s, err := New(Options{Plan: plan, Self: "node01", Node: fakeNode{rate: 400e9, gid: 3}, StateDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Now:    func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	s.retestPause = 10 * time.Millisecond
	s.busyPause = func(string, string) time.Duration { return 10 * time.Millisecond }
	s.bw.retryPause = 10 * time.Millisecond
	fleet := s.fleet[KindIBWriteBW]
	for e := int64(500_000); ; e++ {
		turn, ok := fleet.TurnOf("node01", e)
		if ok && turn.IsClient == client {
			from, _, ok := fleet.TriangulationWindow(e, turn.Round)
			if !ok {
				t.Fatal("no window")
			}
			now = from
			return s, turn
		}
	}
}

// add records a result of node01's as the store would have it.
func add(s *Scheduler, peer string, rail int, at time.Time, ok bool, role string) *Result {
	r := &Result{Probe: KindIBWriteBW, Peer: peer, Device: fmt.Sprintf("mlx5_%d", rail), Rail: rail, Start: at, Success: ok, Role: role}
	if !ok {
		r.Reason = ReasonBelowThreshold
	}
	s.store.Add(r)
	return r
}

func judgementOf(t *testing.T, s *Scheduler, device string) DeviceJudgement {
	t.Helper()
	for _, j := range s.store.Judge() {
		if j.Device == device {
			return j
		}
	}
	t.Fatalf("no judgement of %s", device)
	return DeviceJudgement{}
}

// witnessCalls are the stand-in's client runs on device.
func witnessCalls(t *testing.T, dir, device string) []string {
	var out []string
	for _, c := range calls(t, dir) {
		if strings.Contains(c, "-d "+device+" ") {
			out = append(out, c)
		}
	}
	return out
}

// A client whose rail broke: its scheduled failure is retested against two
// witnesses of the round, on that rail only; both fail, so the rail fails
// with three peers and its older passes no longer count: the rules can name
// the NIC within the round.
func TestClientTriangulatesItsFailedRail(t *testing.T) {
	dir := standinEnv(t, "bw_ok")
	t.Setenv("STANDIN_FAIL_DEVICE", "mlx5_1")
	s, turn := turnScheduler(t, fleetTestPlan(t, 8, ""), true)
	add(s, "node07", 1, turn.Start.Add(-2*time.Hour), true, "")
	add(s, "node08", 1, turn.Start.Add(-time.Hour), true, "")
	results := []*Result{add(s, turn.Peer, 0, turn.Start, true, ""), add(s, turn.Peer, 1, turn.Start, false, "")}

	s.triangulateAfterTurn(context.Background(), s.bw, turn, results)

	runs := witnessCalls(t, dir, "mlx5_1")
	if len(runs) != 2*schedule.WitnessTests {
		t.Fatalf("%d runs on the failing rail, want %d witnesses each retested: %q", len(runs), 2*schedule.WitnessTests, runs)
	}
	if other := witnessCalls(t, dir, "mlx5_0"); len(other) != 0 {
		t.Errorf("the passing rail was retested: %q", other)
	}
	// Known-good peers first: node08 passed last, then node07.
	for i, want := range []string{"192.168.101.18", "192.168.101.17"} {
		if !strings.HasSuffix(runs[2*i], " "+want) {
			t.Errorf("witness %d: %q, want the peer at %s", i, runs[2*i], want)
		}
	}
	if j := judgementOf(t, s, "mlx5_1"); j.PeersFailed != 3 || j.PeersPassed != 0 {
		t.Errorf("rail 1 judged %+v: want failed with 3 peers, passes superseded", j)
	}
	if j := judgementOf(t, s, "mlx5_0"); j.PeersFailed != 0 {
		t.Errorf("rail 0 judged %+v", j)
	}
}

// A client whose peer was at fault: the witnesses pass, the rail keeps
// passing (with them, after the failure), and only the failed peer counts
// against it: the rules can then clear this end.
func TestHealthyClientPassesWithItsWitnesses(t *testing.T) {
	dir := standinEnv(t, "bw_ok")
	s, turn := turnScheduler(t, fleetTestPlan(t, 8, ""), true)
	fail := add(s, turn.Peer, 1, turn.Start, false, "")
	s.triangulateAfterTurn(context.Background(), s.bw, turn, []*Result{fail})
	if runs := witnessCalls(t, dir, "mlx5_1"); len(runs) != schedule.WitnessTests {
		t.Errorf("%d witness runs, want %d passing ones without retests: %q", len(runs), schedule.WitnessTests, runs)
	}
	j := judgementOf(t, s, "mlx5_1")
	if j.PeersFailed != 1 || j.PeersPassed != schedule.WitnessTests || !j.LastPassed.After(turn.Start) {
		t.Errorf("judged %+v: want failed with the peer only, passed with the witnesses since", j)
	}
	// Nothing failed: nothing to triangulate.
	before := len(calls(t, dir))
	s.triangulateAfterTurn(context.Background(), s.bw, turn, []*Result{add(s, turn.Peer, 1, turn.Start, true, "")})
	if after := len(calls(t, dir)); after != before {
		t.Errorf("%d runs after a passing turn", after-before)
	}
}

// Witnesses whose responders refuse (busy serving another node's witness
// test, or testing their own device) are not failures: the test is set
// aside, the next witness tried after a pause, within the attempt budget.
func TestBusyWitnessesAreSetAside(t *testing.T) {
	dir := standinEnv(t, "bw_ok")
	var busy []string
	for i := 2; i <= 8; i++ {
		busy = append(busy, fmt.Sprintf("192.168.101.%d", 10+i))
	}
	t.Setenv("STANDIN_REFUSE_PEERS", strings.Join(busy, " "))
	s, turn := turnScheduler(t, fleetTestPlan(t, 8, ""), true)
	fail := add(s, turn.Peer, 1, turn.Start, false, "")
	s.triangulateAfterTurn(context.Background(), s.bw, turn, []*Result{fail})
	if runs := witnessCalls(t, dir, "mlx5_1"); len(runs) != schedule.WitnessAttempts*connectRetries {
		t.Errorf("%d runs, want %d witnesses tried %d times each", len(runs), schedule.WitnessAttempts, connectRetries)
	}
	if j := judgementOf(t, s, "mlx5_1"); j.PeersFailed != 1 || j.PeersPassed != 0 {
		t.Errorf("busy witnesses counted: %+v", j)
	}
	for _, rc := range s.store.Runs() {
		if rc.Result == "skipped" && rc.Count != schedule.WitnessAttempts {
			t.Errorf("%d skipped runs, want %d", rc.Count, schedule.WitnessAttempts)
		}
	}
	if recent := s.store.Recent(1); len(recent) != 1 || recent[0].SkipReason != skipWitnessBusy {
		t.Errorf("last run %+v", recent)
	}
}

// The far end: its client reached rail 0 but never rail 1, so it retests
// rail 1 against its own witnesses; a turn it served without trouble
// triggers nothing, and one whose client reached no rail at all (it did not
// run, or none of this node's rails answers) retests every rail.
func TestFarEndTriangulatesTheRailItWasNotReachedOn(t *testing.T) {
	dir := standinEnv(t, "bw_ok")
	s, turn := turnScheduler(t, fleetTestPlan(t, 8, ""), false)
	add(s, turn.Peer, 0, turn.Start.Add(time.Second), true, "server")
	add(s, turn.Peer, 1, turn.Start.Add(-time.Hour), true, "server") // an older turn's
	s.triangulateAfterTurn(context.Background(), s.bw, turn, nil)
	if runs, other := witnessCalls(t, dir, "mlx5_1"), witnessCalls(t, dir, "mlx5_0"); len(runs) != schedule.WitnessTests || len(other) != 0 {
		t.Errorf("rail 1: %q, rail 0: %q", runs, other)
	}
	for _, r := range s.store.Latest() {
		if r.Role == "" && slices.Contains([]string{turn.Peer, "node01"}, r.Peer) {
			t.Errorf("witness test with %s", r.Peer)
		}
	}
	// The client reached rail 0 but never rail 1: the silence counts against
	// rail 1 as a failure with the client (the witnesses passed here).
	if j := judgementOf(t, s, "mlx5_1"); !slices.Contains(j.FailedPeers, turn.Peer) {
		t.Errorf("rail 1 judged %+v: want the silent client counted as a failure", j)
	}
	add(s, turn.Peer, 1, turn.Start.Add(2*time.Second), true, "server")
	before := len(calls(t, dir))
	s.triangulateAfterTurn(context.Background(), s.bw, turn, nil)
	if after := len(calls(t, dir)); after != before {
		t.Errorf("%d runs after a turn served without trouble", after-before)
	}

}

// A far end whose client reached no rail (it did not run: down, its
// exporter stopped, its port busy) tests the client itself in the
// triangulation window. A client that is up passes: the far end's rails are
// cleared and no witness is needed. One that is down fails on every rail,
// which is what the rules need to name a node that runs no test of its own;
// the far end's rails then go to its witnesses, where they pass. One whose
// responder refuses is set aside: no failure with it.
func TestFarEndTestsItsAbsentClient(t *testing.T) {
	dir := standinEnv(t, "bw_ok")
	leafPerRail := func(node string, rail int) (string, bool) { return fmt.Sprintf("leaf-%d", rail), true }
	oneToR := func(node string, rail int) (string, bool) { return "tor-" + node, true }
	up, turn := turnScheduler(t, fleetTestPlan(t, 8, ""), false)
	up.opts.Topology = leafPerRail
	up.triangulateAfterTurn(context.Background(), up.bw, turn, nil)
	runs := calls(t, dir) // the first runs of the stand-in's log
	before := len(runs)
	if len(runs) != 2 || !strings.Contains(strings.Join(runs, "\n"), "192.168.100.") {
		t.Errorf("runs after a silent turn of a client that is up: %q, want both rails tested against it once", runs)
	}
	for _, j := range up.store.Judge() {
		if j.PeersFailed != 0 || j.PeersPassed != 1 {
			t.Errorf("%s judged %+v, want passed with the client", j.Device, j)
		}
	}

	down, turn := turnScheduler(t, fleetTestPlan(t, 8, ""), false)
	down.opts.Topology = leafPerRail
	peer, _ := down.opts.Plan.Node(turn.Peer)
	var ips []string
	for _, l := range down.links(peer) {
		ips = append(ips, l.PeerIP)
	}
	t.Setenv("STANDIN_FAIL_PEERS", strings.Join(ips, " "))
	before = len(calls(t, dir))
	down.triangulateAfterTurn(context.Background(), down.bw, turn, nil)
	if n := len(calls(t, dir)) - before; n != 2*2+2*schedule.WitnessTests {
		t.Errorf("%d runs after the turn of a client that is down, want both rails against it (retested) and %d witnesses", n, schedule.WitnessTests)
	}
	for _, j := range down.store.Judge() {
		if !slices.Equal(j.FailedPeers, []string{turn.Peer}) || j.PeersPassed != schedule.WitnessTests {
			t.Errorf("%s judged %+v, want failed with the down client and passed with the witnesses", j.Device, j)
		}
	}

	// Its rails all under one switch (a rack's ToR), or switches unknown: the
	// witnesses first, as the switch rules need them.
	for _, sw := range []schedule.SwitchOf{oneToR, nil} {
		rack, turn := turnScheduler(t, fleetTestPlan(t, 8, ""), false)
		rack.opts.Topology = sw
		before = len(calls(t, dir))
		rack.triangulateAfterTurn(context.Background(), rack.bw, turn, nil)
		if n := len(calls(t, dir)) - before; n != 2*schedule.WitnessTests {
			t.Errorf("switches known %v: %d runs, want both rails against %d witnesses and no test of the client", sw != nil, n, schedule.WitnessTests)
		}
	}

	refusing, turn := turnScheduler(t, fleetTestPlan(t, 8, ""), false)
	refusing.opts.Topology = leafPerRail
	t.Setenv("STANDIN_FAIL_PEERS", "")
	t.Setenv("STANDIN_REFUSE_PEERS", strings.Join(ips, " "))
	refusing.triangulateAfterTurn(context.Background(), refusing.bw, turn, nil)
	for _, j := range refusing.store.Judge() {
		if slices.Contains(j.FailedPeers, turn.Peer) {
			t.Errorf("%s judged %+v: a client whose responder refused counted as a failure", j.Device, j)
		}
	}
	if recent := refusing.store.Recent(1); len(recent) != 1 || recent[0].SkipReason != skipClientNotListening {
		t.Errorf("last run %+v, want set aside", recent)
	}
}

// A responder does not listen while a local client tests its device: its
// idle server is stopped when the device is taken and started again once it
// is free, so a witness test arriving meanwhile finds the port closed
// (busy) instead of halving both tests.
func TestResponderStandsAsideWhileTheDeviceIsTested(t *testing.T) {
	dir := standinEnv(t, "bw_ok")
	t.Setenv("STANDIN_SERVER", "idle")
	plan := testPlan(t, "0.9", "")
	plan.Probes.IBWriteBW.Timeout = 30 * time.Second // no idle restarts during the test
	s := newTestScheduler(t, plan, fakeNode{rate: 400e9, gid: 3})
	rs := s.newResponder(s.bw, s.localLinks()[0], s.logger)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { rs.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !cond(); {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	pidFile := dir + "/server.pid"
	pid := func() string { b, _ := os.ReadFile(pidFile); return strings.TrimSpace(string(b)) }
	waitFor("the server listens", func() bool { return pid() != "" })
	first := pid()
	if !s.locks.tryLock("mlx5_0") {
		t.Fatal("lock")
	}
	waitFor("the server is stopped", func() bool { return processGone(pidFile) })
	time.Sleep(300 * time.Millisecond)
	if n := len(calls(t, dir)); n != 1 {
		t.Errorf("%d servers started while the device was taken", n)
	}
	s.locks.unlock("mlx5_0")
	waitFor("the server listens again", func() bool { return pid() != first && !processGone(pidFile) })
	// Another device's lock does not disturb it.
	s.locks.tryLock("mlx5_1")
	time.Sleep(300 * time.Millisecond)
	if processGone(pidFile) {
		t.Error("the server stopped for another device's test")
	}
	s.locks.unlock("mlx5_1")
}

// An exporter started under another node's name (its addresses are node01's,
// it runs as node02) neither tests, nor serves, nor pings: nothing it could
// record would be true of node02, and its failures would blame node02. It
// says so in its metrics. Started under its own name it runs.
func TestWrongNameRunsNoProbes(t *testing.T) {
	for _, tc := range []struct {
		self     string
		mismatch bool
	}{{"node02", true}, {"node01", false}} {
		t.Run(tc.self, func(t *testing.T) {
			dir := standinEnv(t, "bw_ok")
			t.Setenv("STANDIN_SERVER", "serve")
			plan := testPlan(t, "0.9", "")
			plan.Probes.IBWriteBW.Interval, plan.Probes.IBWriteBW.Timeout, plan.Probes.IBWriteBW.Jitter = time.Second, 800*time.Millisecond, 0
			plan.Probes.IBWriteLat.Enabled = false
			plan.Probes.NCCL.Enabled = false
			plan.Probes.Ping.Interval, plan.Probes.Ping.Jitter = time.Second, 0
			s, err := New(Options{Plan: plan, Self: tc.self, Node: fakeNode{rate: 400e9, gid: 3}, StateDir: t.TempDir(),
				Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
			if err != nil {
				t.Fatal(err)
			}
			ping := &fakePinger{}
			s.ping = ping
			ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
			defer cancel()
			s.Run(ctx)
			mismatch, known := s.Store().IdentityMismatch()
			if !known || mismatch != tc.mismatch {
				t.Errorf("identity mismatch %v (known %v), want %v", mismatch, known, tc.mismatch)
			}
			ran := len(calls(t, dir)) > 1 || calls(t, dir)[0] != ""
			if tc.mismatch && (ran || len(s.Store().Latest()) > 0 || ping.count() > 0) {
				t.Errorf("ran as another node: calls %q, results %d, pings %d", calls(t, dir), len(s.Store().Latest()), ping.count())
			}
			if !tc.mismatch && (!ran || ping.count() == 0) {
				t.Errorf("did not run under its own name: calls %q, pings %d", calls(t, dir), ping.count())
			}
		})
	}
}

// identityOf on both sides, and the unknown cases that must not stop the
// probes.
func TestIdentityOf(t *testing.T) {
	plan := testPlan(t, "0.9", "")
	node01, _ := plan.Node("node01")
	node02, _ := plan.Node("node02")
	snap := fakeNode{rate: 400e9, gid: 3}.snapshot(time.Now(), 0) // node01's GIDs
	if id, why := identityOf(snap, node01, plan); id != identityVerified {
		t.Errorf("node01 as node01: %v %s", id, why)
	}
	id, why := identityOf(snap, node02, plan)
	if id != identityMismatch || !strings.Contains(why, "192.168.100.11") || !strings.Contains(why, "probably node01 started as node02") {
		t.Errorf("node01 as node02: %v %q", id, why)
	}
	noGIDs := fakeNode{rate: 400e9, gid: -1}.snapshot(time.Now(), 0)
	if id, _ := identityOf(noGIDs, node02, plan); id != identityUnknown {
		t.Errorf("without GIDs or addresses: %v, want unknown", id)
	}
	if id, _ := identityOf(nil, node02, plan); id != identityUnknown {
		t.Errorf("nil snapshot: %v", id)
	}
}
