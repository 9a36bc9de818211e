package reader

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/nicstats"
	"github.com/roce-exporter/roce_exporter/internal/nlconn"
	"github.com/roce-exporter/roce_exporter/node"
)

// moduleReader yields a module's memory, from the kernel or a capture.
type moduleReader interface {
	module(iface string) (*node.ModuleEEPROM, error)
	close() error
}

// transceiverSource reads the pluggable module of each Ethernet interface.
// A module read is a string of slow I2C transactions through the NIC's
// firmware, so each module is read once per refresh interval and its last
// reading is reused in between.
type transceiverSource struct {
	r     *Reader
	src   moduleReader
	cache map[string]*moduleCache
}

type moduleCache struct {
	at time.Time
	t  *node.Transceiver // nil: no readable module
}

func init() {
	registerSource(node.SourceTransceiver, "Optics: temperature, lane power, limits.", newTransceiverSource)
}

func newTransceiverSource(r *Reader) source {
	s := &transceiverSource{r: r, cache: map[string]*moduleCache{}}
	if r.opts.ReplayDir != "" {
		s.src = &replayModules{dir: r.opts.ReplayDir}
	} else {
		s.src = &liveModules{nl: r.kernel.ethtoolNetlink, ioctl: r.kernel.ethtoolIoctl}
	}
	return s
}

func (s *transceiverSource) close() error { return s.src.close() }

func (s *transceiverSource) read(sc *scan) (func(*node.Snapshot), error) {
	ifaces, err := sc.capturedInterfaces("module")
	if err != nil {
		return nil, err
	}
	out := map[string]*node.Transceiver{}
	for _, iface := range ifaces {
		c := s.cache[iface]
		if c == nil || s.r.due(c.at, sc.Time) {
			c = &moduleCache{at: sc.Time, t: s.readModule(sc, iface)}
			s.cache[iface] = c
		}
		if c.t != nil {
			out[iface] = c.t
		}
	}
	forgetGone(s.cache, ifaces)
	if len(out) == 0 {
		return nil, errors.Join(ErrNoData, errors.New("no interface with a readable module"))
	}
	return func(sn *node.Snapshot) { sn.Transceivers = out }, nil
}

func (s *transceiverSource) readModule(sc *scan, iface string) *node.Transceiver {
	m, err := s.src.module(iface)
	if err != nil {
		switch {
		case !noModule(err):
			sc.readError(node.SourceTransceiver, iface, err)
		case isErrno(err, syscall.EIO) && s.linkUp(iface):
			// mlx5 answers EIO for an empty cage and for a module it
			// failed to read alike; a port whose link is up has a module
			// or a cable in its cage, so here the read failed.
			sc.readError(node.SourceTransceiver, iface, fmt.Errorf("module unreadable although the link is up: %w", err))
		default:
			s.r.logger.Debug("no readable module", "interface", iface, "err", err)
		}
		return nil
	}
	t, err := node.DecodeModule(m)
	if err != nil {
		if errors.Is(err, node.ErrModuleUnsupported) {
			s.r.logger.Debug("module not decoded", "interface", iface, "err", err)
		} else {
			sc.readError(node.SourceTransceiver, iface, err)
		}
		return nil
	}
	t.Interface = iface
	return t
}

// noModule reports the errors of a port that may have no readable module:
// no module access in the driver, an empty cage (mlx5 answers EIO, but see
// readModule), a netdev that went away, a missing capture. A capture says
// so in ethtool's words ("Cannot get Module EEPROM data: Input/output
// error").
func noModule(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EOPNOTSUPP, syscall.EIO, syscall.ENODEV, syscall.EINVAL} {
		if isErrno(err, errno) {
			return true
		}
	}
	return errors.Is(err, fs.ErrNotExist)
}

// isErrno reports err being errno, from the kernel or in a capture's words.
func isErrno(err error, errno syscall.Errno) bool {
	return errors.Is(err, errno) || capturedErrno(err) == errno
}

// capturedErrno is the errno whose text ethtool printed in a capture's
// failed read, 0 for none.
func capturedErrno(err error) syscall.Errno {
	var re *node.ModuleReadError
	if !errors.As(err, &re) || re.Reason == "" {
		return 0
	}
	for _, errno := range []syscall.Errno{syscall.EOPNOTSUPP, syscall.EIO, syscall.ENODEV, syscall.EINVAL} {
		if strings.EqualFold(re.Reason, errno.Error()) {
			return errno
		}
	}
	return 0
}

// linkUp reports whether the interface's carrier is up; false when it
// cannot be read (an interface that is down reads EINVAL).
func (s *transceiverSource) linkUp(iface string) bool {
	v, err := readSysfsFile(s.r.fs, s.r.sys("class", "net", iface, "carrier"))
	return err == nil && strings.TrimSpace(v) == "1"
}

// replayModules reads `ethtool -m <if> hex on` captures (<if>.module.txt;
// several dumps, each after its command line, for the pages).
type replayModules struct {
	dir   string
	cache replayCache
}

func (r *replayModules) module(iface string) (*node.ModuleEEPROM, error) {
	v, err := r.cache.load(filepath.Join(r.dir, iface+".module.txt"), func(f io.Reader) (any, error) {
		return node.ParseModuleHex(f)
	})
	if err != nil {
		return nil, err
	}
	return v.(*node.ModuleEEPROM), nil
}

func (r *replayModules) close() error { return nil }

// liveModules reads modules over ethtool netlink (MODULE_EEPROM_GET,
// Linux 5.13+: any page, any bank) and falls back to the
// ETHTOOL_GMODULEEEPROM ioctl (the flat first pages only) where netlink
// has no module access. Both sockets are the Reader's shared ones.
type liveModules struct {
	nl    netlinkModules
	ioctl *nicstats.Reader
}

// netlinkModules is the part of the ethtool netlink client this source
// uses.
type netlinkModules interface {
	ModuleEEPROM(ifname string, page, bank uint8, offset, length uint32) ([]byte, error)
}

func (l *liveModules) module(iface string) (*node.ModuleEEPROM, error) {
	m, err := readModulePages(l.nl, iface)
	if err == nil || !noNetlinkModules(err) {
		return m, err
	}
	b, err := l.ioctl.ModuleEEPROM(iface)
	if err != nil {
		return nil, err
	}
	return node.ModuleFromFlat(b), nil
}

// noNetlinkModules reports the errors after which the ioctl may still read
// the module: the driver has no netlink module access, or the kernel
// (before 5.13) no MODULE_EEPROM_GET (both EOPNOTSUPP), or there is no
// ethtool netlink socket (no family before 5.6, or a failed dial waiting
// for its back-off).
func noNetlinkModules(err error) bool {
	return errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, nlconn.ErrNotDialled)
}

// readModulePages reads the lower page and upper page 00h, then the pages
// the module's type and memory model say exist: 03h (thresholds) of a
// paged SFF-8636 module; 01h (what is monitored), 02h (thresholds) and
// 11h bank 0 (lanes) of a paged CMIS one. An optional page the module
// refuses is left out, not an error.
func readModulePages(nl netlinkModules, iface string) (*node.ModuleEEPROM, error) {
	lower, err := nl.ModuleEEPROM(iface, 0, 0, 0, node.ModulePageLen)
	if err != nil {
		return nil, err
	}
	if len(lower) < node.ModulePageLen {
		// mlx5 before Linux d1c94bc5b90c answered a failed read with
		// success and no data (and a netlink warning ethtool prints).
		return nil, fmt.Errorf("%w: the driver returned %d of the %d bytes of the lower page", node.ErrModuleReadFailed, len(lower), node.ModulePageLen)
	}
	m := &node.ModuleEEPROM{Lower: lower}
	up, err := nl.ModuleEEPROM(iface, 0, 0, node.ModulePageLen, node.ModulePageLen)
	if err != nil {
		return nil, err
	}
	m.SetPage(0, 0, up)
	var pages []uint8
	switch lower[0] {
	case node.ModuleIDQSFP, node.ModuleIDQSFPPlus, node.ModuleIDQSFP28:
		if lower[2]&0x04 == 0 {
			pages = []uint8{3}
		}
	case node.ModuleIDQSFPDD, node.ModuleIDOSFP, node.ModuleIDQSFPCMIS:
		if lower[2]&0x80 == 0 {
			pages = []uint8{1, 2, 0x11}
		}
	}
	for _, pg := range pages {
		if b, err := nl.ModuleEEPROM(iface, pg, 0, node.ModulePageLen, node.ModulePageLen); err == nil {
			m.SetPage(pg, 0, b)
		}
	}
	return m, nil
}

// close leaves the shared sockets to the Reader.
func (l *liveModules) close() error { return nil }
