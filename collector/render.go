package collector

import (
	"fmt"
	"log/slog"

	"github.com/roce-exporter/roce_exporter/pipeline"
	"github.com/roce-exporter/roce_exporter/probes"
)

// Renderer runs some collectors on collections made elsewhere, without the
// exporter's pipeline, encoder or HTTP: a simulated fleet
// (tools/fleetsim) exports exactly the series this exporter would, from
// made-up snapshots and a real probe store.
type Renderer struct {
	collectors []Collector
	names      []string
	sink       Sink
}

// NewRenderer builds the named collectors; store is the probe results the
// probe collector exports (nil: none).
func NewRenderer(names []string, store *probes.Store) (*Renderer, error) {
	o := &Options{Enabled: names, Probes: store}
	r := &Renderer{names: names}
	for _, n := range names {
		reg, ok := registry[n]
		if !ok {
			return nil, fmt.Errorf("unknown collector %q", n)
		}
		r.collectors = append(r.collectors, reg.factory(o, slog.New(slog.DiscardHandler)))
	}
	return r, nil
}

// Render runs every collector once on col and calls series for each sample,
// in the order they were emitted (a series emitted twice comes twice; the
// exporter's encoder keeps the first).
func (r *Renderer) Render(col *pipeline.Collection, series func(name string, labelNames, labelValues []string, value float64)) error {
	r.sink.reset()
	for i, c := range r.collectors {
		if err := c.Update(col, &r.sink); err != nil {
			return fmt.Errorf("collector %s: %w", r.names[i], err)
		}
	}
	for _, s := range r.sink.samples {
		series(s.desc.name, s.desc.labels, r.sink.labels[s.lo:s.hi], s.value)
	}
	return nil
}
