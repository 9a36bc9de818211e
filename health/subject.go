package health

import (
	"strconv"

	"github.com/roce-exporter/roce_exporter/node"
)

// A finding's subject names what it judged: the node (SubjectNode), a network
// interface ("ens1f0np0"), an RDMA device ("mlx5_0") or one port of a
// multi-port device ("mlx5_0/2"). The checks name ports with PortSubject; the
// doctor's cabling lines, the metrics' device and interface labels and
// whatever else joins a finding to a port read the names back through
// SubjectPorts, so the two directions cannot drift apart.

// PortSubject is the subject naming an RDMA port: the device name alone on a
// single-port device (every mlx5 Ethernet function), device/port on the
// dual-port cards where the name alone is ambiguous.
func PortSubject(d *node.Device, p *node.Port) string {
	if d == nil || len(d.Ports) <= 1 {
		return p.Device
	}
	return p.Device + "/" + strconv.Itoa(p.Number)
}

// SubjectPort is the port a subject names: its RDMA device and its netdev.
// Both are empty for the node and for a name not on the node.
type SubjectPort struct{ Device, Interface string }

// SubjectPorts maps every name a finding may have as subject to its port: an
// interface to itself and its RDMA device; a device, or device/port (for any
// port, whatever PortSubject would call it), to itself and its netdev, which a
// whole device has only when all its ports share one.
func SubjectPorts(snap *node.Snapshot) map[string]SubjectPort {
	m := make(map[string]SubjectPort, 2*len(snap.Devices)+len(snap.Interfaces))
	for _, i := range snap.Interfaces {
		m[i.Name] = SubjectPort{Device: i.RDMADevice, Interface: i.Name}
	}
	for _, d := range snap.Devices {
		netdev, shared := "", true
		for _, p := range d.Ports {
			if p.Interface != "" {
				if netdev == "" {
					netdev = p.Interface
				} else if p.Interface != netdev {
					shared = false
				}
				m[p.Interface] = SubjectPort{Device: d.Name, Interface: p.Interface}
			}
			m[d.Name+"/"+strconv.Itoa(p.Number)] = SubjectPort{Device: d.Name, Interface: p.Interface}
		}
		whole := SubjectPort{Device: d.Name}
		if shared {
			whole.Interface = netdev
		}
		m[d.Name] = whole
	}
	return m
}
