package main

import (
	"context"
	"time"

	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/pipeline"
	"github.com/roce-exporter/roce_exporter/probes"
)

// pipelineNode is the node as the probes see it: each Collect is a
// collection of the exporter's pipeline, so a probe's read joins a scrape's
// in flight, and its snapshot's Previous is the collection before it (a
// scrape's, or the one taken at start-up).
type pipelineNode struct{ p *pipeline.Pipeline }

// Collect reads the node now through the pipeline and returns the snapshot.
func (n pipelineNode) Collect(ctx context.Context) (*node.Snapshot, error) {
	c, err := n.p.Collect(ctx)
	if err != nil {
		return nil, err
	}
	return c.Snapshot, nil
}

// snapshotNode backs the probes' NodeInfo with the pipeline until the
// probes read through pipelineNode themselves.
func snapshotNode(p *pipeline.Pipeline) probes.SnapshotNode {
	n := pipelineNode{p}
	return probes.SnapshotNode{Read: func() *node.Snapshot {
		snap, err := n.Collect(context.Background())
		if err != nil {
			// Only a bug in a reader panics there: the probe sees an
			// empty node (no device, no rate) and skips.
			return &node.Snapshot{Time: time.Now()}
		}
		return snap
	}}
}
