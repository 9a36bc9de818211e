package probes

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/roce-exporter/roce_exporter/node"
)

// NodeInfo is what the runners need to know about the local RDMA devices.
type NodeInfo interface {
	// GIDIndex returns the index of the device's RoCE v2 GID carrying ip.
	GIDIndex(device string, ip netip.Addr) (int, bool)
	// PortRateBitsPerSecond is the signalling rate of the device's port.
	PortRateBitsPerSecond(device string) (float64, bool)
	// PortUtilization measures how much of the port's rate the existing
	// traffic uses, over window.
	PortUtilization(ctx context.Context, device string, window time.Duration) (float64, error)
}

// PriorityTraffic is a reading of the counters that tell which 802.1p priority
// carried a device's traffic: the RDMA data counters of its port and the
// per-priority byte counters of its netdev (ethtool tx/rx_prio<N>_bytes and the
// bnxt/ice equivalents node maps onto node.FamilyPriorityBytes).
type PriorityTraffic struct {
	// RDMATX and RDMARX are port_xmit_data and port_rcv_data in bytes; HaveRDMA
	// is false when the port has no data counters.
	RDMATX, RDMARX uint64
	HaveRDMA       bool
	// TX and RX are the bytes per priority; Have[p] marks the priorities read.
	TX, RX [8]uint64
	Have   [8]bool
}

// PriorityCounters is the optional part of NodeInfo that lets a bandwidth probe
// prove which priority its bytes went on. A NodeInfo without it skips that proof.
type PriorityCounters interface {
	PriorityTraffic(device string) (PriorityTraffic, bool)
}

// SnapshotNode answers NodeInfo from snapshots of the node, read by the same
// reader the exporter serves its metrics from: the probes and the metrics
// see one node, parsed by one set of rules.
type SnapshotNode struct {
	// Read returns a fresh snapshot of this node.
	Read func() *node.Snapshot
}

// GIDIndex scans the device's ports for a RoCE v2 GID carrying ip.
func (n SnapshotNode) GIDIndex(device string, ip netip.Addr) (int, bool) {
	d := n.Read().Device(device)
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

// PortRateBitsPerSecond is the rate of the device's first port that reports
// one (a compute NIC's RDMA device has one port per netdev).
func (n SnapshotNode) PortRateBitsPerSecond(device string) (float64, bool) {
	p := ratedPort(n.Read(), device)
	if p == nil {
		return 0, false
	}
	return p.RateBitsPerSecond, true
}

func ratedPort(snap *node.Snapshot, device string) *node.Port {
	if d := snap.Device(device); d != nil {
		for _, p := range d.Ports {
			if p.RateBitsPerSecond > 0 {
				return p
			}
		}
	}
	return nil
}

// PortUtilization compares the RDMA data counters of two snapshots window
// apart: the busier direction's share of the port rate.
func (n SnapshotNode) PortUtilization(ctx context.Context, device string, window time.Duration) (float64, error) {
	p0 := ratedPort(n.Read(), device)
	if p0 == nil {
		return 0, fmt.Errorf("%s: port rate unknown", device)
	}
	rx0, tx0, ok := p0.DataBytes()
	if !ok {
		return 0, fmt.Errorf("%s port %d: no data counters", device, p0.Number)
	}
	begin := time.Now()
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(window):
	}
	p1 := n.Read().Port(device, p0.Number)
	if p1 == nil {
		return 0, fmt.Errorf("%s port %d vanished", device, p0.Number)
	}
	rx1, tx1, ok := p1.DataBytes()
	if !ok {
		return 0, fmt.Errorf("%s port %d: no data counters", device, p0.Number)
	}
	if rx1 < rx0 || tx1 < tx0 {
		return 0, nil // counter reset: no evidence of load
	}
	elapsed := time.Since(begin).Seconds()
	busiest := max(float64(rx1-rx0), float64(tx1-tx0))
	return busiest / elapsed / (p0.RateBitsPerSecond / 8), nil
}

// PriorityTraffic reads the device's first Ethernet port: its RDMA data counters
// and the per-priority byte counters of its netdev (of the bond's slaves, summed,
// for a RoCE LAG port, where the physical ports count the frames).
func (n SnapshotNode) PriorityTraffic(device string) (PriorityTraffic, bool) {
	snap := n.Read()
	d := snap.Device(device)
	if d == nil {
		return PriorityTraffic{}, false
	}
	for _, p := range d.Ports {
		if !p.Ethernet() || p.Interface == "" {
			continue
		}
		var out PriorityTraffic
		out.RDMARX, out.RDMATX, out.HaveRDMA = p.DataBytes()
		netdevs := []string{p.Interface}
		if len(p.BondSlaves) > 0 {
			netdevs = p.BondSlaves
		}
		any := false
		for _, nd := range netdevs {
			st := snap.Ethtool[nd]
			if st == nil {
				continue
			}
			for prio := 0; prio < 8; prio++ {
				tx, ok1 := st.Get(node.FamilyPriorityBytes, node.DirTX, prio, "")
				rx, ok2 := st.Get(node.FamilyPriorityBytes, node.DirRX, prio, "")
				if ok1 || ok2 {
					out.TX[prio] += tx
					out.RX[prio] += rx
					out.Have[prio], any = true, true
				}
			}
		}
		return out, any
	}
	return PriorityTraffic{}, false
}

// GPUDirectAvailable says whether the node offers GPUDirect RDMA; not known
// on a node without GPUs or when the gpu source did not run.
func (n SnapshotNode) GPUDirectAvailable() (available, known bool) {
	s := n.Read()
	if s == nil || s.GPU == nil || len(s.GPU.GPUs) == 0 {
		return false, false
	}
	return s.GPU.GPUDirect.Available(), true
}

// NearestGPU is the GPU nearest the RDMA device in the PCIe tree (the best
// relation, then the lowest index); false without GPUs or when the device's
// place is unknown.
func (n SnapshotNode) NearestGPU(device string) (int, bool) {
	s := n.Read()
	if s == nil || s.GPU == nil {
		return 0, false
	}
	var nic *node.RDMANIC
	for _, c := range s.GPU.NICs {
		if c.Device == device {
			nic = c
		}
	}
	if nic == nil {
		return 0, false
	}
	best, idx := node.RelationUnknown, 0
	for _, g := range s.GPU.GPUs {
		r := node.Relate(g.Place, nic.Place)
		if r != node.RelationUnknown && (best == node.RelationUnknown || r < best) {
			best, idx = r, g.Index
		}
	}
	return idx, best != node.RelationUnknown
}
