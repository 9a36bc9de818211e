package reader

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/dcbnl"
	"github.com/roce-exporter/roce_exporter/node"
)

// dcbIEEE answers DCB IEEE queries from netlink or captures.
type dcbIEEE interface {
	ieee(iface string) (*dcbnl.IEEE, error)
	close() error
}

// dcbSource reads the DCB state of RoCE interfaces: PFC and the APP table
// over DCB netlink, and MLNX_OFED's per-priority ECN files.
type dcbSource struct {
	r   *Reader
	src dcbIEEE
	ecn map[string]*ecnState
}

func init() {
	registerSource(node.SourceDCB, "PFC, trust, DSCP→priority, ECN (DCB netlink).", newDCBSource)
}

func newDCBSource(r *Reader) source {
	c := &dcbSource{r: r, ecn: map[string]*ecnState{}}
	if r.opts.ReplayDir != "" {
		c.src = &replayDCB{dir: r.opts.ReplayDir}
	} else {
		c.src = &liveDCB{client: dcbnl.New(dcbnl.Config{Timeout: r.opts.Timeout})}
	}
	return c
}

func (c *dcbSource) close() error { return c.src.close() }

func (c *dcbSource) read(sc *scan) (func(*node.Snapshot), error) {
	ifaces, err := sc.ethernetInterfaces()
	if err != nil {
		return nil, err
	}
	states := map[string]*node.DCBState{}
	for _, iface := range ifaces {
		st := &node.DCBState{Interface: iface}
		have := false
		var ieee *dcbnl.IEEE
		err := errNoKernel
		if !c.r.copyWithoutCaptures() {
			ieee, err = c.src.ieee(iface)
		}
		switch {
		case errors.Is(err, errNoKernel):
			// A copied sysfs tree without captures: its ECN files are
			// still read below, PFC and trust are unknown.
		case err == nil:
			have = true
			if ieee.PFC != nil {
				st.PFCKnown = true
				st.PFCCap = int(ieee.PFC.Cap)
				st.PFCEnabled = ieee.PFC.Enabled
				st.PFCDelay = int(ieee.PFC.Delay)
			}
			if e := ieee.ETS; e != nil {
				ets := &node.ETSState{PrioTC: e.PrioTC, BandwidthPercent: e.TCTxBW}
				for tc, tsa := range e.TSA {
					ets.TSA[tc] = dcbnl.TSAName(tsa)
				}
				st.ETS = ets
			}
			st.Trust = ieee.Trust()
			var m node.DSCPMap
			n := 0
			ieee.DSCPPrio(func(d, p uint8) { m.Set(d, p); n++ })
			if n > 0 {
				st.DSCP = &m
			}
			if b := ieee.Buffer; b != nil {
				st.Buffer = &node.ReceiveBuffer{Size: b.Size, TotalSize: b.TotalSize, PriorityBuffer: b.Prio2Buffer}
			}
		case errors.Is(err, dcbnl.ErrNotSupported), errors.Is(err, fs.ErrNotExist), errors.Is(err, dcbnl.ErrNoDevice):
			// veth, VFs/SFs (mlx5 registers dcbnl on PFs only), or no capture.
			c.r.logger.Debug("no DCB state", "interface", iface, "err", err)
		default:
			sc.readError(node.SourceDCB, iface, err)
		}
		ecn := c.readECN(sc, iface)
		if ecn.values != nil {
			st.ECN = ecn.values
			have = true
		}
		if ecn.cnpDSCP != nil || ecn.cnpPrio != nil {
			st.CNPDSCP, st.CNPPrio = ecn.cnpDSCP, ecn.cnpPrio
		}
		if ecn.dcqcn != nil {
			st.DCQCN = ecn.dcqcn
			have = true
		}
		if have {
			states[iface] = st
		}
	}
	forgetGone(c.ecn, ifaces)
	if len(states) == 0 {
		return nil, errors.Join(ErrNoData, errors.New("no interface reports DCB state"))
	}
	return func(sn *node.Snapshot) { sn.DCB = states }, nil
}

// errNoKernel stands for a kernel query not made: see
// Reader.copyWithoutCaptures.
var errNoKernel = errors.New("not asking this machine's kernel about a copied sysfs tree")

type ecnState struct {
	at     time.Time
	values map[string]*node.ECNSetting // nil when the driver has no ecn/ files
	// cnpDSCP and cnpPrio are roce_np/cnp_dscp and cnp_802p_prio (MLNX_OFED).
	cnpDSCP, cnpPrio *int
	// dcqcn are the congestion control parameters (dcqcn.go).
	dcqcn *node.DCQCNParams
}

// readECN reads MLNX_OFED's /sys/class/net/<if>/ecn/roce_{np,rp}/enable/<p>.
// Upstream mlx5 has no such files; then the health checks infer ECN from
// counters. The files are settings, not readings, so they are read on the
// refresh interval (16 files per interface) and kept in between.
func (c *dcbSource) readECN(sc *scan, iface string) *ecnState {
	cached, ok := c.ecn[iface]
	if !ok || c.r.due(cached.at, sc.Time) {
		cached = c.loadECN(sc, iface)
		c.ecn[iface] = cached
	}
	return cached
}

func (c *dcbSource) loadECN(sc *scan, iface string) *ecnState {
	st := &ecnState{at: sc.Time}
	// The marking of the CNPs this NIC sends as notification point.
	np := c.r.sys("class", "net", iface, "ecn", "roce_np")
	st.cnpDSCP = c.readSmallInt(sc, joinPath(np, "cnp_dscp"), 63)
	st.cnpPrio = c.readSmallInt(sc, joinPath(np, "cnp_802p_prio"), 7)
	for _, role := range node.ECNRoles {
		dir := c.r.sys("class", "net", iface, "ecn", "roce_"+role, "enable")
		var setting node.ECNSetting
		found := false
		for p := 0; p < 8; p++ {
			path := joinPath(dir, strconv.Itoa(p))
			text, err := readSysfsFile(c.r.fs, path)
			if err != nil {
				if !isVanished(err) {
					sc.readError(node.SourceDCB, path, err)
				}
				continue
			}
			v, err := parseCounterAt(path, []byte(text))
			if err != nil {
				sc.readError(node.SourceDCB, path, err)
				continue
			}
			found = true
			setting.Enabled[p] = v != 0
			setting.Present[p] = true
		}
		if found {
			if st.values == nil {
				st.values = map[string]*node.ECNSetting{}
			}
			st.values[role] = &setting
		}
	}
	st.dcqcn = c.readDCQCN(sc, iface, st.cnpDSCP, st.cnpPrio)
	return st
}

// readSmallInt reads a setting file holding 0..max; nil when absent or invalid.
func (c *dcbSource) readSmallInt(sc *scan, path string, max uint64) *int {
	text, err := readSysfsFile(c.r.fs, path)
	if err != nil {
		if !isVanished(err) {
			sc.readError(node.SourceDCB, path, err)
		}
		return nil
	}
	v, err := parseCounterAt(path, []byte(text))
	if err == nil && v > max {
		err = fmt.Errorf("%s: %d is above %d", path, v, max)
	}
	if err != nil {
		sc.readError(node.SourceDCB, path, err)
		return nil
	}
	n := int(v)
	return &n
}

// liveDCB queries the kernel over one long-lived netlink socket.
type liveDCB struct{ client *dcbnl.Client }

func (l *liveDCB) ieee(iface string) (*dcbnl.IEEE, error) { return l.client.IEEE(iface) }

func (l *liveDCB) close() error { return l.client.Close() }

// replayDCB reads `dcb pfc/app show` or `mlnx_qos` captures.
type replayDCB struct {
	dir   string
	cache replayCache
}

func (r *replayDCB) ieee(iface string) (*dcbnl.IEEE, error) {
	v, err := r.cache.load(filepath.Join(r.dir, iface+".dcb.txt"), func(f io.Reader) (any, error) {
		ieee, err := dcbnl.ParseRecorded(f)
		if err != nil {
			return nil, err
		}
		return ieee, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*dcbnl.IEEE), nil
}

func (*replayDCB) close() error { return nil }
