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
	"github.com/roce-exporter/roce_exporter/pipeline"
	"github.com/roce-exporter/roce_exporter/reader"
)

// benchNode writes a scale fixture (n ConnectX-7 ports, full counters,
// 256-slot GID tables) with ethtool captures, and returns its config.
func benchNode(b *testing.B, ports int) *Exporter {
	b.Helper()
	root := filepath.Join(b.TempDir(), "node")
	if err := sysfixture.WriteScaleNode(root, ports); err != nil {
		b.Fatal(err)
	}
	cfg := testConfig(root, "rdma", "netdev", "pcie", "ethtool", "dcb")
	cfg.ro.Timeout, cfg.ro.Refresh = 10*time.Second, 60*time.Second
	cfg.ro.ReplayDir = filepath.Join(root, "replay")
	cfg.ro.Sources = Sources(cfg.o.Enabled)
	rd, err := reader.New(cfg.ro, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rd.Close() })
	p, err := pipeline.New(cfg.o.PipelineOptions(rd))
	if err != nil {
		b.Fatal(err)
	}
	e, err := NewExporter(cfg.o, p, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkScrape measures one full scrape — every source collector plus
// the text encoding Prometheus receives — per fixture size. It reports
// series per scrape and allocations per series.
func BenchmarkScrape(b *testing.B) {
	for _, ports := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("ports=%d", ports), func(b *testing.B) {
			e := benchNode(b, ports)
			series, err := e.WriteText(io.Discard) // warm caches: steady state is what matters
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.WriteText(io.Discard); err != nil {
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
	e := benchNode(b, 32)
	liveHeap := func() float64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return float64(ms.HeapAlloc)
	}
	var early float64
	for i := 0; i < b.N; i++ {
		if _, err := e.WriteText(io.Discard); err != nil {
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
