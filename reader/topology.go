package reader

import (
	"errors"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/roce-exporter/roce_exporter/node"
)

// topology is the RDMA device layout of the node: devices, their ports,
// the netdev behind each port and the PCI function behind each device.
type topology struct {
	Devices []*topoDevice
	// ClassMissing is true when /sys/class/infiniband does not exist (no
	// RDMA stack loaded), as opposed to existing but empty.
	ClassMissing bool
}

// topoDevice is one RDMA device.
type topoDevice struct {
	Name       string
	Dir        string
	Inode      uint64
	PCIAddress string // "" for devices without a PCI parent (rxe, siw)
	PCIDir     string
	Driver     string
	Netdevs    []string
	Ports      []*topoPort
	// portsErr is why the ports directory could not be listed (not that
	// it does not exist): the device is then unreadable, not portless.
	portsErr error
	built    time.Time
}

// topoPort is one port of a device.
type topoPort struct {
	Number int
	// Label is Number as a label value, formatted once.
	Label  string
	Dir    string
	Netdev string
	// NetdevType is the netdev's ARPHRD type: 1 Ethernet, 32 InfiniBand.
	NetdevType string
	// BondSlaves are the slaves of Netdev when it is a bonding master.
	BondSlaves []string
}

// topologyCache rebuilds a device's layout only when the device is new, was
// re-created (new kernfs inode) or the cached layout is older than the
// refresh interval, so a steady-state scrape costs one directory listing
// plus one stat per device.
type topologyCache struct {
	r       *Reader
	mu      sync.Mutex
	devices map[string]*topoDevice
}

func newTopologyCache(r *Reader) *topologyCache {
	return &topologyCache{r: r, devices: map[string]*topoDevice{}}
}

func (t *topologyCache) get() (*topology, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	classDir := t.r.sys("class", "infiniband")
	names, err := t.r.fs.ReadDirNames(classDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			clear(t.devices)
			return &topology{ClassMissing: true}, nil
		}
		return nil, err
	}
	sort.Strings(names)
	topo := &topology{}
	seen := make(map[string]bool, len(names))
	now := time.Now()
	for _, name := range names {
		if !t.r.deviceSelected(name) {
			continue
		}
		dir := joinPath(classDir, name)
		d := t.devices[name]
		// A device's identity (kernfs inode) is read when its layout is
		// due for a refresh, not every scrape: a device removed and
		// re-added in between keeps being read through reopened files and
		// gets its new layout at the refresh.
		if d == nil || t.r.due(d.built, now) {
			ino, err := t.r.fs.Inode(dir)
			if err != nil {
				continue // vanished between listing and stat
			}
			d = t.build(name, dir, ino, now)
			t.devices[name] = d
		}
		seen[name] = true
		topo.Devices = append(topo.Devices, d)
	}
	for name := range t.devices {
		if !seen[name] {
			delete(t.devices, name)
		}
	}
	return topo, nil
}

func (t *topologyCache) build(name, dir string, ino uint64, now time.Time) *topoDevice {
	f := t.r.fs
	d := &topoDevice{Name: name, Dir: dir, Inode: ino, built: now}
	if pci, err := f.Realpath(joinPath(dir, "device")); err == nil {
		d.PCIDir = pci
		if base := filepath.Base(pci); node.BDF.MatchString(base) {
			d.PCIAddress = base
		}
		if drv, err := f.Readlink(joinPath(pci, "driver")); err == nil {
			d.Driver = filepath.Base(drv)
		}
		if nets, err := f.ReadDirNames(joinPath(pci, "net")); err == nil {
			sort.Strings(nets)
			d.Netdevs = nets
		}
	}
	portNames, err := f.ReadDirNames(joinPath(dir, "ports"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		d.portsErr = err
	}
	for _, pn := range portNames {
		n, err := strconv.Atoi(pn)
		if err != nil || n < 0 {
			continue
		}
		p := &topoPort{Number: n, Label: strconv.Itoa(n), Dir: joinPath(dir, "ports", pn)}
		p.Netdev = t.portNetdev(d, p)
		if p.Netdev != "" {
			p.NetdevType, _ = readSysfsFile(t.r.fs, t.r.sys("class", "net", p.Netdev, "type"))
			// bonding's own list of its slaves (bond_sysfs.c).
			if s, err := readSysfsFile(t.r.fs, t.r.sys("class", "net", p.Netdev, "bonding", "slaves")); err == nil {
				p.BondSlaves = strings.Fields(s)
			}
		}
		d.Ports = append(d.Ports, p)
	}
	sort.Slice(d.Ports, func(i, j int) bool { return d.Ports[i].Number < d.Ports[j].Number })
	return d
}

// portNetdev finds the interface behind a port: the netdev of the port's
// first GID, which the kernel sets to the interface RoCE runs over (a RoCE
// LAG's bond0, though the PCI function's own netdev is a slave of it), else
// the PCI function's only netdev (IPoIB, whose GIDs have no netdev), else
// the netdev whose dev_port matches (multi-port functions).
func (t *topologyCache) portNetdev(d *topoDevice, p *topoPort) string {
	if nd, err := readSysfsFile(t.r.fs, joinPath(p.Dir, "gid_attrs", "ndevs", "0")); err == nil && nd != "" {
		return nd
	}
	if len(d.Netdevs) == 1 {
		return d.Netdevs[0]
	}
	for _, nd := range d.Netdevs {
		v, err := readSysfsFile(t.r.fs, joinPath(d.PCIDir, "net", nd, "dev_port"))
		if err == nil && strings.TrimSpace(v) == strconv.Itoa(p.Number-1) {
			return nd
		}
	}
	return ""
}

// netdevTarget is an interface the netdev, ethtool and dcb sources read;
// device and port are empty for NetdevInclude matches that back no RDMA
// port.
type netdevTarget struct {
	name, device string
	port         int
	portLabel    string
	// ipoib is set for ARPHRD_INFINIBAND (type 32) netdevs.
	ipoib bool
}

func (sc *scan) listInterfaces() ([]netdevTarget, error) {
	topo, err := sc.topology()
	if err != nil {
		return nil, err
	}
	var out []netdevTarget
	seen := map[string]bool{}
	for _, d := range topo.Devices {
		for _, p := range d.Ports {
			if p.Netdev != "" && !seen[p.Netdev] {
				seen[p.Netdev] = true
				out = append(out, netdevTarget{name: p.Netdev, device: d.Name, port: p.Number, portLabel: p.Label, ipoib: p.NetdevType == "32"})
			}
			// A bond's slaves carry the port's traffic, PFC and DCB: they
			// are read as interfaces of the same port.
			for _, s := range p.BondSlaves {
				if !seen[s] {
					seen[s] = true
					out = append(out, netdevTarget{name: s, device: d.Name, port: p.Number, portLabel: p.Label, ipoib: p.NetdevType == "32"})
				}
			}
		}
	}
	if sc.r.opts.NetdevInclude != nil {
		names, err := sc.r.fs.ReadDirNames(sc.r.sys("class", "net"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		sort.Strings(names)
		for _, n := range names {
			if !seen[n] && sc.r.opts.NetdevInclude.MatchString(n) {
				if !isDir(sc.r.fs, sc.r.sys("class", "net", n)) {
					// bonding_masters, a regular file of the bonding
					// module, or a dangling link: not an interface.
					continue
				}
				seen[n] = true
				t, err := readSysfsFile(sc.r.fs, sc.r.sys("class", "net", n, "type"))
				out = append(out, netdevTarget{name: n, ipoib: err == nil && t == "32"})
			}
		}
	}
	return out, nil
}
