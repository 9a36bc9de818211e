package reader

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/lldpcli"
	"github.com/roce-exporter/roce_exporter/node"
)

// lldpReplayFile is the `lldpcli -f json0 show neighbors details` capture in a
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
	// last is the last answer (nil with lastErr set when it failed);
	// counted is the answer whose skipped neighbours were counted as read
	// errors, so that an answer kept between queries counts once.
	last    *lldpcli.Result
	lastErr error
	counted *lldpcli.Result
	replay  replayCache
	// seen is each interface's last neighbour. lldpd drops the neighbour
	// of a dead link after its TTL (two minutes), just when "which switch
	// port is this cable in" matters most, so it is kept while the
	// interface's link is down and forgotten once the link is up again
	// without one.
	seen map[string]node.LLDPNeighbor
}

func init() {
	registerSource(node.SourceLLDP, "Switch port of each RoCE interface (lldpd).", newLLDPSource)
}

func newLLDPSource(r *Reader) source {
	return &lldpSource{r: r, seen: map[string]node.LLDPNeighbor{}}
}

func (*lldpSource) close() error { return nil }

func (c *lldpSource) read(sc *scan) (func(*node.Snapshot), error) {
	if c.r.copyWithoutCaptures() {
		return nil, errors.Join(ErrNoData, errNoKernel)
	}
	ifaces, err := sc.ethernetInterfaces()
	if err != nil {
		return nil, err
	}
	if len(ifaces) == 0 {
		// No RoCE interface: lldpcli is not run for nothing.
		return nil, errors.Join(ErrNoData, ErrNotApplicable, errors.New("no Ethernet RDMA interface"))
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
	if c.counted != c.last {
		c.counted = c.last
		// A neighbour that could not be read costs its own port only; it is
		// counted and logged (once per interface) when it is on a RoCE
		// interface, or on one that cannot be told.
		for _, s := range c.last.Skipped {
			if s.Interface == "" || want[s.Interface] {
				sc.readError(node.SourceLLDP, "LLDP neighbour of "+node.ValidUTF8(s.Interface), s.Err)
			}
		}
	}
	out := map[string]*node.LLDPNeighbor{}
	for i := range c.last.Neighbors {
		n := c.last.Neighbors[i]
		if want[n.Interface] {
			out[n.Interface] = &n
		}
	}
	for _, iface := range ifaces {
		if n := out[iface]; n != nil {
			c.seen[iface] = *n
			continue
		}
		last, ok := c.seen[iface]
		switch {
		case !ok:
		case c.linkDown(iface):
			last.LinkDown = true
			out[iface] = &last
		default:
			delete(c.seen, iface)
		}
	}
	forgetGone(c.seen, ifaces)
	// lldpd running with no neighbour on a RoCE interface is a reading
	// (the switch sends no LLDP, or the NIC firmware eats it), not an
	// absent source: the map is empty, not nil.
	return func(sn *node.Snapshot) { sn.LLDP = out }, nil
}

// linkDown reports whether the interface's operstate says its link is
// down; an unreadable operstate is not taken for a down link.
func (c *lldpSource) linkDown(iface string) bool {
	st, err := readSysfsFile(c.r.fs, c.r.sys("class", "net", iface, "operstate"))
	if err != nil {
		return false
	}
	switch strings.TrimSpace(st) {
	case "down", "lowerlayerdown", "notpresent":
		return true
	}
	return false
}

func (c *lldpSource) query() (*lldpcli.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.r.opts.Timeout)
	defer cancel()
	return lldpcli.Query(ctx, c.r.opts.LLDPCli, c.r.opts.LLDPSocket)
}

func (c *lldpSource) loadReplay() (*lldpcli.Result, error) {
	path := filepath.Join(c.r.opts.ReplayDir, lldpReplayFile)
	v, err := c.replay.load(path, func(f io.Reader) (any, error) { return lldpcli.Parse(f) })
	if err != nil {
		return nil, err
	}
	return v.(*lldpcli.Result), nil
}
