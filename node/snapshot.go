package node

import (
	"maps"
	"slices"
	"time"
)

// The sources a Snapshot is read from. They are also the names of the
// collectors that export them and of their --collector.<name> flags.
const (
	SourceRDMA    = "rdma"
	SourceNetdev  = "netdev"
	SourcePCIe    = "pcie"
	SourceEthtool = "ethtool"
	SourceDCB     = "dcb"
	// SourceTransceiver reads pluggable modules' EEPROM (slow refresh).
	SourceTransceiver = "transceiver"
	// SourcePHY reads FEC statistics and the extended link state.
	SourcePHY = "phy"
)

// SourceStatus says how reading one source went.
type SourceStatus string

const (
	// SourceOK: read in full.
	SourceOK SourceStatus = "ok"
	// SourceAbsent: the node has none of it (no RDMA device, no interface
	// with DCB support); its part of the snapshot is rightly empty.
	SourceAbsent SourceStatus = "absent"
	// SourcePartial: read, but some of it could not be (a device whose
	// files are unreadable or whose reads hang).
	SourcePartial SourceStatus = "partial"
	// SourceFailed: not read (an error, a timeout, a read still stuck): its
	// part of the snapshot is missing, which says nothing about the node.
	SourceFailed SourceStatus = "failed"
)

// Snapshot is the typed view of a node at one moment. A nil or empty part
// means the source was not read (disabled, absent or failed, as Sources
// says), never "zero".
type Snapshot struct {
	Time time.Time
	// Sources maps each source that ran to how its read went; a source that
	// is not in it is disabled.
	Sources map[string]SourceStatus

	Devices    []*Device
	Interfaces map[string]*Interface
	PCI        map[string]*PCIFunction
	Ethtool    map[string]*EthtoolStats
	DCB        map[string]*DCBState
	// Transceivers are the decoded modules by interface; PHY the FEC and
	// link-down state by interface.
	Transceivers map[string]*Transceiver
	PHY          map[string]*PHY
	// HealthReporters are the devlink health reporters of the node's NICs,
	// in handle order (SourceDevlink).
	HealthReporters []*HealthReporter
	// DevlinkInfo is `devlink dev info` of the node's NICs, in handle
	// order (SourceDevlink, read on the refresh interval).
	DevlinkInfo []*DevlinkInfo
	// LLDP maps an interface to its LLDP neighbour (SourceLLDP); an
	// interface without one is not in it.
	LLDP map[string]*LLDPNeighbor
	// Host is the host configuration of SourceHost; nil when not read.
	Host *HostState
	// Modules records which kernel modules are loaded (from /sys/module).
	Modules map[string]bool
	// NICs lists RDMA-capable vendors' network functions found on the PCI
	// bus; filled only when no RDMA device exists, to tell "no NIC" from
	// "NIC without RDMA driver".
	NICs []NIC
	// GPU is the GPU side of the RDMA path (source gpu); nil on a node
	// without NVIDIA GPUs or when the source did not run.
	GPU *GPUState
	// Previous is the snapshot taken before, for judgements that need a
	// rate (pause storms, error counters). Nil on the first one.
	Previous *Snapshot `json:"-"`
}

// SourceRead reports whether a source's part of the snapshot can be
// trusted to be complete or rightly empty: read in full, or absent from the
// node.
func (s *Snapshot) SourceRead(source string) bool {
	st := s.Sources[source]
	return st == SourceOK || st == SourceAbsent
}

// InterfaceNames returns the snapshot's interfaces in name order.
func (s *Snapshot) InterfaceNames() []string {
	return slices.Sorted(maps.Keys(s.Interfaces))
}

// Ports returns every port of every device in device order.
func (s *Snapshot) Ports() []*Port {
	var out []*Port
	for _, d := range s.Devices {
		out = append(out, d.Ports...)
	}
	return out
}

// Device returns the RDMA device by name, nil when the node has none of
// that name.
func (s *Snapshot) Device(name string) *Device {
	for _, d := range s.Devices {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// Port returns a port by device name and number, nil when absent.
func (s *Snapshot) Port(device string, number int) *Port {
	if d := s.Device(device); d != nil {
		return d.Port(number)
	}
	return nil
}

// PortOfNetdev returns the RDMA port whose netdev is netdev, nil when no
// port is backed by it.
func (s *Snapshot) PortOfNetdev(netdev string) (*Device, *Port) {
	if netdev == "" {
		return nil, nil
	}
	for _, d := range s.Devices {
		for _, p := range d.Ports {
			if p.Interface == netdev {
				return d, p
			}
		}
	}
	return nil, nil
}
