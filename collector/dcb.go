package collector

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/dcbnl"
)

func init() {
	registerCollector("dcb", "Data center bridging of RoCE interfaces over DCB netlink: PFC per priority, trust mode (DSCP/PCP), and MLNX_OFED per-priority ECN.",
		true, phaseSource, newDCBCollector)
}

var (
	pfcEnabledDesc = newGaugeDesc(namespace+"_pfc_enabled",
		"1 if priority flow control is enabled on the priority (IEEE 802.1Qbb bitmap from DCB netlink).",
		"interface", "priority")
	trustDesc = newGaugeDesc(namespace+"_dcb_trust_info",
		"QoS trust mode: dscp when the DCB app table maps DSCP values, else pcp; value is always 1.",
		"interface", "trust")
	ecnEnabledDesc = newGaugeDesc(namespace+"_ecn_enabled",
		"1 if DCQCN/ECN is enabled for the priority in that role (np = notification point, rp = reaction point). Only where the driver exposes it (MLNX_OFED).",
		"interface", "priority", "role")
)

// dcbSource answers DCB IEEE queries from netlink or captures.
type dcbSource interface {
	ieee(iface string) (*dcbnl.IEEE, error)
	close() error
}

type dcbCollector struct {
	cfg    *Config
	logger *slog.Logger
	src    dcbSource
	ecn    map[string]*ecnState
}

func newDCBCollector(cfg *Config, logger *slog.Logger) (Collector, error) {
	c := &dcbCollector{cfg: cfg, logger: logger, ecn: map[string]*ecnState{}}
	if cfg.Ethtool.ReplayDir != "" {
		c.src = &replayDCB{dir: cfg.Ethtool.ReplayDir}
	} else {
		c.src = &liveDCB{timeout: cfg.Timeout}
	}
	return c, nil
}

func (c *dcbCollector) Close() error { return c.src.close() }

func (c *dcbCollector) Update(s *Scrape, out *Sink) error {
	ifaces, err := ethernetInterfaces(s)
	if err != nil {
		return err
	}
	states := map[string]*DCBState{}
	for _, iface := range ifaces {
		st := &DCBState{Interface: iface}
		have := false
		ieee, err := c.src.ieee(iface)
		switch {
		case err == nil:
			have = true
			if ieee.PFC != nil {
				st.PFCCap = int(ieee.PFC.Cap)
				st.PFCEnabled = ieee.PFC.Enabled
				for p := 0; p < 8; p++ {
					out.emit(pfcEnabledDesc, boolFloat(ieee.PFC.Enabled[p]), iface, strconv.Itoa(p))
				}
			}
			st.Trust = ieee.Trust()
			out.emit(trustDesc, 1, iface, st.Trust)
		case errors.Is(err, dcbnl.ErrNotSupported), errors.Is(err, fs.ErrNotExist), errors.Is(err, dcbnl.ErrNoDevice):
			// veth, VFs/SFs (mlx5 registers dcbnl on PFs only), or no capture.
			c.logger.Debug("no DCB state", "interface", iface, "err", err)
		default:
			s.readError("dcb", iface, err)
		}
		if ecn := c.readECN(s, iface, out); ecn != nil {
			st.ECN = ecn
			have = true
		}
		if have {
			states[iface] = st
		}
	}
	for iface := range c.ecn {
		if !slices.Contains(ifaces, iface) {
			delete(c.ecn, iface)
		}
	}
	if len(states) == 0 {
		return errors.Join(ErrNoData, errors.New("no interface reports DCB state"))
	}
	s.update(func(sn *Snapshot) { sn.DCB = states })
	return nil
}

// readECN reports MLNX_OFED's /sys/class/net/<if>/ecn/roce_{np,rp}/enable/<p>.
// Upstream mlx5 has no such files; then ECN is inferred from counters by
// the health checks. The files are settings, not readings, so they are
// read on the refresh interval (16 files per interface) and reported from
// the cache in between.
func (c *dcbCollector) readECN(s *Scrape, iface string, out *Sink) map[string]*[8]bool {
	cached, ok := c.ecn[iface]
	if !ok || c.cfg.due(cached.at, s.Time) {
		cached = c.loadECN(s, iface)
		c.ecn[iface] = cached
	}
	for i, role := range ecnRoles {
		v := cached.values[role] // non-nil wherever present[i] has a priority
		for p, ok := range cached.present[i] {
			if ok {
				out.emit(ecnEnabledDesc, boolFloat(v[p]), iface, strconv.Itoa(p), role)
			}
		}
	}
	return cached.values
}

type ecnState struct {
	at      time.Time
	values  map[string]*[8]bool // nil when the driver has no ecn/ files
	present [2][8]bool
}

func (c *dcbCollector) loadECN(s *Scrape, iface string) *ecnState {
	st := &ecnState{at: s.Time}
	for i, role := range ecnRoles {
		dir := c.cfg.sys("class", "net", iface, "ecn", "roce_"+role, "enable")
		var enabled [8]bool
		found := false
		for p := 0; p < 8; p++ {
			path := joinPath(dir, strconv.Itoa(p))
			text, err := readSysfsFile(c.cfg.fs, path)
			if err != nil {
				if !isVanished(err) {
					s.readError("dcb", path, err)
				}
				continue
			}
			v, err := parseSysfsUint(path, []byte(text))
			if err != nil {
				s.readError("dcb", path, err)
				continue
			}
			found = true
			enabled[p] = v != 0
			st.present[i][p] = true
		}
		if found {
			if st.values == nil {
				st.values = map[string]*[8]bool{}
			}
			st.values[role] = &enabled
		}
	}
	return st
}

var ecnRoles = [2]string{"np", "rp"}

// liveDCB queries the kernel over one long-lived netlink socket.
type liveDCB struct {
	timeout time.Duration
	mu      sync.Mutex
	client  *dcbnl.Client
}

func (l *liveDCB) ieee(iface string) (*dcbnl.IEEE, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.client == nil {
		c, err := dcbnl.DialConfig(dcbnl.Config{Timeout: l.timeout})
		if err != nil {
			return nil, err
		}
		l.client = c
	}
	return l.client.IEEE(iface)
}

func (l *liveDCB) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.client != nil {
		err := l.client.Close()
		l.client = nil
		return err
	}
	return nil
}

// replayDCB reads `dcb pfc/app show` or `mlnx_qos` captures.
type replayDCB struct {
	dir   string
	cache replayCache
}

func (r *replayDCB) ieee(iface string) (*dcbnl.IEEE, error) {
	v, err := r.cache.load(filepath.Join(r.dir, iface+".dcb.txt"), func(f *os.File) (any, error) {
		ieee, err := dcbnl.ParseRecorded(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name(), err)
		}
		return ieee, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*dcbnl.IEEE), nil
}

func (*replayDCB) close() error { return nil }
