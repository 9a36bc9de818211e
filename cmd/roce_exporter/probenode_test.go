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
	root := filepath.Join(fixtureDir, "mlx5-degraded")
	ropts := reader.Options{SysPath: filepath.Join(root, "sys"), DevPath: filepath.Join(root, "dev"), Timeout: 10 * time.Second, Sources: collector.Sources(opts.Enabled)}
	logWhatWasFound(context.Background(), pl, true, ropts, slog.New(slog.NewTextHandler(&logs, nil)))
	first := pl.Latest()
	if first == nil {
		t.Fatal("no collection at start-up")
	}
	if !strings.Contains(logs.String(), `msg="Read the node"`) || strings.Contains(logs.String(), "checks_failed=0 ") ||
		!strings.Contains(logs.String(), `msg="Found the node" summary="8 RDMA ports (7 up) on 8 NICs, 8 netdevs"`) {
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

// Issue 27: the start-up log said nothing about what the exporter found.
// Without probes it reads the node once to say so, by a read of its own:
// the pipeline's first collection stays the first scrape's, without a
// Previous (the goldens' rate checks see one sample, as before).
func TestStartUpLogSaysWhatWasFound(t *testing.T) {
	enabled := []string{"health", "netdev", "pcie", "rdma"}
	for _, tc := range []struct {
		scenario string
		sys      []string
		level    string
		want     string
	}{
		{scenario: "mlx5-8x400g-healthy", level: "INFO", want: `msg="Found the node" summary="8 RDMA ports (8 up) on 8 NICs, 8 netdevs"`},
		{scenario: "no-rdma-driver", level: "WARN", want: `msg="Found no RDMA device" summary="no RDMA device under `},
		{scenario: "cpu node", level: "WARN", want: `class/infiniband, and no RDMA-capable NIC on the PCI bus"`},
	} {
		root := filepath.Join(fixtureDir, tc.scenario)
		sys, dev := filepath.Join(root, "sys"), filepath.Join(root, "dev")
		if tc.scenario == "cpu node" {
			args := cpuNodeSysfs(t)
			sys, dev = strings.TrimPrefix(args[0], "--path.sysfs="), strings.TrimPrefix(args[1], "--path.dev=")
		}
		ropts := reader.Options{SysPath: sys, DevPath: dev, Timeout: 10 * time.Second, Sources: collector.Sources(enabled)}
		rd, err := reader.New(ropts, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		pl, err := pipeline.New(pipeline.Options{Reader: rd, Health: true})
		if err != nil {
			t.Fatal(err)
		}
		var logs strings.Builder
		logWhatWasFound(context.Background(), pl, false, ropts, slog.New(slog.NewTextHandler(&logs, nil)))
		if !strings.Contains(logs.String(), "level="+tc.level) || !strings.Contains(logs.String(), tc.want) {
			t.Errorf("%s: log lacks %s %q:\n%s", tc.scenario, tc.level, tc.want, logs.String())
		}
		if pl.Latest() != nil || rd.ReadErrors(node.SourceRDMA) != 0 {
			t.Errorf("%s: the start-up read became the pipeline's, or counted in its reader", tc.scenario)
		}
		c, err := pl.Collect(context.Background())
		if err != nil || c.Previous != nil {
			t.Errorf("%s: the first scrape's collection has a Previous (%v)", tc.scenario, err)
		}
		rd.Close()
	}
}

func TestDescribeNodeUnreadable(t *testing.T) {
	snap := &node.Snapshot{Sources: map[string]node.SourceStatus{node.SourceRDMA: node.SourcePartial}, Devices: []*node.Device{
		{Name: "mlx5_0", PCIAddress: "0000:18:00.0", Ports: []*node.Port{{Number: 1, Interface: "ens1f0np0"}, {Number: 2, Interface: "ens1f1np1"}}},
		{Name: "mlx5_1", Unreadable: "reads did not return"},
	}}
	if got, nothing := describeNode(snap, "/sys/class/infiniband"); nothing || got != "2 RDMA ports (0 up) on 1 NICs, 2 netdevs; 1 RDMA device(s) could not be read" {
		t.Errorf("%q %v", got, nothing)
	}
	snap.Sources[node.SourceRDMA] = node.SourceFailed
	if got, nothing := describeNode(snap, "/sys/class/infiniband"); !nothing || got != "/sys/class/infiniband could not be read" {
		t.Errorf("%q %v", got, nothing)
	}
}
