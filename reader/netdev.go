package reader

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/roce-exporter/roce_exporter/node"
)

// netdevSource reads /sys/class/net of the interfaces behind RDMA ports.
type netdevSource struct {
	r      *Reader
	attrs  *attrCache
	meta   map[string]*netdevMeta
	driver driverInfoSource
	// addrCapture holds the replay directory's ip-addr.txt, parsed once
	// for all interfaces instead of once per interface.
	addrCapture replayCache
}

// netdevMeta is the slow-changing part of an interface, refreshed with the
// topology rather than read every time.
type netdevMeta struct {
	dir                       string
	driver, firmware, busInfo string
	addresses                 []netip.Prefix
	addressesKnown            bool
	at                        time.Time
}

func init() {
	registerSource(node.SourceNetdev, "Interfaces behind RDMA ports: MTU, state, speed.", newNetdevSource)
}

func newNetdevSource(r *Reader) source {
	return &netdevSource{
		r:      r,
		attrs:  newAttrCache(r.fs),
		meta:   map[string]*netdevMeta{},
		driver: newDriverInfoSource(r),
	}
}

func (c *netdevSource) close() error {
	c.attrs.closeAll()
	return c.driver.close()
}

func (c *netdevSource) read(sc *scan) (func(*node.Snapshot), error) {
	c.attrs.begin()
	defer c.attrs.sweep()
	targets, err := sc.interfaces()
	if err != nil {
		return nil, err
	}
	if len(targets) == 0 {
		clear(c.meta)
		return nil, errors.Join(ErrNoData, errors.New("no interfaces backing RDMA ports"))
	}
	ifaces := make(map[string]*node.Interface, len(targets))
	for _, t := range targets {
		if i := c.readInterface(sc, t); i != nil {
			ifaces[t.name] = i
		}
	}
	for n := range c.meta {
		if ifaces[n] == nil {
			delete(c.meta, n)
		}
	}
	return func(sn *node.Snapshot) { sn.Interfaces = ifaces }, nil
}

func (c *netdevSource) readInterface(sc *scan, t netdevTarget) *node.Interface {
	m := c.meta[t.name]
	dir := ""
	if m != nil {
		dir = m.dir
	} else {
		dir = c.r.sys("class", "net", t.name)
	}
	iface := &node.Interface{Name: t.name, RDMADevice: t.device, Port: t.port, SpeedMbps: -1}

	if v, err := c.attrs.readString(dir, "operstate"); err == nil {
		iface.OperState = node.CleanText(v)
	} else if isVanished(err) {
		return nil // interface removed mid-read
	} else {
		sc.readError(node.SourceNetdev, joinPath(dir, "operstate"), err)
	}

	if m == nil || c.r.due(m.at, sc.Time) {
		m = c.readMeta(t.name, dir, sc.Time)
		c.meta[t.name] = m
	}
	iface.Driver, iface.FirmwareVersion, iface.BusInfo = m.driver, m.firmware, m.busInfo
	iface.Addresses, iface.AddressesKnown = m.addresses, m.addressesKnown

	if v, err := c.attrs.readUint(dir, "mtu"); err == nil {
		iface.MTU = int(min(v, 1<<31-1))
	} else if !isVanished(err) {
		sc.readError(node.SourceNetdev, joinPath(dir, "mtu"), err)
	}
	if v, err := c.attrs.readUint(dir, "carrier_changes"); err == nil {
		iface.CarrierChanges, iface.CarrierChangesKnown = v, true
	} else if !isVanished(err) {
		sc.readError(node.SourceNetdev, joinPath(dir, "carrier_changes"), err)
	}
	if v, err := c.attrs.readString(dir, "speed"); err == nil {
		// -1 (SPEED_UNKNOWN) and huge values mean "no link", not a speed.
		if mbps, perr := strconv.Atoi(v); perr == nil && mbps > 0 && mbps < 100_000_000 {
			iface.SpeedMbps = mbps
		} else if perr != nil {
			sc.readError(node.SourceNetdev, joinPath(dir, "speed"), perr)
		}
	} else if !isVanished(err) && !errors.Is(err, syscall.EINVAL) {
		// A down link reads EINVAL: expected, not an error.
		sc.readError(node.SourceNetdev, joinPath(dir, "speed"), err)
	}
	return iface
}

func (c *netdevSource) readMeta(name, dir string, now time.Time) *netdevMeta {
	m := &netdevMeta{at: now, dir: dir}
	if drv, err := c.r.fs.Readlink(joinPath(dir, "device", "driver")); err == nil {
		m.driver = filepath.Base(drv)
	}
	if dev, err := c.r.fs.Realpath(joinPath(dir, "device")); err == nil {
		m.busInfo = filepath.Base(dev)
	}
	if c.r.copyWithoutCaptures() {
		// A copied tree: the driver and bus of the sysfs links above are
		// all there is; the kernel's answer would be this machine's.
	} else if di, err := c.driver.info(name); err == nil {
		if di.Driver != "" {
			m.driver = di.Driver
		}
		if di.BusInfo != "" {
			m.busInfo = di.BusInfo
		}
		m.firmware = di.FirmwareVersion
	}
	m.driver, m.firmware, m.busInfo = node.CleanText(m.driver), node.CleanText(m.firmware), node.CleanText(m.busInfo)
	m.addresses, m.addressesKnown = c.addresses(name)
	return m
}

// addresses reads the interface's IP addresses: from ip-addr.txt in the
// replay directory when replaying a captured node, from the kernel when
// reading the live /sys, and not at all for a fixture without a capture
// (the host's own interfaces would be wrong).
func (c *netdevSource) addresses(name string) ([]netip.Prefix, bool) {
	if c.r.opts.ReplayDir != "" {
		all, err := c.addrCapture.load(filepath.Join(c.r.opts.ReplayDir, "ip-addr.txt"), func(f io.Reader) (any, error) {
			return parseIPAddr(bufio.NewScanner(f))
		})
		if err != nil {
			return nil, false
		}
		return all.(map[string][]netip.Prefix)[name], true
	}
	if !c.r.live() {
		return nil, false
	}
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, false
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return nil, false
	}
	var out []netip.Prefix
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p)
		}
	}
	return out, true
}
