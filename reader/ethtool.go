package reader

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/roce-exporter/roce_exporter/internal/nicstats"
	"github.com/roce-exporter/roce_exporter/node"
)

// ethtoolStats yields one interface's statistics and pause settings, from
// the kernel or from captures.
type ethtoolStats interface {
	stats(iface string) (nicstats.Stats, error)
	pause(iface string) (*node.GlobalPause, error)
	close() error
}

// ethtoolSource reads the ethtool statistics of RoCE interfaces and maps
// the drivers' names onto driver-neutral families.
type ethtoolSource struct {
	r        *Reader
	src      ethtoolStats
	mappings map[string]*ifaceMapping
}

// ifaceMapping caches the classification of an interface's string table;
// it is rebuilt only when the driver's table changes (PFC toggled, channels
// changed).
type ifaceMapping struct {
	m *nicstats.Mapping
	// raw are the indices of the statistics kept under their raw names.
	raw []int
}

func init() {
	registerSource(node.SourceEthtool, "PFC pause, priority traffic and drops, PHY errors.", newEthtoolSource)
}

func newEthtoolSource(r *Reader) source {
	c := &ethtoolSource{r: r, mappings: map[string]*ifaceMapping{}}
	if r.opts.ReplayDir != "" {
		c.src = &replayEthtool{dir: r.opts.ReplayDir}
	} else {
		c.src = &liveEthtool{h: r.kernel.ethtoolIoctl}
	}
	return c
}

func (c *ethtoolSource) close() error { return c.src.close() }

func (c *ethtoolSource) read(sc *scan) (func(*node.Snapshot), error) {
	ifaces, err := sc.capturedInterfaces("ethtool")
	if err != nil {
		return nil, err
	}
	stats := map[string]*node.EthtoolStats{}
	for _, iface := range ifaces {
		if st := c.readInterface(sc, iface); st != nil {
			stats[iface] = st
		}
	}
	for iface := range c.mappings {
		if !slices.Contains(ifaces, iface) {
			delete(c.mappings, iface)
			if f, ok := c.src.(interface{ forget(string) }); ok {
				f.forget(iface)
			}
		}
	}
	if len(stats) == 0 {
		return nil, errors.Join(ErrNoData, errors.New("no interface with ethtool statistics"))
	}
	return func(sn *node.Snapshot) { sn.Ethtool = stats }, nil
}

func (c *ethtoolSource) readInterface(sc *scan, iface string) *node.EthtoolStats {
	st, err := c.src.stats(iface)
	if err != nil {
		switch {
		case errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENODEV):
			// No ethtool stats on this driver, or the interface is gone.
			c.r.logger.Debug("no ethtool statistics", "interface", iface, "err", err)
		default:
			sc.readError(node.SourceEthtool, iface, err)
		}
		return nil
	}
	im := c.mappings[iface]
	if im == nil || !im.m.Matches(st.Names) {
		im = c.buildMapping(st.Names)
		c.mappings[iface] = im
		for _, d := range im.m.Duplicates() {
			c.r.logger.Debug("ethtool stat maps to a series already fed by another name", "interface", iface, "stat", d.Raw, "kept", d.KeptRaw)
		}
	}
	result := &node.EthtoolStats{Interface: iface, Values: make([]node.EthtoolValue, 0, len(im.m.Entries()))}
	err = im.m.Each(st.Values, func(e nicstats.Entry, v uint64) {
		result.Values = append(result.Values, node.EthtoolValue{Family: e.Family, Direction: e.Direction, Priority: e.Priority, Label: e.Label, Value: v})
	})
	if err != nil {
		sc.readError(node.SourceEthtool, iface, err)
		return nil
	}
	result.Values = node.ResolveCoSDiscards(result.Values)
	for _, i := range im.raw {
		result.Raw = append(result.Raw, node.Counter{Name: st.Names[i], Value: st.Values[i]})
	}
	if p, err := c.src.pause(iface); err == nil {
		result.GlobalPause = p
	} else if !errors.Is(err, syscall.EOPNOTSUPP) && !errors.Is(err, fs.ErrNotExist) {
		sc.readError(node.SourceEthtool, iface+" pause", err)
	}
	return result
}

// buildMapping classifies a string table and picks the raw statistics that
// EthtoolRawInclude asks for (none by default: a ConnectX can have
// thousands, which would swamp Prometheus).
func (c *ethtoolSource) buildMapping(names []string) *ifaceMapping {
	im := &ifaceMapping{m: nicstats.NewMapping(names)}
	if re := c.r.opts.EthtoolRawInclude; re != nil {
		for i, n := range names {
			if re.MatchString(n) {
				im.raw = append(im.raw, i)
			}
		}
	}
	return im
}

// liveEthtool reads the kernel through the shared ethtool ioctl socket:
// statistics with nicstats.Reader, which keeps each interface's string
// table between reads (github.com/safchain/ethtool's StatsWithBuffer built a
// map of every name on every call: thousands of strings per ConnectX
// port), and pause settings.
type liveEthtool struct{ h *nicstats.Reader }

func (l *liveEthtool) stats(iface string) (nicstats.Stats, error) { return l.h.Stats(iface) }

func (l *liveEthtool) forget(iface string) { l.h.Forget(iface) }

func (l *liveEthtool) pause(iface string) (*node.GlobalPause, error) {
	p, err := l.h.Pause(iface)
	if err != nil {
		return nil, err
	}
	return &node.GlobalPause{Autoneg: p.Autoneg, RX: p.RX, TX: p.TX}, nil
}

// close leaves the shared socket to the Reader.
func (l *liveEthtool) close() error { return nil }

// replayEthtool reads `ethtool -S` and `ethtool -a` captures.
type replayEthtool struct {
	dir   string
	cache replayCache
}

func (r *replayEthtool) stats(iface string) (nicstats.Stats, error) {
	v, err := r.cache.load(filepath.Join(r.dir, iface+".txt"), func(f io.Reader) (any, error) {
		st, err := nicstats.ParseStatistics(f)
		if err != nil {
			return nil, err
		}
		return st, nil
	})
	if err != nil {
		return nicstats.Stats{}, err
	}
	return v.(nicstats.Stats), nil
}

func (r *replayEthtool) pause(iface string) (*node.GlobalPause, error) {
	v, err := r.cache.load(filepath.Join(r.dir, iface+".pause.txt"), func(f io.Reader) (any, error) {
		p, err := nicstats.ParsePause(f)
		if err != nil {
			return nil, err
		}
		return &node.GlobalPause{Autoneg: p.Autoneg, RX: p.RX, TX: p.TX}, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*node.GlobalPause), nil
}

func (r *replayEthtool) close() error { return nil }
