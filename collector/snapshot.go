package collector

import (
	"net/netip"
	"sort"
	"sync"
	"time"
)

// Snapshot is the typed view of a node that one scrape produced. Health
// checks are pure functions of it. A nil or empty part means the source was
// not read (collector disabled, absent or timed out), never "zero".
type Snapshot struct {
	Time time.Time
	// Sources maps each source collector that ran to whether it succeeded.
	Sources map[string]bool

	RDMA       []*RDMADevice
	Interfaces map[string]*Interface
	PCI        map[string]*PCIFunction
	Ethtool    map[string]*EthtoolStats
	DCB        map[string]*DCBState
	// Modules records which kernel modules are loaded (from /sys/module).
	Modules map[string]bool
	// NICs lists RDMA-capable vendors' network functions found on the PCI
	// bus; filled only when no RDMA device exists, to tell "no NIC" from
	// "NIC without RDMA driver".
	NICs []PCINIC
	// Previous is the snapshot of the scrape before, for checks that need a
	// rate (pause storms, error counters). Nil on the first scrape.
	Previous *Snapshot `json:"-"`
}

// RDMADevice is one entry of /sys/class/infiniband.
type RDMADevice struct {
	Name            string
	Driver          string // PCI driver of the parent function (mlx5_core, bnxt_en, ice)
	PCIAddress      string
	FirmwareVersion string
	HCAType         string
	BoardID         string
	NodeGUID        string
	SysImageGUID    string
	// VerbsDevices are the /dev/infiniband/uverbsN nodes sysfs says belong to
	// this device; VerbsPresent those that exist under --path.dev.
	VerbsDevices []string
	VerbsPresent []string
	Ports        []*RDMAPort
}

// RDMAPort is one port of an RDMA device.
type RDMAPort struct {
	Device        string
	Number        int
	LinkLayer     string
	State         int
	StateName     string
	PhysState     int
	PhysStateName string
	// RateBitsPerSecond is 0 when unknown or not trustworthy (a down mlx5
	// RoCE port reports a fake 40 Gb/s).
	RateBitsPerSecond float64
	Interface         string
	Counters          []CounterValue // counters/, canonical names, data in bytes
	HWCounters        []CounterValue // hw_counters/, canonical names, 64-bit extended
	GIDs              []GID
	// DefaultRoCEMode is the rdma_cm default from configfs, "" when unreadable.
	DefaultRoCEMode string
}

// Up reports whether the port is ACTIVE with the physical link up.
func (p *RDMAPort) Up() bool { return p.State == 4 && (p.PhysState == 5 || p.PhysState == 0) }

// Counter looks up a counters/ value by canonical name.
func (p *RDMAPort) Counter(name string) (uint64, bool) { return lookup(p.Counters, name) }

// HWCounter looks up a hw_counters/ value by canonical name.
func (p *RDMAPort) HWCounter(name string) (uint64, bool) { return lookup(p.HWCounters, name) }

// CounterValue is one named counter reading.
type CounterValue struct {
	Name  string
	Value uint64
}

func lookup(vs []CounterValue, name string) (uint64, bool) {
	for _, v := range vs {
		if v.Name == name {
			return v.Value, true
		}
	}
	return 0, false
}

// GID is one populated slot of a port's GID table.
type GID struct {
	Index      int
	indexLabel string
	GID        string
	Type       string // "RoCE v2", "IB/RoCE v1"
	Interface  string
}

// IPv4 returns the address of an IPv4-mapped GID.
func (g GID) IPv4() (netip.Addr, bool) {
	a, err := netip.ParseAddr(g.GID)
	if err != nil || !a.Is4In6() {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// Interface is a network interface backing an RDMA port (or selected by
// --collector.netdev.include).
type Interface struct {
	Name       string
	RDMADevice string
	Port       int
	MTU        int // 0 when unreadable
	OperState  string
	// SpeedMbps is -1 when unknown (link down reads EINVAL).
	SpeedMbps       int
	CarrierChanges  uint64
	Driver          string
	FirmwareVersion string
	BusInfo         string
	// Addresses is known only when AddressesKnown: read from the live
	// system, or from ip-addr.txt in a replay directory.
	Addresses      []netip.Prefix
	AddressesKnown bool
}

// Up reports whether the interface is operationally up.
func (i *Interface) Up() bool { return i.OperState == "up" }

// PCIFunction is the PCIe function behind one or more RDMA devices.
type PCIFunction struct {
	Address         string
	RDMADevices     []string
	VendorID        string
	DeviceID        string
	CurrentSpeedGTs float64
	MaxSpeedGTs     float64
	CurrentWidth    int
	MaxWidth        int
	// Bandwidths are usable bytes/s after line encoding. Available is the
	// minimum over the function and every upstream port, like the kernel's
	// pcie_bandwidth_available(); LimitedBy names the bottleneck.
	CurrentBandwidth   float64
	MaxBandwidth       float64
	AvailableBandwidth float64
	LimitedBy          string
	AER                map[string]uint64 // correctable, fatal, nonfatal totals
}

// PCINIC is a network function of a vendor that makes RDMA NICs.
type PCINIC struct {
	Address  string
	VendorID string
	DeviceID string
	Class    string
	Driver   string // "" when no driver is bound
}

// Scrape carries one collection: the shared topology and the snapshot the
// source collectors fill for the derived ones.
type Scrape struct {
	Time time.Time
	cfg  *Config
	exp  *Exporter

	mu     sync.Mutex
	snap   *Snapshot
	sealed bool

	topoOnce sync.Once
	topo     *Topology
	topoErr  error

	ifacesOnce sync.Once
	ifaces     []netdevTarget
	ifacesErr  error
}

func newScrape(e *Exporter, prev *Snapshot) *Scrape {
	now := time.Now()
	if prev != nil {
		prev.Previous = nil // keep one level of history, not a chain
	}
	return &Scrape{
		Time: now, cfg: e.cfg, exp: e,
		snap: &Snapshot{Time: now, Sources: map[string]bool{}, Previous: prev},
	}
}

// Topology returns the RDMA device layout, computed once per scrape.
func (s *Scrape) Topology() (*Topology, error) {
	s.topoOnce.Do(func() { s.topo, s.topoErr = s.exp.topology.get() })
	return s.topo, s.topoErr
}

// Interfaces returns, once per scrape for the netdev, ethtool and dcb
// collectors, the netdevs behind RDMA ports in topology order, then those
// --collector.netdev.include selects in name order.
func (s *Scrape) Interfaces() ([]netdevTarget, error) {
	s.ifacesOnce.Do(func() { s.ifaces, s.ifacesErr = s.listInterfaces() })
	return s.ifaces, s.ifacesErr
}

// update applies fn to the snapshot unless the source phase is over: a
// collector that timed out must not change what the health checks saw.
func (s *Scrape) update(fn func(*Snapshot)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.sealed {
		fn(s.snap)
	}
}

func (s *Scrape) seal() {
	s.mu.Lock()
	s.sealed = true
	s.mu.Unlock()
}

// Snapshot returns the snapshot for derived collectors; call only after
// the source phase.
func (s *Scrape) Snapshot() *Snapshot { return s.snap }

// readError counts and logs a file a collector skipped.
func (s *Scrape) readError(collector, path string, err error) {
	if rc := s.exp.byName[collector]; rc != nil {
		rc.readErrors.Add(1)
	}
	s.exp.warnOnce(collector, path, err)
}

// InterfaceNames returns the snapshot's interfaces in name order.
func (sn *Snapshot) InterfaceNames() []string {
	names := make([]string, 0, len(sn.Interfaces))
	for n := range sn.Interfaces {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Ports returns every port of every device in device order.
func (sn *Snapshot) Ports() []*RDMAPort {
	var out []*RDMAPort
	for _, d := range sn.RDMA {
		out = append(out, d.Ports...)
	}
	return out
}

// Device returns the RDMA device by name.
func (sn *Snapshot) Device(name string) *RDMADevice {
	for _, d := range sn.RDMA {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// EthtoolStats is the mapped view of one interface's ethtool statistics.
type EthtoolStats struct {
	Interface string
	// GlobalPause is the 802.3x pause configuration, nil when unknown.
	GlobalPause *GlobalPause
	Values      []EthtoolValue
}

// GlobalPause is the link-level (802.3x) pause setting of an interface.
type GlobalPause struct{ Autoneg, RX, TX bool }

// EthtoolValue is one mapped statistic. Priority is -1 when the family has
// no priority; Label carries the discard reason or storm severity.
type EthtoolValue struct {
	Family    string
	Direction string
	Priority  int
	Label     string
	Value     uint64
}

// Get returns a mapped value, and false when the NIC does not report it.
func (e *EthtoolStats) Get(family, direction string, priority int, label string) (uint64, bool) {
	for _, v := range e.Values {
		if v.Family == family && v.Direction == direction && v.Priority == priority && v.Label == label {
			return v.Value, true
		}
	}
	return 0, false
}

// DCBState is the data-center-bridging configuration of an interface.
type DCBState struct {
	Interface  string
	PFCCap     int
	PFCEnabled [8]bool
	// Trust is "dscp" or "pcp".
	Trust string
	// ECN holds the MLNX_OFED per-priority enable files, keyed by role
	// ("np", "rp"); nil when the driver does not expose them.
	ECN map[string]*[8]bool
}
