package probes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
)

func standin(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "standin", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// testPlan is a two-node, two-rail plan whose probe commands are the
// stand-ins; extra is YAML appended under probes.
func testPlan(t *testing.T, fraction string, extra string) *config.Plan {
	t.Helper()
	doc := fmt.Sprintf(`
networks:
  management: 10.0.0.0/24
  compute: [192.168.100.0/24, 192.168.101.0/24]
expectations:
  mtu: 9000
  pfc_priority: 3
  min_bandwidth_fraction: %s
nodes:
  - name: node01
    management_ip: 10.0.0.11
    interfaces:
      - {netdev: ens1f0np0, rdma_device: mlx5_0, ip: 192.168.100.11/24}
      - {netdev: ens2f0np0, rdma_device: mlx5_1, ip: 192.168.101.11/24}
  - name: node02
    management_ip: 10.0.0.12
    interfaces:
      - {netdev: ens1f0np0, rdma_device: mlx5_0, ip: 192.168.100.12/24}
      - {netdev: ens2f0np0, rdma_device: mlx5_1, ip: 192.168.101.12/24}
probes:
  enabled: true
  ib_write_bw:
    command: %s
    interval: 1h
    timeout: 5s
    duration: 1s
  ib_write_lat:
    enabled: true
    command: %s
    interval: 1h
    timeout: 5s
  nccl:
    enabled: true
    leader: node01
    mpirun: %s
    command: /opt/nccl-tests/build/all_reduce_perf
    gpus_per_node: 8
    timeout: 5s
%s`, fraction, standin(t, "perftest"), standin(t, "perftest"), standin(t, "mpirun"), extra)
	plan, err := config.Parse("test.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func newTestScheduler(t *testing.T, plan *config.Plan, node Node) *Scheduler {
	t.Helper()
	return newTestSchedulerAs(t, plan, node, "node01")
}

// newTestSchedulerAs is newTestScheduler for the plan's node self.
func newTestSchedulerAs(t *testing.T, plan *config.Plan, node Node, self string) *Scheduler {
	t.Helper()
	s, err := New(Options{Plan: plan, Self: self, Node: node, StateDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// standinEnv points the stand-ins at a scratch directory and a behaviour.
func standinEnv(t *testing.T, mode string) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("STANDIN_DIR", dir)
	t.Setenv("STANDIN_MODE", mode)
	return dir
}

func calls(t *testing.T, dir string) []string {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(dir, "calls"))
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

var link0 = Link{Rail: 0, Device: "mlx5_0", LocalIP: "192.168.100.11", Peer: "node02", PeerDevice: "mlx5_0", PeerIP: "192.168.100.12"}

func TestPerftestClientSuccess(t *testing.T) {
	dir := standinEnv(t, "bw_ok")
	s := newTestScheduler(t, testPlan(t, "0.9", ""), fakeNode{rate: 400e9, gid: 3})
	res := s.measure(context.Background(), s.bw, linkTarget(link0))
	if !res.Success || res.Reason != "" {
		t.Fatalf("want success, got %+v", res)
	}
	if want := 392.34e9 / 8; res.measuredBandwidth() != want {
		t.Errorf("bandwidth = %v, want %v", res.measuredBandwidth(), want)
	}
	if want := 0.9 * 400e9 / 8; res.Bandwidth.ExpectedBytesPerSecond != want {
		t.Errorf("expected = %v, want %v", res.Bandwidth.ExpectedBytesPerSecond, want)
	}
	got := calls(t, dir)[0]
	for _, arg := range []string{"-d mlx5_0", "-x 3", "-p 18515", "--report_gbits", "-D 1", "-F", "-s 1048576", "-q 4"} {
		if !strings.Contains(got, arg) {
			t.Errorf("client argv %q lacks %q", got, arg)
		}
	}
	if !strings.HasSuffix(got, " 192.168.100.12") {
		t.Errorf("client argv %q must end with the peer's compute IP", got)
	}
	// Rail 1 uses the next port of the range.
	l1 := link0
	l1.Rail, l1.Device, l1.PeerIP = 1, "mlx5_1", "192.168.101.12"
	s.measure(context.Background(), s.bw, linkTarget(l1))
	if got := calls(t, dir)[1]; !strings.Contains(got, "-p 18516") || !strings.Contains(got, "-d mlx5_1") {
		t.Errorf("rail 1 argv %q", got)
	}
}

func TestPerftestFailuresAreClassified(t *testing.T) {
	for _, tc := range []struct {
		mode, reason string
	}{
		{"bw_slow", ReasonBelowThreshold},
		{"connect_refused", ReasonConnectRefused},
		{"gid_index", ReasonGIDIndex},
		{"retry_exceeded", ReasonRetryExceeded},
		{"no_device", ReasonNoDevice},
		// Exit 0 and nothing perftest would print: the command is not perftest.
		{"garbage", ReasonNotToolOutput},
		// The same text from a program that failed: its exit says more.
		{"garbage_failed", ReasonExecError},
		// A bandwidth above any port (issue 12: 1e300 Gb/sec passed).
		{"impossible", ReasonParseError},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			dir := standinEnv(t, tc.mode)
			s := newTestScheduler(t, testPlan(t, "0.9", ""), fakeNode{rate: 400e9, gid: 3})
			res := s.measure(context.Background(), s.bw, linkTarget(link0))
			if res.Success || res.Reason != tc.reason {
				t.Fatalf("reason = %q (success %v), want %q; stderr %q", res.Reason, res.Success, tc.reason, res.StderrTail)
			}
			if res.Hint == "" {
				t.Error("failure without a hint")
			}
			n := len(calls(t, dir))
			if tc.reason == ReasonConnectRefused && n != connectRetries {
				t.Errorf("connect refused tried %d times, want %d", n, connectRetries)
			}
			if tc.reason != ReasonConnectRefused && n != 1 {
				t.Errorf("%s retried (%d calls): only connect-refused is retried", tc.reason, n)
			}
		})
	}
}

func TestPerftestConnectRefusedIsRetried(t *testing.T) {
	dir := standinEnv(t, "refused_once")
	s := newTestScheduler(t, testPlan(t, "0.9", ""), fakeNode{rate: 400e9, gid: 3})
	res := s.measure(context.Background(), s.bw, linkTarget(link0))
	if !res.Success {
		t.Fatalf("second attempt should succeed: %+v", res)
	}
	if n := len(calls(t, dir)); n != 2 {
		t.Errorf("%d calls, want 2", n)
	}
}

func processGone(pidFile string) bool {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return false
	}
	var pid int
	fmt.Sscan(strings.TrimSpace(string(b)), &pid)
	err = syscall.Kill(pid, 0)
	return errors.Is(err, syscall.ESRCH)
}

func TestHungClientIsKilledWithItsProcessGroup(t *testing.T) {
	dir := standinEnv(t, "hang")
	plan := testPlan(t, "0.9", "")
	plan.Probes.IBWriteBW.Timeout = 1 * time.Second
	s := newTestScheduler(t, plan, fakeNode{rate: 400e9, gid: 3})
	begin := time.Now()
	res := s.measure(context.Background(), s.bw, linkTarget(link0))
	if took := time.Since(begin); took > 4*time.Second {
		t.Errorf("hung probe took %v; timeout is 1s", took)
	}
	if res.Reason != ReasonTimeout {
		t.Errorf("reason = %q, want timeout", res.Reason)
	}
	deadline := time.Now().Add(2 * time.Second)
	for !(processGone(filepath.Join(dir, "child.pid")) && processGone(filepath.Join(dir, "parent.pid"))) {
		if time.Now().After(deadline) {
			t.Fatal("the stand-in or its child survived the timeout: the process group was not killed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestLatencyProbe(t *testing.T) {
	dir := standinEnv(t, "lat_ok")
	s := newTestScheduler(t, testPlan(t, "0.9", ""), fakeNode{rate: 400e9, gid: 3})
	res := s.measure(context.Background(), s.lat, linkTarget(link0))
	if !res.Success {
		t.Fatalf("%+v", res)
	}
	if got := res.Latency.Seconds["avg"]; got != 1.12e-6 {
		t.Errorf("avg latency = %v, want 1.12µs", got)
	}
	if c := calls(t, dir)[0]; strings.Contains(c, "--report_gbits") || strings.Contains(c, "-q ") {
		t.Errorf("latency argv %q carries bandwidth-only flags", c)
	}
}

func TestRegressionAgainstBaseline(t *testing.T) {
	standinEnv(t, "bw_ok")
	// A tiny floor isolates the regression rule from the plan threshold.
	plan := testPlan(t, "0.001", "")
	s := newTestScheduler(t, plan, fakeNode{rate: 400e9, gid: 3})
	for i := 0; i < minBaselineSamples; i++ {
		if res := s.measure(context.Background(), s.bw, linkTarget(link0)); !res.Success {
			t.Fatalf("baseline run %d failed: %+v", i, res)
		}
	}
	t.Setenv("STANDIN_MODE", "bw_slow") // 0.48 Gb/s
	res := s.measure(context.Background(), s.bw, linkTarget(link0))
	if res.Reason != ReasonRegression {
		t.Fatalf("reason = %q, want regression (bw %v, baseline %v)", res.Reason, res.measuredBandwidth(), res.Bandwidth.BaselineBytesPerSecond)
	}
	if res.Bandwidth.BaselineBytesPerSecond != 392.34e9/8 {
		t.Errorf("baseline = %v", res.Bandwidth.BaselineBytesPerSecond)
	}
	// A regressed run does not drag the baseline down.
	if b, _ := s.base.Baseline(res.Key()); b != 392.34e9/8 {
		t.Errorf("baseline after regression = %v", b)
	}
}

func TestBaselinesSurviveRestartAndCorruption(t *testing.T) {
	dir := t.TempDir()
	logger := slog.New(slog.DiscardHandler)
	b, err := LoadBaselines(dir, logger)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []float64{10, 30, 20} {
		if err := b.Record("ib_write_bw|node02|mlx5_0", v); err != nil {
			t.Fatal(err)
		}
	}
	b2, err := LoadBaselines(dir, logger)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := b2.Baseline("ib_write_bw|node02|mlx5_0"); m != 20 || !ok {
		t.Errorf("after restart: median %v judged %v, want 20 true", m, ok)
	}
	for name, content := range map[string]string{
		"truncated": `{"version":1,"links":{"a":[1,2`,
		"garbage":   "\x00\x01not json",
		"negative":  `{"version":1,"links":{"a":[-5]}}`,
		"version":   `{"version":99,"links":{}}`,
	} {
		t.Run(name, func(t *testing.T) {
			d := t.TempDir()
			os.WriteFile(filepath.Join(d, baselineFile), []byte(content), 0o600)
			b, err := LoadBaselines(d, logger)
			if err != nil {
				t.Fatalf("a corrupt baseline file must not be fatal: %v", err)
			}
			if _, ok := b.Baseline("a"); ok {
				t.Error("corrupt data was used")
			}
			matches, _ := filepath.Glob(filepath.Join(d, baselineFile+".corrupt-*"))
			if len(matches) != 1 {
				t.Errorf("corrupt file not set aside: %v", matches)
			}
			if err := b.Record("a", 1); err != nil {
				t.Errorf("cannot write after recovery: %v", err)
			}
		})
	}
}

func TestResponderRestartsAfterEachTestAndWhenIdle(t *testing.T) {
	for _, tc := range []struct {
		server  string
		timeout time.Duration
		minRuns int
		served  bool
	}{
		{"serve", 5 * time.Second, 3, true},        // perftest servers exit after one test
		{"idle", 400 * time.Millisecond, 3, false}, // nobody connects: killed and restarted
	} {
		t.Run(tc.server, func(t *testing.T) {
			dir := standinEnv(t, "bw_ok")
			t.Setenv("STANDIN_SERVER", tc.server)
			plan := testPlan(t, "0.9", "")
			plan.Probes.IBWriteBW.Timeout = tc.timeout
			s := newTestScheduler(t, plan, fakeNode{rate: 400e9, gid: 3})
			rs := s.newResponder(s.bw, s.localLinks()[0], s.logger)
			ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
			defer cancel()
			rs.run(ctx)
			runs := calls(t, dir)
			if len(runs) < tc.minRuns {
				t.Errorf("responder started %d times in 2.5s, want >= %d", len(runs), tc.minRuns)
			}
			if strings.Contains(runs[0], "192.168.") {
				t.Errorf("server argv %q must not name a peer", runs[0])
			}
			if tc.served != (rs.served > 0) {
				t.Errorf("served = %d", rs.served)
			}
			// The server end records the tests it served, attributed by
			// the remote GID to node02 and its rail-matched device.
			latest := s.Store().Latest()
			if tc.served {
				if len(latest) != 1 || latest[0].Peer != "node02" || latest[0].Role != "server" || latest[0].PeerDevice != "mlx5_0" ||
					latest[0].measuredBandwidth() != 391.90e9/8 || !latest[0].Success {
					t.Errorf("server-side results: %+v", latest)
				}
			} else if len(latest) != 0 {
				t.Errorf("idle responder recorded %+v", latest)
			}
		})
	}
}

func TestNCCLRunner(t *testing.T) {
	dir := standinEnv(t, "nccl_ok")
	s := newTestScheduler(t, testPlan(t, "0.9", ""), fakeNode{rate: 400e9, gid: 3})
	res := s.runNCCL(context.Background())
	if !res.Success {
		t.Fatalf("%+v", res)
	}
	if got := res.NCCL.BusBandwidth[134217728]; got != 107.63e9 {
		t.Errorf("busbw at 128 MiB = %v", got)
	}
	// Judged on the large-message bus bandwidth: this sweep stops at
	// 128 MiB, below the default 256 MiB, so on its largest size, and the
	// result says so. nccl-tests' average is kept beside it.
	if res.measuredBandwidth() != 107.63e9 || res.NCCL.BandwidthMessageBytes != 128<<20 || !res.NCCL.LargeMessageFallback {
		t.Errorf("judged bandwidth %v at %d bytes, fallback %v", res.measuredBandwidth(), res.NCCL.BandwidthMessageBytes, res.NCCL.LargeMessageFallback)
	}
	if res.NCCL.AverageBusBandwidthBytesPerSecond == nil || *res.NCCL.AverageBusBandwidthBytesPerSecond != 17.8617e9 {
		t.Errorf("average busbw = %v", res.NCCL.AverageBusBandwidthBytesPerSecond)
	}
	if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "judged on the largest size, 134217728 bytes") }) {
		t.Errorf("the fallback is not stated: %q", res.Warnings)
	}
	// Both nodes' plan entries name the same netdevs and HCAs: one app
	// context, every variable exported to every rank with -x.
	argv := calls(t, dir)[0]
	want := "-np 16 -H 10.0.0.11:8,10.0.0.12:8 -x NCCL_DEBUG -x NCCL_DEBUG_SUBSYS -x NCCL_IB_FIFO_TC -x NCCL_IB_HCA -x NCCL_IB_TC -x NCCL_SOCKET_IFNAME" +
		" --mca btl_tcp_if_include 10.0.0.0/24 --mca oob_tcp_if_include 10.0.0.0/24 /opt/nccl-tests/build/all_reduce_perf -b 8 -e 8589934592 -f 2 -g 1"
	if argv != want {
		t.Errorf("mpirun argv\n%s\nwant\n%s", argv, want)
	}
	env, _ := os.ReadFile(filepath.Join(dir, "env"))
	for _, want := range []string{"NCCL_IB_HCA==mlx5_0:1,mlx5_1:1", "NCCL_SOCKET_IFNAME==ens1f0np0,ens2f0np0", "NCCL_IB_TC=106", "NCCL_IB_FIFO_TC=106"} {
		if !strings.Contains(string(env), want) {
			t.Errorf("NCCL env lacks %q:\n%s", want, env)
		}
	}
	// The leader's GID index is not every node's: NCCL (2.21 and later)
	// picks each device's RoCE v2 GID itself unless the plan says.
	if strings.Contains(argv+string(env), "NCCL_IB_GID_INDEX") {
		t.Errorf("NCCL_IB_GID_INDEX forced on every rank: %s\n%s", argv, env)
	}
}

// TestNCCLFloorOnLargeMessages: min_bus_bandwidth_gbytes is compared with
// the large-message bus bandwidth. Healthy real runs pass a floor set from
// their links (they failed it on nccl-tests' average: GH200 17.9 GB/s under
// the example's 40, A100 66.5 GB/s under 190), and a floor above what the
// links carry still fails.
func TestNCCLFloorOnLargeMessages(t *testing.T) {
	for _, tc := range []struct {
		mode, floor string
		success     bool
	}{
		{"nccl_ok", "40", true},
		{"nccl_a100", "40", true},
		{"nccl_a100", "190", true},
		{"nccl_a100", "250", false},
		{"nccl_ok", "120", false},
	} {
		t.Run(tc.mode+"/"+tc.floor, func(t *testing.T) {
			standinEnv(t, tc.mode)
			s := newTestScheduler(t, testPlan(t, "0.9", "    min_bus_bandwidth_gbytes: "+tc.floor+"\n"), fakeNode{rate: 400e9, gid: 3})
			res := s.runNCCL(context.Background())
			if res.Success != tc.success {
				t.Errorf("success %v, want %v: %s %s (bandwidth %v, expected %v)", res.Success, tc.success, res.Reason, res.Hint,
					res.measuredBandwidth(), res.Bandwidth.ExpectedBytesPerSecond)
			}
			if !tc.success && res.Reason != ReasonBelowThreshold {
				t.Errorf("reason %q, want %q", res.Reason, ReasonBelowThreshold)
			}
		})
	}
}

// TestNCCLBaselineIgnoresAverageHistory: baselines recorded while NCCL was
// judged on nccl-tests' average (a fraction of the large-message number)
// must not set the median the large-message number is compared with, or a
// real regression passes for the next several runs.
func TestNCCLBaselineIgnoresAverageHistory(t *testing.T) {
	standinEnv(t, "nccl_a100")
	plan := testPlan(t, "0.9", "")
	dir := t.TempDir()
	old := `{"version":1,"links":{"nccl||":[66.4834e9,66.4834e9,66.4834e9,66.4834e9,66.4834e9,66.4834e9,66.4834e9,66.4834e9,66.4834e9]}}`
	if err := os.WriteFile(filepath.Join(dir, "baselines.json"), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Plan: plan, Self: "node01", Node: fakeNode{rate: 400e9, gid: 3}, StateDir: dir,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	for range minBaselineSamples {
		if res := s.runNCCL(context.Background()); !res.Success {
			t.Fatalf("healthy run failed: %+v", res)
		}
	}
	// Three good runs later the baseline is their own number.
	res := s.runNCCL(context.Background())
	if res.Bandwidth.BaselineBytesPerSecond != 237.52e9 {
		t.Errorf("baseline %v, want the large-message number 237.52e9", res.Bandwidth.BaselineBytesPerSecond)
	}
	// And a run at half of it is a regression.
	t.Setenv("STANDIN_MODE", "nccl_ok")
	if res := s.runNCCL(context.Background()); res.Success || res.Reason != ReasonRegression {
		t.Errorf("107.63 GB/s after 237.52 GB/s: success %v reason %q", res.Success, res.Reason)
	}
}

func TestNCCLFailures(t *testing.T) {
	for mode, reason := range map[string]string{
		"nccl_wrong":      ReasonWrongResults,
		"cuda_error":      ReasonExecError,
		"nccl_error":      ReasonRetryExceeded,
		"nccl_timeout":    ReasonTimeout,
		"nccl_duplicated": ReasonExecError,
		"hang":            ReasonTimeout,
		// ibv_modify_qp: Connection timed out is the compute network.
		"nccl_qp_timeout": ReasonQPConnectTimeout,
		// Rows without the summary and a clean exit: not a success.
		"nccl_truncated": ReasonIncompleteOutput,
	} {
		t.Run(mode, func(t *testing.T) {
			standinEnv(t, mode)
			plan := testPlan(t, "0.9", "")
			// Only the hanging stand-in needs the timeout; the others must
			// finish on a loaded machine, or they fail as "timeout" too.
			plan.Probes.NCCL.Timeout = time.Minute
			if mode == "hang" {
				plan.Probes.NCCL.Timeout = time.Second
			}
			s := newTestScheduler(t, plan, fakeNode{rate: 400e9, gid: 3})
			res := s.runNCCL(context.Background())
			if res.Success || res.Reason != reason {
				t.Errorf("reason = %q, want %q (exit %d, stderr %q)", res.Reason, reason, res.ExitCode, res.StderrTail)
			}
		})
	}
}

func TestBusyPortIsSkippedAndCounted(t *testing.T) {
	standinEnv(t, "bw_ok")
	s := newTestScheduler(t, testPlan(t, "0.9", ""), fakeNode{rate: 400e9, gid: 3, previous: 10 * time.Second, util: 0.6})
	peer, _ := s.opts.Plan.Node("node02")
	for _, r := range s.runPerftest(context.Background(), s.bw, peer, time.Time{}) {
		if !r.Skipped || !strings.Contains(r.SkipReason, "60%") {
			t.Errorf("busy port not skipped: %+v", r)
		}
	}
	runs := s.Store().Runs()
	if len(runs) != 1 || runs[0].Result != "skipped" || runs[0].Count != 2 {
		t.Errorf("runs = %+v, want 2 skipped", runs)
	}
	if len(s.Store().Latest()) != 0 {
		t.Error("a skipped run replaced a measurement")
	}
}

func TestProbesNeverOverlapOnADevice(t *testing.T) {
	standinEnv(t, "bw_ok")
	s := newTestScheduler(t, testPlan(t, "0.9", ""), fakeNode{rate: 400e9, gid: 3})
	if !s.locks.tryLock("mlx5_0") {
		t.Fatal("lock")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res := s.guarded(ctx, KindIBWriteBW, linkTarget(link0), func() *Result { t.Error("ran on a busy device"); return nil })
	if res == nil || !res.Skipped {
		t.Errorf("want skipped while another probe holds the device, got %+v", res)
	}
}

func TestPingLoopback(t *testing.T) {
	s := newTestScheduler(t, testPlan(t, "0.9", ""), nil)
	s.ping = &pingRunner{count: 3, timeout: 2 * time.Second, interval: 50 * time.Millisecond}
	res := s.measure(context.Background(), s.ping, linkTarget(Link{Device: "lo", LocalIP: "127.0.0.1", Peer: "self", PeerIP: "127.0.0.1"}))
	if res.Reason == ReasonExecError && strings.Contains(res.StderrTail, "ICMP socket") {
		t.Skipf("no ICMP socket allowed here: %s", res.StderrTail)
	}
	if !res.Success || res.Ping == nil || res.Ping.LossRatio != 0 {
		t.Fatalf("loopback ping: %+v", res)
	}
	if res.Latency.Seconds["avg"] <= 0 || res.Latency.Seconds["avg"] > 0.5 {
		t.Errorf("rtt = %v", res.Latency.Seconds)
	}
}

func TestSchedulerRunsOnItsOwnAndStopsCleanly(t *testing.T) {
	standinEnv(t, "bw_ok")
	t.Setenv("STANDIN_SERVER", "idle")
	plan := testPlan(t, "0.9", "")
	plan.Probes.IBWriteBW.Interval, plan.Probes.IBWriteBW.Timeout, plan.Probes.IBWriteBW.Jitter = time.Second, 800*time.Millisecond, 0
	plan.Probes.IBWriteLat.Enabled = false
	plan.Probes.NCCL.Enabled = false
	plan.Probes.Ping.Enabled = false
	s := newTestScheduler(t, plan, fakeNode{rate: 400e9, gid: 3})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	time.Sleep(4500 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("scheduler did not stop after cancel")
	}
	// With two nodes, node01 is the client in every other round.
	latest := s.Store().Latest()
	if len(latest) != 2 {
		t.Fatalf("want results for both rails, got %d: %+v", len(latest), latest)
	}
	for _, r := range latest {
		if !r.Success || r.Peer != "node02" {
			t.Errorf("%+v", r)
		}
	}
}

// A one-node plan is valid (a first server before its peers are cabled):
// every round is a bye, and nothing runs or panics.
func TestOneNodePlanPairRoundsAreByes(t *testing.T) {
	dir := standinEnv(t, "ok")
	plan := testPlan(t, "0.9", "")
	plan.Nodes = plan.Nodes[:1]
	s := newTestScheduler(t, plan, fakeNode{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s.pairLoop(ctx, s.bw) // returns at once: there is no turn to wait for
	if ctx.Err() != nil {
		t.Error("the pair loop waited for a turn on a one-node plan")
	}
	for epoch := int64(0); epoch < 5; epoch++ {
		if pairs := s.fleet[KindIBWriteBW].Pairs(epoch, 0); len(pairs) != 0 {
			t.Errorf("epoch %d pairs %v on a one-node plan", epoch, pairs)
		}
	}
	if got := calls(t, dir); len(got) != 1 || got[0] != "" {
		t.Errorf("probes ran on a one-node plan: %q", got)
	}
}
