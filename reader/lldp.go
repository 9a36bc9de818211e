package reader

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/lldpcli"
	"github.com/roce-exporter/roce_exporter/node"
)

// lldpReplayFile is the `lldpcli -f json show neighbors` capture in a
// replay directory.
const lldpReplayFile = "lldpcli-neighbors.json"

// lldpSource reads each interface's LLDP neighbour from the local lldpd
// (see internal/lldpcli for why lldpd and not a packet socket). Cabling
// changes rarely and a switch re-announces every 30 s, so lldpcli runs on
// the refresh interval, not every scrape; in between the last answer is
// kept. Without lldpd the source is absent.
type lldpSource struct {
	r  *Reader
	at time.Time
	// last is the last answer (nil with lastErr set when it failed).
	last    []node.LLDPNeighbor
	lastErr error
	replay  replayCache
}

func newLLDPSource(r *Reader) *lldpSource { return &lldpSource{r: r} }

func (*lldpSource) close() error { return nil }

func (c *lldpSource) read(sc *scan) (func(*node.Snapshot), error) {
	if c.r.copyWithoutCaptures() {
		return nil, errors.Join(ErrNoData, errNoKernel)
	}
	ifaces, err := sc.ethernetInterfaces()
	if err != nil {
		return nil, err
	}
	if c.r.opts.ReplayDir != "" {
		// A capture is read every time: its cache costs one stat.
		c.last, c.lastErr = c.loadReplay()
	} else if c.r.due(c.at, sc.Time) {
		c.at = sc.Time
		c.last, c.lastErr = c.query()
	}
	switch {
	case errors.Is(c.lastErr, lldpcli.ErrNotInstalled), errors.Is(c.lastErr, lldpcli.ErrNotRunning), errors.Is(c.lastErr, fs.ErrNotExist):
		return nil, errors.Join(ErrNoData, c.lastErr)
	case c.lastErr != nil:
		return nil, c.lastErr
	}
	want := map[string]bool{}
	for _, i := range ifaces {
		want[i] = true
	}
	out := map[string]*node.LLDPNeighbor{}
	for i := range c.last {
		n := c.last[i]
		if want[n.Interface] {
			out[n.Interface] = &n
		}
	}
	// lldpd running with no neighbour on a RoCE interface is a reading
	// (the switch sends no LLDP, or the NIC firmware eats it), not an
	// absent source: the map is empty, not nil.
	return func(sn *node.Snapshot) { sn.LLDP = out }, nil
}

func (c *lldpSource) query() ([]node.LLDPNeighbor, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.r.opts.Timeout)
	defer cancel()
	return lldpcli.Query(ctx, c.r.opts.LLDPCli, c.r.opts.LLDPSocket)
}

func (c *lldpSource) loadReplay() ([]node.LLDPNeighbor, error) {
	path := filepath.Join(c.r.opts.ReplayDir, lldpReplayFile)
	v, err := c.replay.load(path, func(f io.Reader) (any, error) { return lldpcli.Parse(f) })
	if err != nil {
		return nil, err
	}
	return v.([]node.LLDPNeighbor), nil
}
