// Package pipeline reads the node once for everyone who needs it: the
// metrics, the node page, the doctor and the probes each read a Collection,
// made by one Pipeline from one reader.
//
// A collection is one read of the node, the snapshot before it (for rates)
// and the health checks' findings on the pair, judged once. Whoever asks
// while a read is in flight joins it, so a burst of scrapes plus a probe costs
// one read and one run of the checks, and every consumer sees the same
// snapshot and the same findings.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/health"
	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/reader"
)

// Reader is what the pipeline uses of a *reader.Reader.
type Reader interface {
	// Read reads every source once and returns the snapshot.
	Read() *reader.Result
	// Sources names the sources Read reads.
	Sources() []string
	// ReadErrors counts the files a source skipped since the reader was made.
	ReadErrors(source string) uint64
}

// Options say what a Pipeline reads and judges.
type Options struct {
	Reader Reader
	// Plan is the cluster plan the checks compare against; nil runs only the
	// checks that need none.
	Plan *config.Plan
	// NodeName is this node's name in the plan.
	NodeName string
	// Health runs the checks on every collection; without it Findings stay nil.
	Health bool
}

// Collection is one read of the node with what was derived from it. It is
// shared by everyone who asked for it: nothing in it may be changed.
type Collection struct {
	// Snapshot is the node as read; its Previous is Previous.
	Snapshot *node.Snapshot
	// Previous is the snapshot of the collection before (nil for the first),
	// without its own Previous: one level of history, not a chain.
	Previous *node.Snapshot
	// Findings are the checks' verdicts on Snapshot, in the checks' order; nil
	// when health is off.
	Findings []health.Finding
	// HealthErr is set when the checks could not run (a bug that panicked);
	// Findings are then nil.
	HealthErr error
	// HealthDuration is how long the checks took.
	HealthDuration time.Duration
	// When is the time the collection finished, checks included.
	When time.Time
	// Sources are how each source's read went, in the reader's order.
	Sources []reader.SourceResult
	// ReadErrors counts, per source, the files skipped since the reader was
	// made, as of this collection.
	ReadErrors map[string]uint64
}

// Source returns how the named source's read went; false if the reader does
// not read it.
func (c *Collection) Source(name string) (reader.SourceResult, bool) {
	for _, s := range c.Sources {
		if s.Name == name {
			return s, true
		}
	}
	return reader.SourceResult{}, false
}

// Pipeline makes collections, one at a time.
type Pipeline struct {
	opts Options

	mu       sync.Mutex
	inflight *flight
	latest   *Collection
}

// flight is a collection being made; everyone who asks meanwhile waits on done.
type flight struct {
	done chan struct{}
	c    *Collection
	err  error
	// joined counts the callers waiting on it besides the one that started
	// it (guarded by Pipeline.mu).
	joined int
}

// New makes a Pipeline on o.Reader; it reads nothing yet.
func New(o Options) (*Pipeline, error) {
	if o.Reader == nil {
		return nil, errors.New("pipeline: no reader")
	}
	return &Pipeline{opts: o}, nil
}

// Sources names the sources the pipeline's reader reads.
func (p *Pipeline) Sources() []string { return p.opts.Reader.Sources() }

// HealthEnabled says whether collections carry findings.
func (p *Pipeline) HealthEnabled() bool { return p.opts.Health }

// Collect reads the node now, or joins the read in flight, and returns the
// collection, which becomes the latest. The read itself cannot be cancelled
// (each source has its own timeout): when ctx ends first, Collect returns
// ctx's error and the collection still completes for the next caller.
func (p *Pipeline) Collect(ctx context.Context) (*Collection, error) {
	p.mu.Lock()
	f := p.inflight
	if f == nil {
		f = &flight{done: make(chan struct{})}
		p.inflight = f
		go p.collect(f, p.latest)
	} else {
		f.joined++
	}
	p.mu.Unlock()
	select {
	case <-f.done:
		return f.c, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Latest returns the newest collection without reading; nil before the first.
func (p *Pipeline) Latest() *Collection {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.latest
}

// collect makes f's collection after prev.
func (p *Pipeline) collect(f *flight, prev *Collection) {
	defer func() {
		// A panic here is a bug on input nobody foresaw; the waiters must
		// still wake, and the exporter must live on.
		if r := recover(); r != nil {
			f.c, f.err = nil, fmt.Errorf("pipeline: panic while collecting: %v", r)
		}
		p.mu.Lock()
		if f.c != nil {
			p.latest = f.c
		}
		p.inflight = nil
		p.mu.Unlock()
		close(f.done)
	}()
	res := p.opts.Reader.Read()
	c := &Collection{Snapshot: res.Snapshot, Sources: res.Sources, ReadErrors: make(map[string]uint64, len(res.Sources))}
	for _, s := range res.Sources {
		c.ReadErrors[s.Name] = p.opts.Reader.ReadErrors(s.Name)
	}
	if prev != nil {
		// A copy without its history: the previous collection's own
		// snapshot is shared with whoever still holds it and must not change.
		before := *prev.Snapshot
		before.Previous = nil
		c.Previous = &before
	}
	c.Snapshot.Previous = c.Previous
	if p.opts.Health {
		begin := time.Now()
		c.Findings, c.HealthErr = runChecks(c.Snapshot, p.opts.Plan, p.opts.NodeName)
		c.HealthDuration = time.Since(begin)
	}
	c.When = time.Now()
	f.c = c
}

// runChecks runs the checks, turning a panic (a check's bug on garbage input)
// into an error instead of a dead exporter.
func runChecks(snap *node.Snapshot, plan *config.Plan, nodeName string) (findings []health.Finding, err error) {
	defer func() {
		if r := recover(); r != nil {
			findings, err = nil, fmt.Errorf("panic in the health checks: %v", r)
		}
	}()
	return checks(snap, plan, nodeName), nil
}

// checks is health.Run; tests count its calls.
var checks = health.Run
