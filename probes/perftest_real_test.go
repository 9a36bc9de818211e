package probes

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
	"github.com/roce-exporter/roce_exporter/probes/schedule"
)

// Lines the real perftest prints when its argv is wrong (perftest_parameters.c:
// getopt's "unrecognized option", then " Invalid Command or flag." / " Parser function
// exited with Error"), and when the argv was fine but no RDMA device exists
// (" Did not detect devices", " Unable to find the Infiniband/RoCE device").
var (
	perftestArgvErrors = []string{"unrecognized option", "invalid option", "Invalid Command or flag", "Parser function exited with Error", "requires an argument"}
	perftestNoDevice   = []string{"Did not detect devices", "Unable to find the Infiniband/RoCE device", "No IB devices found"}
)

// runRealPerftest runs the Debian perftest binary with argv (argv[0] replaced by
// the binary) and returns its combined output; the host has no RDMA device, so a
// valid argv ends at the device lookup.
func runRealPerftest(t *testing.T, binary string, argv []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, argv[1:]...)
	cmd.Dir = t.TempDir() // --out_json would write here
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s did not exit: %v\n%s", binary, ctx.Err(), out)
	}
	if err == nil {
		t.Fatalf("%s succeeded on a host without RDMA devices?\n%s", binary, out)
	}
	return string(out)
}

func assertNoDeviceOnly(t *testing.T, argv []string, out string) {
	t.Helper()
	for _, bad := range perftestArgvErrors {
		if strings.Contains(out, bad) {
			t.Errorf("perftest rejected the runner's argv %q (%q):\n%s", strings.Join(argv, " "), bad, out)
		}
	}
	found := false
	for _, ok := range perftestNoDevice {
		found = found || strings.Contains(out, ok)
	}
	if !found {
		t.Errorf("perftest with %q failed, but not for want of a device:\n%s", strings.Join(argv, " "), out)
	}
}

// TestRealPerftestAcceptsRunnerArgv runs Debian's perftest (package perftest) with the
// exact argv the runners build, --tclass included, client and server, bandwidth and
// latency: perftest parses its command line before it looks for a device, so on this
// device-less host a valid argv fails only with "no device".
func TestRealPerftestAcceptsRunnerArgv(t *testing.T) {
	bw := testenv.LookPath(t, "perftest", "ib_write_bw")
	lat := testenv.LookPath(t, "perftest", "ib_write_lat")
	plan := testPlan(t, "0.9", "")
	s := newTestScheduler(t, plan, fakeNode{rate: 400e9, gid: 3})
	for _, c := range []struct {
		runner *perftestRunner
		binary string
	}{{s.bw, bw}, {s.lat, lat}} {
		for _, server := range []bool{false, true} {
			snap, _ := s.opts.Node.Collect(context.Background())
			argv := c.runner.args(link0, c.runner.placement(snap, link0), server)
			if !strings.Contains(strings.Join(argv, " "), "--tclass=106") {
				t.Fatalf("%s argv lacks the plan's traffic class: %q", c.runner.kind(), argv)
			}
			out := runRealPerftest(t, c.binary, argv)
			assertNoDeviceOnly(t, argv, out)
			t.Logf("%s %s\n%s", c.binary, strings.Join(argv[1:], " "), strings.TrimSpace(out))
		}
	}
	// The test can fail: a flag perftest does not know is refused before the device lookup.
	out := runRealPerftest(t, bw, []string{"ib_write_bw", "--tclass=106", "--no-such-flag", "192.168.100.12"})
	if !strings.Contains(out, "unrecognized option") {
		t.Errorf("an unknown flag was not refused:\n%s", out)
	}
}

// The incast's argv, a receiver's server and a sender's client on their own
// ports, is one the real ib_write_bw accepts: it parses its command line before
// it looks for a device.
func TestRealPerftestAcceptsIncastArgv(t *testing.T) {
	bw := testenv.LookPath(t, "perftest", "ib_write_bw")
	plan := incastPlan(t, "")
	for _, self := range []string{"node01", "node02"} {
		s := newTestSchedulerAs(t, plan, newFabricNode(t.TempDir(), self, fabricSide{}), self)
		snap, _ := s.opts.Node.Collect(context.Background())
		g := schedule.IncastGroup{Receiver: "node01", Senders: []string{"node02", "node03"}}
		for _, tg := range s.incastTargets(g) {
			r := s.incastSender
			if self == "node01" {
				r = s.incastReceiver
			}
			argv := r.perf.argsOnPort(tg.Link, r.perf.placement(snap, tg.Link), self == "node01", r.incastPort(tg.Rail, tg.slot, len(tg.nodes)))
			joined := strings.Join(argv, " ")
			for _, need := range []string{"--tclass=106", "-x 3", "-D 1", "--report_gbits", "-p 1854"} {
				if !strings.Contains(joined, need) {
					t.Fatalf("%s argv %q lacks %s", self, joined, need)
				}
			}
			out := runRealPerftest(t, bw, argv)
			assertNoDeviceOnly(t, argv, out)
		}
	}
}
