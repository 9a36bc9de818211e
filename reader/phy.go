package reader

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"syscall"

	"github.com/roce-exporter/roce_exporter/internal/ethnl"
	"github.com/roce-exporter/roce_exporter/node"
)

// phyReader yields an interface's FEC and link state, from the kernel or
// from captures.
type phyReader interface {
	fec(iface string) (*node.PHY, error)
	link(iface string) (link bool, state, substate string, err error)
	close() error
}

// phySource reads the FEC statistics and the extended link-down state of
// Ethernet interfaces over ethtool netlink, every read: both are answered
// from the driver's memory, unlike module EEPROM.
type phySource struct {
	r   *Reader
	src phyReader
}

func init() { registerSource(node.SourcePHY, "FEC blocks and link-down reason.", newPHYSource) }

func newPHYSource(r *Reader) source {
	s := &phySource{r: r}
	if r.opts.ReplayDir != "" {
		s.src = &replayPHY{dir: r.opts.ReplayDir}
	} else {
		s.src = &livePHY{c: r.kernel.ethtoolNetlink}
	}
	return s
}

func (s *phySource) close() error { return s.src.close() }

func (s *phySource) read(sc *scan) (func(*node.Snapshot), error) {
	ifaces, err := sc.capturedInterfaces("FEC and link")
	if err != nil {
		return nil, err
	}
	out := map[string]*node.PHY{}
	for _, iface := range ifaces {
		p, err := s.src.fec(iface)
		if err != nil {
			if !absentErr(err) {
				sc.readError(node.SourcePHY, iface+" fec", err)
			}
			p = nil
		}
		link, st, sub, lerr := s.src.link(iface)
		if lerr != nil && !absentErr(lerr) {
			sc.readError(node.SourcePHY, iface+" link", lerr)
		}
		if p == nil && lerr != nil {
			continue
		}
		if p == nil {
			p = &node.PHY{}
		}
		p.Interface = iface
		if lerr == nil {
			p.LinkKnown, p.Link, p.ExtState, p.ExtSubstate = true, link, st, sub
		}
		out[iface] = p
	}
	if len(out) == 0 {
		return nil, errors.Join(ErrNoData, errors.New("no interface with FEC or link state"))
	}
	return func(sn *node.Snapshot) { sn.PHY = out }, nil
}

func absentErr(err error) bool {
	return errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENODEV) || errors.Is(err, fs.ErrNotExist) ||
		errors.Is(err, ethnl.ErrNoFamily) || errors.Is(err, errNoLinkLine)
}

var errNoLinkLine = errors.New("no \"Link detected\" line")

// replayPHY reads `ethtool -I --show-fec <if>` (<if>.fec.txt) and
// `ethtool <if>` (<if>.link.txt) captures.
type replayPHY struct {
	dir   string
	cache replayCache
}

func (r *replayPHY) fec(iface string) (*node.PHY, error) {
	v, err := r.cache.load(filepath.Join(r.dir, iface+".fec.txt"), func(f io.Reader) (any, error) {
		return node.ParseShowFEC(f)
	})
	if err != nil {
		return nil, err
	}
	p := *v.(*node.PHY)
	return &p, nil
}

type linkLine struct {
	link            bool
	state, substate string
}

func (r *replayPHY) link(iface string) (bool, string, string, error) {
	v, err := r.cache.load(filepath.Join(r.dir, iface+".link.txt"), func(f io.Reader) (any, error) {
		link, st, sub, ok, err := node.ParseLinkDetected(f)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errNoLinkLine
		}
		return linkLine{link, st, sub}, nil
	})
	if err != nil {
		return false, "", "", err
	}
	l := v.(linkLine)
	return l.link, l.state, l.substate, nil
}

func (r *replayPHY) close() error { return nil }

// livePHY asks the kernel over the shared ethtool netlink socket.
type livePHY struct{ c *ethnl.Client }

func (l *livePHY) fec(iface string) (*node.PHY, error) {
	f, err := l.c.FEC(iface)
	if err != nil {
		return nil, err
	}
	p := &node.PHY{FECMode: ethnl.FECModeName(f.ActiveLinkMode)}
	if f.Corrected.OK {
		p.FECCorrected = &node.FECCounter{Total: f.Corrected.Total, Lanes: f.Corrected.Lanes}
	}
	if f.Uncorrectable.OK {
		p.FECUncorrectable = &node.FECCounter{Total: f.Uncorrectable.Total, Lanes: f.Uncorrectable.Lanes}
	}
	return p, nil
}

func (l *livePHY) link(iface string) (bool, string, string, error) {
	ls, err := l.c.Linkstate(iface)
	if err != nil {
		return false, "", "", err
	}
	if !ls.LinkKnown {
		return false, "", "", errNoLinkLine
	}
	return ls.Link, node.LinkExtStateName(ls.ExtState), node.LinkExtSubstateName(ls.ExtState, ls.ExtSubstate), nil
}

// close leaves the shared socket to the Reader.
func (l *livePHY) close() error { return nil }
