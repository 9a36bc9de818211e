package collector

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
)

// benchNode writes a scale fixture (n ConnectX-7 ports, full counters,
// 256-slot GID tables) with ethtool captures, and returns its config.
func benchNode(b *testing.B, ports int) *Config {
	b.Helper()
	root := filepath.Join(b.TempDir(), "node")
	if err := sysfixture.WriteScaleNode(root, ports); err != nil {
		b.Fatal(err)
	}
	cfg := &Config{
		SysPath: filepath.Join(root, "sys"), DevPath: filepath.Join(root, "dev"),
		Timeout:    10 * time.Second,
		Enabled:    []string{"rdma", "netdev", "pcie", "ethtool", "dcb"},
		GIDRefresh: 60 * time.Second,
	}
	cfg.Ethtool.ReplayDir = filepath.Join(root, "replay")
	return cfg
}

// BenchmarkScrape measures one full scrape — every source collector plus
// the text encoding Prometheus receives — per fixture size. It reports
// series per scrape and allocations per series.
func BenchmarkScrape(b *testing.B) {
	for _, ports := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("ports=%d", ports), func(b *testing.B) {
			cfg := benchNode(b, ports)
			e, err := NewExporter(cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			w := NewTextWriter(e)
			series, err := w.Write(io.Discard) // warm caches: steady state is what matters
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := w.Write(io.Discard); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(series), "series/scrape")
		})
	}
}

// BenchmarkLiveHeap scrapes the 32-port fixture b.N times and reports the
// live heap after a forced GC at the first tenth and at the end: RSS moves
// with the GC's heap goal, the live heap only when something accumulates.
// Run it long enough to cross a few --collector.rdma.gid-refresh intervals
// (make bench: 20000x, about two minutes).
func BenchmarkLiveHeap(b *testing.B) {
	cfg := benchNode(b, 32)
	e, err := NewExporter(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	w := NewTextWriter(e)
	liveHeap := func() float64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return float64(ms.HeapAlloc)
	}
	var early float64
	for i := 0; i < b.N; i++ {
		if _, err := w.Write(io.Discard); err != nil {
			b.Fatal(err)
		}
		if i == b.N/10 {
			early = liveHeap()
		}
	}
	end := liveHeap()
	b.ReportMetric(early/(1<<20), "MiB-live-early")
	b.ReportMetric(end/(1<<20), "MiB-live-end")
	b.ReportMetric((end-early)/(1<<10), "KiB-growth")
}
