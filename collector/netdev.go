package collector

import (
	"bufio"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

func init() {
	registerCollector("netdev", "Network interfaces backing RDMA ports (plus --collector.netdev.include): MTU, state, carrier changes, speed, driver.",
		true, phaseSource, newNetdevCollector)
}

var (
	interfaceInfoDesc = newGaugeDesc(namespace+"_interface_info",
		"Network interface metadata; value is always 1. device/port name the RDMA port it backs.",
		"interface", "device", "port", "driver", "firmware_version", "bus_info")
	interfaceMTUDesc = newGaugeDesc(namespace+"_interface_mtu_bytes",
		"Interface MTU.", "interface")
	interfaceUpDesc = newGaugeDesc(namespace+"_interface_up",
		"1 if the interface operstate is up, else 0.", "interface")
	interfaceCarrierChangesDesc = newCounterDesc(namespace+"_interface_carrier_changes_total",
		"Times the link carrier went up or down (link flaps).", "interface")
	interfaceSpeedDesc = newGaugeDesc(namespace+"_interface_speed_bytes_per_second",
		"Link speed. Absent while the link is down.", "interface")
)

type netdevCollector struct {
	cfg    *Config
	attrs  *attrCache
	meta   map[string]*netdevMeta
	driver driverInfoSource
	// addrCapture holds the replay directory's ip-addr.txt, parsed once
	// for all interfaces instead of once per interface.
	addrCapture replayCache
}

// netdevMeta is the slow-changing part of an interface, refreshed with the
// topology rather than read every scrape.
type netdevMeta struct {
	dir                       string
	driver, firmware, busInfo string
	addresses                 []netip.Prefix
	addressesKnown            bool
	at                        time.Time
}

func newNetdevCollector(cfg *Config, _ *slog.Logger) (Collector, error) {
	return &netdevCollector{
		cfg:    cfg,
		attrs:  newAttrCache(cfg.fs),
		meta:   map[string]*netdevMeta{},
		driver: newDriverInfoSource(cfg),
	}, nil
}

func (c *netdevCollector) Close() error {
	c.attrs.closeAll()
	return c.driver.close()
}

func (c *netdevCollector) Update(s *Scrape, out *Sink) error {
	c.attrs.begin()
	defer c.attrs.sweep()
	targets, err := s.Interfaces()
	if err != nil {
		return err
	}
	if len(targets) == 0 {
		clear(c.meta)
		return errors.Join(ErrNoData, errors.New("no interfaces backing RDMA ports"))
	}
	ifaces := make(map[string]*Interface, len(targets))
	live := make(map[string]bool, len(targets))
	for _, t := range targets {
		if i := c.updateInterface(s, t, out); i != nil {
			ifaces[t.name] = i
			live[t.name] = true
		}
	}
	for n := range c.meta {
		if !live[n] {
			delete(c.meta, n)
		}
	}
	s.update(func(sn *Snapshot) { sn.Interfaces = ifaces })
	return nil
}

func (c *netdevCollector) updateInterface(s *Scrape, t netdevTarget, out *Sink) *Interface {
	m := c.meta[t.name]
	dir := ""
	if m != nil {
		dir = m.dir
	} else {
		dir = c.cfg.sys("class", "net", t.name)
	}
	iface := &Interface{Name: t.name, RDMADevice: t.device, Port: t.port, SpeedMbps: -1}

	if v, err := c.attrs.readString(dir, "operstate"); err == nil {
		iface.OperState = sanitizeLabel(v)
	} else if isVanished(err) {
		return nil // interface removed mid-scrape
	} else {
		s.readError("netdev", joinPath(dir, "operstate"), err)
	}

	if m == nil || c.cfg.due(m.at, s.Time) {
		m = c.readMeta(t.name, dir, s.Time)
		c.meta[t.name] = m
	}
	iface.Driver, iface.FirmwareVersion, iface.BusInfo = m.driver, m.firmware, m.busInfo
	iface.Addresses, iface.AddressesKnown = m.addresses, m.addressesKnown
	out.emit(interfaceInfoDesc, 1, t.name, t.device, t.portLabel, m.driver, m.firmware, m.busInfo)

	if iface.OperState != "" {
		up := 0.0
		if iface.Up() {
			up = 1
		}
		out.emit(interfaceUpDesc, up, t.name)
	}
	if v, err := c.attrs.readUint(dir, "mtu"); err == nil {
		iface.MTU = int(v)
		out.emit(interfaceMTUDesc, float64(v), t.name)
	} else if !isVanished(err) {
		s.readError("netdev", joinPath(dir, "mtu"), err)
	}
	if v, err := c.attrs.readUint(dir, "carrier_changes"); err == nil {
		iface.CarrierChanges = v
		out.emit(interfaceCarrierChangesDesc, float64(v), t.name)
	} else if !isVanished(err) {
		s.readError("netdev", joinPath(dir, "carrier_changes"), err)
	}
	if v, err := c.attrs.readString(dir, "speed"); err == nil {
		// -1 (SPEED_UNKNOWN) and huge values mean "no link", not a speed.
		if mbps, perr := strconv.Atoi(v); perr == nil && mbps > 0 && mbps < 100_000_000 {
			iface.SpeedMbps = mbps
			out.emit(interfaceSpeedDesc, float64(mbps)*125000, t.name)
		} else if perr != nil {
			s.readError("netdev", joinPath(dir, "speed"), perr)
		}
	} else if !isVanished(err) && !errors.Is(err, syscall.EINVAL) {
		// A down link reads EINVAL: expected, not an error.
		s.readError("netdev", joinPath(dir, "speed"), err)
	}
	return iface
}

func (c *netdevCollector) readMeta(name, dir string, now time.Time) *netdevMeta {
	m := &netdevMeta{at: now, dir: dir}
	if drv, err := c.cfg.fs.readlink(joinPath(dir, "device", "driver")); err == nil {
		m.driver = filepath.Base(drv)
	}
	if dev, err := c.cfg.fs.realpath(joinPath(dir, "device")); err == nil {
		m.busInfo = filepath.Base(dev)
	}
	if di, err := c.driver.info(name); err == nil {
		if di.Driver != "" {
			m.driver = di.Driver
		}
		if di.BusInfo != "" {
			m.busInfo = di.BusInfo
		}
		m.firmware = di.FirmwareVersion
	}
	m.driver, m.firmware, m.busInfo = sanitizeLabel(m.driver), sanitizeLabel(m.firmware), sanitizeLabel(m.busInfo)
	m.addresses, m.addressesKnown = c.addresses(name)
	return m
}

// addresses reads the interface's IP addresses: from ip-addr.txt in the
// replay directory when replaying a captured node, from the kernel when
// reading the live /sys, and not at all for a fixture without a capture
// (the host's own interfaces would be wrong).
func (c *netdevCollector) addresses(name string) ([]netip.Prefix, bool) {
	if c.cfg.Ethtool.ReplayDir != "" {
		all, err := c.addrCapture.load(filepath.Join(c.cfg.Ethtool.ReplayDir, "ip-addr.txt"), func(f *os.File) (any, error) {
			return parseIPAddr(bufio.NewScanner(f))
		})
		if err != nil {
			return nil, false
		}
		return all.(map[string][]netip.Prefix)[name], true
	}
	if filepath.Clean(c.cfg.SysPath) != "/sys" {
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
