package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/collector"
	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/pipeline"
	"github.com/roce-exporter/roce_exporter/reader"
)

// gatedReader counts the reads of a real reader and holds each until its
// gate is open.
type gatedReader struct {
	*reader.Reader
	reads atomic.Int32
	gate  chan struct{}
}

func (r *gatedReader) Read() *reader.Result {
	r.reads.Add(1)
	<-r.gate
	return r.Reader.Read()
}

// fixtureReader reads the sources of the enabled collectors from a sample
// node.
func fixtureReader(t *testing.T, scenario string, enabled []string) *reader.Reader {
	t.Helper()
	root := filepath.Join(fixtureDir, scenario)
	rd, err := reader.New(reader.Options{SysPath: filepath.Join(root, "sys"), DevPath: filepath.Join(root, "dev"),
		Timeout: 10 * time.Second, Sources: collector.Sources(enabled)}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	return rd
}

// waitInCollect waits until n goroutines are inside Pipeline.Collect. While
// a read is held at the gate, each of them has joined it or is about to:
// nothing can start another read before the gate opens.
func waitInCollect(t *testing.T, n int) {
	t.Helper()
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(5 * time.Second)
	for {
		stacks := string(buf[:runtime.Stack(buf, true)])
		if got := strings.Count(stacks, "roce_exporter/pipeline.(*Pipeline).Collect("); got >= n {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("%d goroutines in Pipeline.Collect, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestProbesCollectThroughTheExportersPipeline(t *testing.T) {
	opts := collector.Options{Enabled: []string{"health", "netdev", "rdma"}, NodeName: "gpu-node-01"}
	gated := &gatedReader{Reader: fixtureReader(t, "mlx5-8x400g-healthy", opts.Enabled), gate: make(chan struct{})}
	close(gated.gate)
	pl, err := pipeline.New(opts.PipelineOptions(gated))
	if err != nil {
		t.Fatal(err)
	}
	e, err := collector.NewExporter(opts, pl, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	probes := pipelineNode{pl}
	ctx := context.Background()

	// A scrape, then a probe's read: the probe gets the pipeline's newest
	// snapshot, whose Previous is the scrape's.
	e.Text()
	scraped := pl.Latest()
	snap, err := probes.Collect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if latest := pl.Latest(); snap != latest.Snapshot {
		t.Fatal("the probe's snapshot is not the pipeline's latest collection")
	}
	if snap.Previous == nil || !snap.Previous.Time.Equal(scraped.Snapshot.Time) || !snap.Time.After(snap.Previous.Time) {
		t.Fatalf("the probe's snapshot has no Previous, or not the scrape's")
	}
	if n := gated.reads.Load(); n != 2 {
		t.Fatalf("a scrape and a probe read the node %d times, want 2", n)
	}

	// A probe that reads while a scrape's read is in flight shares it.
	gated.gate = make(chan struct{})
	scrapeDone, probeDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(scrapeDone); e.Text() }()
	waitInCollect(t, 1)
	var during *node.Snapshot
	go func() {
		defer close(probeDone)
		var err error
		if during, err = probes.Collect(ctx); err != nil {
			t.Error(err)
		}
	}()
	waitInCollect(t, 2)
	close(gated.gate)
	<-scrapeDone
	<-probeDone
	if n := gated.reads.Load(); n != 3 {
		t.Errorf("a probe during a scrape made %d reads in all, want 3 (the third shared)", n)
	}
	if during == nil || during != pl.Latest().Snapshot {
		t.Error("the probe did not get the collection the scrape made")
	}
	if st := e.Status(); !st.Collected.Equal(pl.Latest().When) || len(st.Findings) == 0 {
		t.Errorf("the page shows the collection of %v, the latest is of %v", st.Collected, pl.Latest().When)
	}

	// A probe that gives up does not stop the read for the others.
	gated.gate = make(chan struct{})
	before := pl.Latest()
	short, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := probes.Collect(short); err == nil {
		t.Error("a cancelled probe read returned no error")
	}
	close(gated.gate)
	for deadline := time.Now().Add(5 * time.Second); pl.Latest() == before; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the read the cancelled probe started never completed")
		}
	}
	if n := gated.reads.Load(); n != 4 {
		t.Errorf("%d reads, want 4", n)
	}
}

// With probes on, serve reads the node once before the first probe run, so
// that run's read has a Previous; the log says what it found.
func TestFirstCollectionGivesTheFirstProbeReadAPrevious(t *testing.T) {
	opts := collector.Options{Enabled: []string{"health", "netdev", "rdma"}, NodeName: "gpu-node-07"}
	pl, err := pipeline.New(opts.PipelineOptions(fixtureReader(t, "mlx5-degraded", opts.Enabled)))
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	firstCollection(context.Background(), pl, slog.New(slog.NewTextHandler(&logs, nil)))
	first := pl.Latest()
	if first == nil {
		t.Fatal("no collection at start-up")
	}
	if !strings.Contains(logs.String(), `msg="Read the node"`) || strings.Contains(logs.String(), "checks_failed=0 ") {
		t.Errorf("the start-up log does not count the degraded node's failures:\n%s", logs.String())
	}
	snap, err := pipelineNode{pl}.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if snap.Previous == nil || !snap.Previous.Time.Equal(first.Snapshot.Time) {
		t.Error("the first probe read has no Previous")
	}
}
