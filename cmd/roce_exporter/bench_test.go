package main

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/collector"
	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
	"github.com/roce-exporter/roce_exporter/pipeline"
	"github.com/roce-exporter/roce_exporter/reader"
)

// BenchmarkFullScrape is one scrape of every default collector, the
// health checks included, as the served binary runs it (the collector
// package's BenchmarkScrape leaves the health checks out).
func BenchmarkFullScrape(b *testing.B) {
	for _, ports := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("ports=%d", ports), func(b *testing.B) {
			root := filepath.Join(b.TempDir(), "node")
			if err := sysfixture.WriteScaleNode(root, ports); err != nil {
				b.Fatal(err)
			}
			opts := collector.Options{Enabled: []string{"dcb", "ethtool", "health", "netdev", "pcie", "probe", "rdma"}}
			rd, err := reader.New(reader.Options{SysPath: filepath.Join(root, "sys"), DevPath: filepath.Join(root, "dev"),
				Timeout: 10 * time.Second, Refresh: time.Minute, Sources: collector.Sources(opts.Enabled),
				ReplayDir: filepath.Join(root, "replay")}, slog.New(slog.DiscardHandler))
			if err != nil {
				b.Fatal(err)
			}
			defer rd.Close()
			p, err := pipeline.New(opts.PipelineOptions(rd))
			if err != nil {
				b.Fatal(err)
			}
			e, err := collector.NewExporter(opts, p, slog.New(slog.DiscardHandler))
			if err != nil {
				b.Fatal(err)
			}
			series, _ := e.WriteText(io.Discard)
			b.ReportAllocs()
			for b.Loop() {
				e.WriteText(io.Discard)
			}
			b.ReportMetric(float64(series), "series/scrape")
		})
	}
}
