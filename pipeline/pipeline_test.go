package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/health"
	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/reader"
)

// countingReader counts the reads of a real reader and, with a gate, holds
// each read until the gate opens.
type countingReader struct {
	*reader.Reader
	reads atomic.Int32
	gate  chan struct{}
	panic bool
}

func (r *countingReader) Read() *reader.Result {
	r.reads.Add(1)
	if r.gate != nil {
		<-r.gate
	}
	if r.panic {
		panic("reader bug")
	}
	return r.Reader.Read()
}

func newCountingReader(t *testing.T) *countingReader {
	t.Helper()
	root := filepath.Join(t.TempDir(), "node")
	if err := sysfixture.Write(root, sysfixture.HealthyCX7(2)); err != nil {
		t.Fatal(err)
	}
	rd, err := reader.New(reader.Options{SysPath: filepath.Join(root, "sys"), DevPath: filepath.Join(root, "dev"),
		Timeout: 2 * time.Second, Sources: []string{node.SourceRDMA, node.SourceNetdev}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	return &countingReader{Reader: rd}
}

// countChecks counts the runs of the health checks for the test's duration.
func countChecks(t *testing.T) *atomic.Int32 {
	var n atomic.Int32
	orig := checks
	checks = func(s *node.Snapshot, p *config.Plan, name string) []health.Finding {
		n.Add(1)
		return orig(s, p, name)
	}
	t.Cleanup(func() { checks = orig })
	return &n
}

func newPipeline(t *testing.T, o Options) *Pipeline {
	t.Helper()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitJoined waits until n callers besides the first wait on the read in
// flight.
func waitJoined(t *testing.T, p *Pipeline, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.mu.Lock()
		joined := -1
		if p.inflight != nil {
			joined = p.inflight.joined
		}
		p.mu.Unlock()
		if joined == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d callers joined the read in flight, want %d", joined, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestBurstOfCollectsCostsOneReadAndOneRunOfTheChecks(t *testing.T) {
	rd := newCountingReader(t)
	rd.gate = make(chan struct{})
	runs := countChecks(t)
	p := newPipeline(t, Options{Reader: rd, NodeName: "node-a", Health: true})

	const callers = 12
	got := make([]*Collection, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			c, err := p.Collect(context.Background())
			if err != nil {
				t.Error(err)
			}
			got[i] = c
		})
	}
	waitJoined(t, p, callers-1)
	close(rd.gate)
	wg.Wait()

	if n := rd.reads.Load(); n != 1 {
		t.Errorf("%d concurrent Collects read the node %d times, want once", callers, n)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the checks ran %d times for one collection, want once", n)
	}
	for i, c := range got {
		if c != got[0] {
			t.Fatalf("caller %d got another collection than caller 0", i)
		}
	}
	c := got[0]
	if len(c.Findings) == 0 || c.HealthErr != nil {
		t.Fatalf("no findings on the collection (err %v)", c.HealthErr)
	}
	if p.Latest() != c {
		t.Error("Latest is not the collection just made")
	}
	if c.When.Before(c.Snapshot.Time) {
		t.Errorf("When %v is before the read began %v", c.When, c.Snapshot.Time)
	}
	if s, ok := c.Source(node.SourceRDMA); !ok || !s.OK() {
		t.Errorf("rdma source result %+v, %v", s, ok)
	}
	if _, ok := c.ReadErrors[node.SourceNetdev]; !ok {
		t.Error("no read-error count for the netdev source")
	}

	// Latest reads nothing.
	for range 3 {
		p.Latest()
	}
	if n := rd.reads.Load(); n != 1 {
		t.Errorf("Latest read the node: %d reads", n)
	}
}

func TestPreviousIsTheCollectionBeforeWithoutItsHistory(t *testing.T) {
	rd := newCountingReader(t)
	p := newPipeline(t, Options{Reader: rd})
	if p.Latest() != nil {
		t.Fatal("a collection before the first read")
	}
	ctx := context.Background()
	first, err := p.Collect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if first.Previous != nil || first.Snapshot.Previous != nil {
		t.Error("the first collection has a previous snapshot")
	}
	if first.Findings != nil {
		t.Error("findings with health off")
	}
	second, _ := p.Collect(ctx)
	third, _ := p.Collect(ctx)
	if n := rd.reads.Load(); n != 3 {
		t.Errorf("3 collections one after another read %d times", n)
	}
	if second.Previous == nil || !second.Previous.Time.Equal(first.Snapshot.Time) {
		t.Fatalf("second.Previous is not the first snapshot")
	}
	if second.Snapshot.Previous != second.Previous {
		t.Error("Snapshot.Previous is not Collection.Previous")
	}
	if !third.Previous.Time.Equal(second.Snapshot.Time) || third.Previous.Previous != nil {
		t.Error("third.Previous is not the second snapshot without its history")
	}
	// Whoever still holds the second collection keeps its interval.
	if second.Snapshot.Previous == nil || !second.Snapshot.Previous.Time.Equal(first.Snapshot.Time) {
		t.Error("the third collection cut the second one's history")
	}
}

func TestCollectReturnsWhenItsContextEndsAndTheReadCompletes(t *testing.T) {
	rd := newCountingReader(t)
	rd.gate = make(chan struct{})
	p := newPipeline(t, Options{Reader: rd})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := p.Collect(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Collect with an ended context: %v", err)
	}
	close(rd.gate)
	c, err := p.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The second call either joined the read the first started or came after
	// it: never a read of its own while one was in flight.
	if n := rd.reads.Load(); n > 2 {
		t.Errorf("%d reads", n)
	}
	if p.Latest() != c {
		t.Error("the collection is not the latest")
	}
}

func TestAPanicInTheReadIsAnErrorNotADeadlock(t *testing.T) {
	rd := newCountingReader(t)
	rd.panic = true
	p := newPipeline(t, Options{Reader: rd})
	if _, err := p.Collect(context.Background()); err == nil {
		t.Fatal("no error from a read that panicked")
	}
	if p.Latest() != nil {
		t.Error("a failed collection became the latest")
	}
	rd.panic = false
	if c, err := p.Collect(context.Background()); err != nil || c == nil {
		t.Fatalf("the pipeline did not recover: %v", err)
	}
}

func TestAPanicInTheChecksFailsHealthOnly(t *testing.T) {
	orig := checks
	checks = func(*node.Snapshot, *config.Plan, string) []health.Finding { panic("check bug") }
	t.Cleanup(func() { checks = orig })
	p := newPipeline(t, Options{Reader: newCountingReader(t), Health: true})
	c, err := p.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c.HealthErr == nil || c.Findings != nil || c.Snapshot == nil {
		t.Errorf("health err %v, %d findings, snapshot %v", c.HealthErr, len(c.Findings), c.Snapshot != nil)
	}
}

func TestNewNeedsAReader(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Error("a pipeline without a reader")
	}
}
