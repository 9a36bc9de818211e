package main

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// TestRespondersDieWithTheExporter: kill -9 of the exporter left its
// perftest responders running (issue 12), each holding its port and device
// for the next exporter. Every child now carries a parent-death signal.
func TestRespondersDieWithTheExporter(t *testing.T) {
	dir := t.TempDir()
	plan := probePlan(t, dir, fmt.Sprintf(`  ib_write_bw:
    command: %s
  ping:
    enabled: false
`, absPath(t, "../../probes/testdata/standin/perftest")))
	// The stand-in's server mode waits like a perftest server (exec sleep).
	t.Setenv("STANDIN_DIR", dir)
	t.Setenv("STANDIN_SERVER", "idle")
	p := startExporter(t, append(scenarioArgs("mlx5-8x400g-healthy"), "--config.file="+plan, "--node.name=node01")...)
	pid := p.cmd.Process.Pid
	var responders []int
	for end := time.Now().Add(10 * time.Second); len(responders) < 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d responders after 10 s, want one per device (2)", len(responders))
		}
		responders = testenv.Children(pid)
	}
	for _, r := range responders {
		defer syscall.Kill(r, syscall.SIGKILL)
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
	end := time.Now().Add(5 * time.Second)
	for _, r := range responders {
		for testenv.ProcessAlive(r) {
			if time.Now().After(end) {
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", r))
				t.Fatalf("responder %d (%q) still runs 5 s after kill -9 of the exporter", r, cmdline)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
