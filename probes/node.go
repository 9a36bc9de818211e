package probes

import (
	"context"
	"net/netip"
	"slices"

	"github.com/roce-exporter/roce_exporter/node"
)

// Node is the node as the exporter's one pipeline sees it.
type Node interface {
	// Collect reads the node now through the exporter's pipeline (joining a read
	// already in flight) and returns the snapshot; its Previous is the collection
	// before it (nil if none), Time/Previous.Time give the interval.
	Collect(ctx context.Context) (*node.Snapshot, error)
	// Latest is the newest collection's snapshot without reading (nil when
	// there is none yet): enough for what changes only with the node's
	// configuration, such as the GID index a responder listens on.
	Latest() *node.Snapshot
}

// What a run needs to know of the node is read from the snapshot taken just
// before it (and the one after it, for what moved meanwhile) by the pure
// functions below, so the probes and the metrics read one node by one set of
// rules, and a run reads the node at most twice. Each answers "unknown" for a
// nil snapshot (no read, or a failed one).

// gidIndex is the index of the device's RoCE v2 GID carrying ip.
func gidIndex(s *node.Snapshot, device string, ip netip.Addr) (int, bool) {
	if s == nil {
		return 0, false
	}
	d := s.Device(device)
	if d == nil {
		return 0, false
	}
	for _, p := range d.Ports {
		if i, ok := p.RoCEv2GIDIndex(ip); ok {
			return i, true
		}
	}
	return 0, false
}

// ratedPort is the device's first port that reports a rate (a compute NIC's
// RDMA device has one port per netdev); nil when none does.
func ratedPort(s *node.Snapshot, device string) *node.Port {
	if s == nil {
		return nil
	}
	if d := s.Device(device); d != nil {
		for _, p := range d.Ports {
			if p.RateBitsPerSecond > 0 {
				return p
			}
		}
	}
	return nil
}

// portRate is the signalling rate of the device's port in bits per second.
func portRate(s *node.Snapshot, device string) (float64, bool) {
	p := ratedPort(s, device)
	if p == nil {
		return 0, false
	}
	return p.RateBitsPerSecond, true
}

// nearestGPU is the GPU nearest the RDMA device in the PCIe tree: the best
// relation, then one on the NIC's own host bridge (NCCL's PHB does not
// tell), then the lowest index (PCI order); nil without GPUs or when the
// device's place is unknown.
func nearestGPU(s *node.Snapshot, device string) *node.GPU {
	if s == nil || s.GPU == nil {
		return nil
	}
	var nic *node.RDMANIC
	for _, c := range s.GPU.NICs {
		if c.Device == device {
			nic = c
		}
	}
	if nic == nil {
		return nil
	}
	best, nearest, sameHost := node.RelationUnknown, (*node.GPU)(nil), false
	for _, g := range s.GPU.GPUs {
		r := node.Relate(g.Place, nic.Place)
		hb := node.SameHostBridge(g.Place, nic.Place)
		if r != node.RelationUnknown && (best == node.RelationUnknown || r < best || r == best && hb && !sameHost) {
			best, nearest, sameHost = r, g, hb
		}
	}
	return nearest
}

// gpuNICRelation is the nearest PCIe relation of any of the node's GPUs to
// any of devices (every RDMA NIC the gpu source placed when devices is
// empty): the best path NCCL can give a GPU to a NIC it uses, and so
// whether its default NCCL_NET_GDR_LEVEL (PXB) gives this node GPUDirect
// RDMA at all. RelationUnknown without GPUs or their places.
func gpuNICRelation(s *node.Snapshot, devices []string) node.PCIeRelation {
	best := node.RelationUnknown
	if s == nil || s.GPU == nil {
		return best
	}
	for _, nic := range s.GPU.NICs {
		if len(devices) > 0 && !slices.Contains(devices, nic.Device) {
			continue
		}
		for _, g := range s.GPU.GPUs {
			if r := node.Relate(g.Place, nic.Place); r != node.RelationUnknown && (best == node.RelationUnknown || r < best) {
				best = r
			}
		}
	}
	return best
}

// gpuDirectAvailable says whether the node offers GPUDirect RDMA; not known
// on a node without GPUs or when the gpu source did not run.
func gpuDirectAvailable(s *node.Snapshot) (available, known bool) {
	if s == nil || s.GPU == nil || len(s.GPU.GPUs) == 0 {
		return false, false
	}
	return s.GPU.GPUDirect.Available(), true
}
