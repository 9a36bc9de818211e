package collector

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"

	"github.com/safchain/ethtool"

	"github.com/roce-exporter/roce_exporter/internal/nicstats"
)

func init() {
	registerCollector("ethtool", "ethtool statistics of RoCE interfaces: PFC pause frames/duration per priority, pause storms, priority traffic and drops, PHY errors, 802.3x pause.",
		true, phaseSource, newEthtoolCollector)
}

var (
	globalPauseEnabledDesc = newGaugeDesc(namespace+"_global_pause_enabled",
		"1 if 802.3x link-level pause is enabled in that direction. It should be off on a PFC port: it pauses all traffic.",
		"interface", "direction")
)

// ethtoolSource yields one interface's statistics and pause settings,
// from the kernel or from captures.
type ethtoolSource interface {
	stats(iface string) (nicstats.Stats, error)
	pause(iface string) (*GlobalPause, error)
	close() error
}

type ethtoolCollector struct {
	cfg      *Config
	logger   *slog.Logger
	src      ethtoolSource
	mappings map[string]*ifaceMapping
	descs    map[nicstats.Family]*Desc
	rawDescs map[string]*Desc
}

// ifaceMapping caches the classification of an interface's string table;
// it is rebuilt only when the driver's table changes (PFC toggled, channels
// changed).
type ifaceMapping struct {
	m   *nicstats.Mapping
	raw []rawStat
}

type rawStat struct {
	index int
	desc  *Desc
}

func newEthtoolCollector(cfg *Config, logger *slog.Logger) (Collector, error) {
	c := &ethtoolCollector{
		cfg: cfg, logger: logger,
		mappings: map[string]*ifaceMapping{},
		descs:    map[nicstats.Family]*Desc{},
		rawDescs: map[string]*Desc{},
	}
	if cfg.Ethtool.ReplayDir != "" {
		c.src = &replayEthtool{dir: cfg.Ethtool.ReplayDir}
	} else {
		c.src = &liveEthtool{}
	}
	return c, nil
}

func (c *ethtoolCollector) Close() error { return c.src.close() }

func (c *ethtoolCollector) familyDesc(f nicstats.Family) *Desc {
	d, ok := c.descs[f]
	if !ok {
		d = newCounterDesc(f.MetricName(), f.Help(), append([]string{"interface"}, f.LabelNames()...)...)
		c.descs[f] = d
	}
	return d
}

// ethernetInterfaces names the scrape's interfaces that are not IPoIB:
// IPoIB has no PFC or pause statistics and no DCB.
func ethernetInterfaces(s *Scrape) ([]string, error) {
	targets, err := s.Interfaces()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(targets))
	for _, t := range targets {
		if !t.ipoib {
			out = append(out, t.name)
		}
	}
	return out, nil
}

func (c *ethtoolCollector) Update(s *Scrape, out *Sink) error {
	ifaces, err := ethernetInterfaces(s)
	if err != nil {
		return err
	}
	stats := map[string]*EthtoolStats{}
	for _, iface := range ifaces {
		if st := c.updateInterface(s, iface, out); st != nil {
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
		return errors.Join(ErrNoData, errors.New("no interface with ethtool statistics"))
	}
	s.update(func(sn *Snapshot) { sn.Ethtool = stats })
	return nil
}

func (c *ethtoolCollector) updateInterface(s *Scrape, iface string, out *Sink) *EthtoolStats {
	st, err := c.src.stats(iface)
	if err != nil {
		switch {
		case errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENODEV):
			// No ethtool stats on this driver, or the interface is gone.
			c.logger.Debug("no ethtool statistics", "interface", iface, "err", err)
		default:
			s.readError("ethtool", iface, err)
		}
		return nil
	}
	im := c.mappings[iface]
	if im == nil || !im.m.Matches(st.Names) {
		im = c.buildMapping(st.Names)
		c.mappings[iface] = im
		for _, d := range im.m.Duplicates() {
			c.logger.Debug("ethtool stat maps to a series already fed by another name", "interface", iface, "stat", d.Raw, "kept", d.KeptRaw)
		}
	}
	result := &EthtoolStats{Interface: iface, Values: make([]EthtoolValue, 0, len(im.m.Entries()))}
	labels := make([]string, 0, 4)
	err = im.m.Each(st.Values, func(e nicstats.Entry, v uint64) {
		labels = append(labels[:0], iface)
		labels = append(labels, e.LabelValues...)
		out.emit(c.familyDesc(e.Family), float64(v)*e.Family.Scale(), labels...)
		label := e.Reason
		if e.Severity != "" {
			label = e.Severity
		}
		result.Values = append(result.Values, EthtoolValue{Family: e.Family.String(), Direction: e.Direction, Priority: e.Priority, Label: label, Value: v})
	})
	if err != nil {
		s.readError("ethtool", iface, err)
		return nil
	}
	for _, r := range im.raw {
		out.emit(r.desc, float64(st.Values[r.index]), iface)
	}
	if p, err := c.src.pause(iface); err == nil {
		result.GlobalPause = p
		out.emit(globalPauseEnabledDesc, boolFloat(p.RX), iface, "rx")
		out.emit(globalPauseEnabledDesc, boolFloat(p.TX), iface, "tx")
	} else if !errors.Is(err, syscall.EOPNOTSUPP) && !errors.Is(err, fs.ErrNotExist) {
		s.readError("ethtool", iface+" pause", err)
	}
	return result
}

// buildMapping classifies a string table and picks the raw stats that
// --collector.ethtool.raw-include asks for (off by default: a ConnectX can
// have thousands, which would swamp Prometheus).
func (c *ethtoolCollector) buildMapping(names []string) *ifaceMapping {
	im := &ifaceMapping{m: nicstats.NewMapping(names)}
	if c.cfg.Ethtool.RawInclude == nil {
		return im
	}
	taken := map[string]bool{}
	for i, n := range names {
		if !c.cfg.Ethtool.RawInclude.MatchString(n) {
			continue
		}
		metric := namespace + "_ethtool_" + sanitizeName(n)
		if taken[metric] {
			continue // two raw names sanitise to one metric: keep the first
		}
		taken[metric] = true
		d, ok := c.rawDescs[metric]
		if !ok {
			d = newDesc(metric, "Raw ethtool statistic (selected by --collector.ethtool.raw-include).", typeUntyped, "interface")
			c.rawDescs[metric] = d
		}
		im.raw = append(im.raw, rawStat{index: i, desc: d})
	}
	return im
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// liveEthtool reads the kernel through long-lived ioctl sockets: statistics
// with nicstats.Reader, which keeps each interface's string table between
// scrapes (github.com/safchain/ethtool's StatsWithBuffer builds a map of
// every name on every call: thousands of strings per ConnectX port per
// scrape), and pause settings with safchain/ethtool.
type liveEthtool struct {
	mu       sync.Mutex
	reader   *nicstats.Reader
	handle   *ethtool.Ethtool
	dialFail error
}

func (l *liveEthtool) open() error {
	if l.reader == nil && l.dialFail == nil {
		l.reader, l.dialFail = nicstats.NewReader()
		if l.dialFail == nil {
			if l.handle, l.dialFail = ethtool.NewEthtool(); l.dialFail != nil {
				l.reader.Close()
				l.reader = nil
			}
		}
	}
	return l.dialFail
}

func (l *liveEthtool) stats(iface string) (nicstats.Stats, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.open(); err != nil {
		return nicstats.Stats{}, err
	}
	return l.reader.Stats(iface)
}

func (l *liveEthtool) forget(iface string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reader != nil {
		l.reader.Forget(iface)
	}
}

func (l *liveEthtool) pause(iface string) (*GlobalPause, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.open(); err != nil {
		return nil, err
	}
	p, err := l.handle.GetPause(iface)
	if err != nil {
		return nil, err
	}
	return &GlobalPause{Autoneg: p.Autoneg != 0, RX: p.RxPause != 0, TX: p.TxPause != 0}, nil
}

func (l *liveEthtool) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handle != nil {
		l.handle.Close()
		l.handle = nil
	}
	if l.reader != nil {
		l.reader.Close()
		l.reader = nil
	}
	return nil
}

// replayEthtool reads `ethtool -S` and `ethtool -a` captures.
type replayEthtool struct {
	dir   string
	cache replayCache
}

func (r *replayEthtool) stats(iface string) (nicstats.Stats, error) {
	v, err := r.cache.load(filepath.Join(r.dir, iface+".txt"), func(f *os.File) (any, error) {
		st, err := nicstats.ParseStatistics(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name(), err)
		}
		return st, nil
	})
	if err != nil {
		return nicstats.Stats{}, err
	}
	return v.(nicstats.Stats), nil
}

func (r *replayEthtool) pause(iface string) (*GlobalPause, error) {
	v, err := r.cache.load(filepath.Join(r.dir, iface+".pause.txt"), func(f *os.File) (any, error) {
		p, err := nicstats.ParsePause(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name(), err)
		}
		return &GlobalPause{Autoneg: p.Autoneg, RX: p.RX, TX: p.TX}, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*GlobalPause), nil
}

func (r *replayEthtool) close() error { return nil }
