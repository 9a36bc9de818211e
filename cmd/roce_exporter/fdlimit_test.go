package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// TestManyDevicesUnderALowFileLimit runs the exporter on 64 RDMA devices
// with a hard limit of 1,024 descriptors, fewer than it would keep open
// with no bound (about 65 per port): every scrape must report every device
// with no read error, the same series each time, and leave descriptors for
// the listener.
func TestManyDevicesUnderALowFileLimit(t *testing.T) {
	prlimit := testenv.LookPath(t, "util-linux", "prlimit")
	root := filepath.Join(t.TempDir(), "node")
	if err := sysfixture.WriteScaleNode(root, 64); err != nil {
		t.Fatal(err)
	}
	addr := testenv.FreeAddr(t)
	p := runExporter(t, addr, exec.Command(prlimit, "--nofile=1024:1024", "--", binary,
		"--web.listen-address="+addr, "--path.sysfs="+filepath.Join(root, "sys"), "--path.dev="+filepath.Join(root, "dev"),
		"--collector.ethtool.replay-dir="+filepath.Join(root, "replay")))
	testenv.WaitListening(t, addr, 10*time.Second)

	var first string
	for i := 0; i < 5; i++ {
		begin := time.Now()
		code, body := p.get(t, "/metrics")
		took := time.Since(begin)
		if code != 200 {
			t.Fatalf("scrape %d: HTTP %d", i, code)
		}
		if n := strings.Count(body, "\nroce_device_info{"); n != 64 {
			t.Errorf("scrape %d: %d devices, want 64", i, n)
		}
		for _, c := range []string{"rdma", "netdev", "pcie", "ethtool", "dcb"} {
			if v, _ := metricValue(body, "roce_scrape_collector_success", `collector="`+c+`"`); v != "1" {
				t.Errorf("scrape %d: %s success = %q", i, c, v)
			}
			if v, _ := metricValue(body, "roce_scrape_read_errors_total", `collector="`+c+`"`); v != "0" {
				t.Errorf("scrape %d: %s read errors = %q", i, c, v)
			}
		}
		// The rate checks appear from the second scrape on.
		names := seriesNames(body)
		if i == 1 {
			first = names
		} else if i > 1 && names != first {
			t.Errorf("scrape %d exports other series than the first:\n%s", i, diffLines(first, names))
		}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid))
		t.Logf("scrape %d: %d series, %d descriptors open, %v", i, strings.Count(names, "\n"), len(fds), took)
		if len(fds) > 1024-200 {
			t.Errorf("scrape %d: %d descriptors open under a limit of 1024; the listener needs room", i, len(fds))
		}
	}
}

// seriesNames returns the series of a scrape without their values.
func seriesNames(body string) string {
	var b strings.Builder
	for _, line := range strings.Split(body, "\n") {
		if line == "" || line[0] == '#' || strings.HasPrefix(line, "go_") || strings.HasPrefix(line, "process_") {
			continue
		}
		b.WriteString(line[:strings.LastIndexByte(line, ' ')])
		b.WriteByte('\n')
	}
	return b.String()
}
