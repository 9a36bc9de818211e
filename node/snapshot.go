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
)

// Snapshot is the typed view of a node at one moment. A nil or empty part
// means the source was not read (disabled, absent or timed out), never
// "zero".
type Snapshot struct {
	Time time.Time
	// Sources maps each source that ran to whether it succeeded.
	Sources map[string]bool

	Devices    []*Device
	Interfaces map[string]*Interface
	PCI        map[string]*PCIFunction
	Ethtool    map[string]*EthtoolStats
	DCB        map[string]*DCBState
	// Modules records which kernel modules are loaded (from /sys/module).
	Modules map[string]bool
	// NICs lists RDMA-capable vendors' network functions found on the PCI
	// bus; filled only when no RDMA device exists, to tell "no NIC" from
	// "NIC without RDMA driver".
	NICs []NIC
	// Previous is the snapshot taken before, for judgements that need a
	// rate (pause storms, error counters). Nil on the first one.
	Previous *Snapshot `json:"-"`
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
