package main

import (
	"context"

	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/pipeline"
)

// pipelineNode is the node as the probes see it (probes.Node): each Collect is a
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

// Latest is the newest collection's snapshot, nil before the first.
func (n pipelineNode) Latest() *node.Snapshot {
	if c := n.p.Latest(); c != nil {
		return c.Snapshot
	}
	return nil
}
