package node

import (
	"net/netip"
	"time"
)

// Device is one entry of /sys/class/infiniband.
type Device struct {
	Name            string
	Driver          string // PCI driver of the parent function (mlx5_core, bnxt_en, ice)
	PCIAddress      string
	FirmwareVersion string
	HCAType         string
	BoardID         string
	NodeGUID        string
	SysImageGUID    string
	// NodeType is node_type's number (NodeTypeCA, NodeTypeRNIC...), 0
	// when unreadable; NodeTypeName its text.
	NodeType     int
	NodeTypeName string
	// VerbsDevices are the /dev/infiniband/uverbsN nodes sysfs says belong to
	// this device; VerbsPresent those that exist under the /dev root.
	VerbsDevices []string
	VerbsPresent []string
	Ports        []*Port
	// Unreadable says why the device, present in sysfs, could not be read
	// (its directory is not readable, its reads did not return): then only
	// Name is known. It is not a device without ports.
	Unreadable string
}

// Port returns the device's port by number, nil when it has none.
func (d *Device) Port(number int) *Port {
	for _, p := range d.Ports {
		if p.Number == number {
			return p
		}
	}
	return nil
}

// The link layers of ports/<n>/link_layer, spelt as the kernel spells them.
// A device whose driver reports IB_LINK_LAYER_UNSPECIFIED (efa) reads
// LinkLayerUnknown.
const (
	LinkLayerEthernet   = "Ethernet"
	LinkLayerInfiniBand = "InfiniBand"
	LinkLayerUnknown    = "Unknown"
)

// Node types of node_type (enum rdma_node_type). RoCE and InfiniBand
// adapters are CAs; iWARP adapters (i40iw, irdma in iWARP mode, cxgb4)
// are RNICs, whose Ethernet link layer does not make them RoCE; efa is
// unspecified.
const (
	NodeTypeCA          = 1
	NodeTypeSwitch      = 2
	NodeTypeRouter      = 3
	NodeTypeRNIC        = 4
	NodeTypeUSNIC       = 5
	NodeTypeUSNICUDP    = 6
	NodeTypeUnspecified = 7
)

// IWARP reports an iWARP adapter: RDMA over TCP, no RoCE GIDs, no PFC
// needed.
func (d *Device) IWARP() bool { return d.NodeType == NodeTypeRNIC }

// Logical port states (ports/<n>/state, enum ib_port_state).
const (
	PortStateDown        = 1
	PortStateInit        = 2
	PortStateArmed       = 3
	PortStateActive      = 4
	PortStateActiveDefer = 5
)

// Physical port states (ports/<n>/phys_state, IBA PortPhysicalState).
const (
	PhysStateNoChange   = 0
	PhysStateSleep      = 1
	PhysStatePolling    = 2
	PhysStateDisabled   = 3
	PhysStateTraining   = 4
	PhysStateLinkUp     = 5
	PhysStateErrRecover = 6
	PhysStatePhyTest    = 7
)

// GID types of gid_attrs/types/<index>, as the kernel prints them.
const (
	GIDTypeRoCEv2 = "RoCE v2"
	GIDTypeRoCEv1 = "IB/RoCE v1"
)

// Port is one port of an RDMA device.
type Port struct {
	Device    string
	Number    int
	LinkLayer string
	// State and PhysState are 0 when unreadable; StateKnown and
	// PhysStateKnown tell a 0 read from the file from an unreadable one.
	State          int
	StateName      string
	StateKnown     bool
	PhysState      int
	PhysStateName  string
	PhysStateKnown bool
	// RateBitsPerSecond is 0 when unknown or not trustworthy (a down mlx5
	// RoCE port reports a placeholder 40 Gb/s).
	RateBitsPerSecond float64
	// Interface is the netdev behind the port, "" for IB ports without IPoIB.
	Interface string
	// BondSlaves are the interfaces enslaved to Interface when it is a
	// bonding master (RoCE LAG: mlx5_bond_0 behind bond0). PFC, pause
	// counters and DCB live on them, not on the bond.
	BondSlaves []string
	// Counters are the counters/ files (IB PMA) and HWCounters the
	// hw_counters/ files, under their canonical names (see CanonicalHWName).
	// Values are as the kernel counts them: the PMA data counters are in
	// 4-byte words (see DataBytes); mlx5's 32-bit q-counters are already
	// extended to 64 bits across reads.
	Counters   []Counter
	HWCounters []Counter
	// HWCountersLifespan is how long the kernel caches hw_counters values;
	// valid when LifespanKnown.
	HWCountersLifespan time.Duration
	LifespanKnown      bool
	GIDs               []GID
	// ActiveMTU is the RoCE path MTU the netdev's MTU allows (RoCEActiveMTU),
	// 0 where it does not apply (InfiniBand, no netdev) or is unknown.
	ActiveMTU int
	// DefaultRoCEMode is the rdma_cm default from configfs, "" when unreadable.
	DefaultRoCEMode string
	// DefaultRoCETOS is rdma_cm's configfs default_roce_tos (the ToS rdma_cm
	// connections get when the application sets none); nil when unreadable, which
	// is usual: the configfs directory exists only once someone created it.
	DefaultRoCETOS *int
	// TrafficClass is MLNX_OFED's tc/<port>/traffic_class global override, which
	// every QP of the port is sent with; nil when the file does not exist or no
	// global traffic class is set (TrafficClassFile tells the two apart).
	TrafficClass     *int
	TrafficClassFile bool
}

// Up reports whether the port is ACTIVE with the physical link up. An
// unreadable state is 0 and so not ACTIVE; an unreadable phys_state is 0,
// "no state change", which does not veto an ACTIVE state.
func (p *Port) Up() bool {
	return p.State == PortStateActive && (p.PhysState == PhysStateLinkUp || p.PhysState == PhysStateNoChange)
}

// Ethernet reports whether the port runs RoCE (Ethernet link layer).
func (p *Port) Ethernet() bool { return p.LinkLayer == LinkLayerEthernet }

// Counter looks up a counters/ value by canonical name.
func (p *Port) Counter(name string) (uint64, bool) { return lookup(p.Counters, name) }

// HWCounter looks up a hw_counters/ value by canonical name.
func (p *Port) HWCounter(name string) (uint64, bool) { return lookup(p.HWCounters, name) }

// DataBytes returns the RDMA bytes the port received and transmitted, from
// the PMA data counters (which count 4-byte words).
func (p *Port) DataBytes() (rx, tx uint64, ok bool) {
	r, ok1 := p.Counter(CounterPortRcvData)
	t, ok2 := p.Counter(CounterPortXmitData)
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	return r * PMADataWordBytes, t * PMADataWordBytes, true
}

// Counter is one named counter reading.
type Counter struct {
	Name  string
	Value uint64
}

func lookup(vs []Counter, name string) (uint64, bool) {
	for _, v := range vs {
		if v.Name == name {
			return v.Value, true
		}
	}
	return 0, false
}

// GID is one populated slot of a port's GID table.
type GID struct {
	Index     int
	GID       string
	Type      string // GIDTypeRoCEv2, GIDTypeRoCEv1, "" on InfiniBand
	Interface string
}

// IPv4 returns the address of an IPv4-mapped GID.
func (g GID) IPv4() (netip.Addr, bool) {
	a, err := netip.ParseAddr(g.GID)
	if err != nil || !a.Is4In6() {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// Addr returns the GID as an address (IPv4-mapped GIDs unmapped).
func (g GID) Addr() (netip.Addr, bool) {
	a, err := netip.ParseAddr(g.GID)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// RoCEv2GIDIndex returns the index of the port's RoCE v2 GID carrying ip.
func (p *Port) RoCEv2GIDIndex(ip netip.Addr) (int, bool) {
	for _, g := range p.GIDs {
		if g.Type != GIDTypeRoCEv2 {
			continue
		}
		if a, ok := g.Addr(); ok && a == ip.Unmap() {
			return g.Index, true
		}
	}
	return 0, false
}
