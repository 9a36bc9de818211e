package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/procfs"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
	"github.com/roce-exporter/roce_exporter/tools/loadtest"
)

// TestLoad50Clients scrapes the 32-port scale fixture from 50 concurrent
// clients (10 s here; `go run ./tools/benchtool -ports 32 -all-collectors
// -load 50` runs the full minute): zero errors, bounded latency, bounded
// memory.
func TestLoad50Clients(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	duration := 10 * time.Second
	if d, err := time.ParseDuration(os.Getenv("ROCE_LOAD_DURATION")); err == nil {
		duration = d
	}
	root := filepath.Join(t.TempDir(), "node")
	if err := sysfixture.WriteScaleNode(root, 32); err != nil {
		t.Fatal(err)
	}
	p := startExporter(t, "--path.sysfs="+filepath.Join(root, "sys"), "--path.dev="+filepath.Join(root, "dev"),
		"--collector.ethtool.replay-dir="+filepath.Join(root, "replay"), "--log.level=warn")
	r := loadtest.Run("http://"+p.addr+"/metrics", 50, duration)
	pf, err := procfs.NewProc(p.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	st, err := pf.NewStatus()
	if err != nil {
		t.Fatal(err)
	}
	peak := st.VmHWM
	t.Logf("%s; peak RSS %.1f MiB", r, float64(peak)/(1<<20))
	if r.Errors > 0 {
		t.Errorf("%d errors, first: %s", r.Errors, r.FirstError)
	}
	if r.Requests < 100 {
		t.Errorf("only %d requests completed", r.Requests)
	}
	// Generous bounds for a loaded 2-core CI machine; the benchmark
	// figures are reported separately.
	if r.P99 > 5*time.Second {
		t.Errorf("p99 latency %s under load", r.P99)
	}
	if peak > 200<<20 {
		t.Errorf("peak RSS %.0f MiB under load", float64(peak)/(1<<20))
	}
}
