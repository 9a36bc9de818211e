package probes

import (
	"fmt"
	"time"

	"github.com/roce-exporter/roce_exporter/node"
)

// priorityTraffic is a reading of the counters that tell which 802.1p priority
// carried a device's traffic: the RDMA data counters of its port and the
// per-priority byte counters of its netdev (ethtool tx/rx_prio<N>_bytes and the
// bnxt/ice equivalents node maps onto node.FamilyPriorityBytes).
type priorityTraffic struct {
	// rdmaTX and rdmaRX are port_xmit_data and port_rcv_data in bytes; haveRDMA
	// is false when the port has no data counters.
	rdmaTX, rdmaRX uint64
	haveRDMA       bool
	// tx and rx are the bytes per priority; have[p] marks the priorities read.
	tx, rx [8]uint64
	have   [8]bool
}

// priorityTrafficOf reads the device's first Ethernet port in a snapshot: its
// RDMA data counters and the per-priority byte counters of its netdev (of the
// bond's slaves, summed, for a RoCE LAG port, where the physical ports count
// the frames). False when no priority counter was read.
func priorityTrafficOf(s *node.Snapshot, device string) (priorityTraffic, bool) {
	if s == nil {
		return priorityTraffic{}, false
	}
	d := s.Device(device)
	if d == nil {
		return priorityTraffic{}, false
	}
	for _, p := range d.Ports {
		if !p.Ethernet() || p.Interface == "" {
			continue
		}
		var out priorityTraffic
		out.rdmaRX, out.rdmaTX, out.haveRDMA = p.DataBytes()
		netdevs := []string{p.Interface}
		if len(p.BondSlaves) > 0 {
			netdevs = p.BondSlaves
		}
		any := false
		for _, nd := range netdevs {
			st := s.Ethtool[nd]
			if st == nil {
				continue
			}
			for prio := 0; prio < 8; prio++ {
				tx, ok1 := st.Get(node.FamilyPriorityBytes, node.DirTX, prio, "")
				rx, ok2 := st.Get(node.FamilyPriorityBytes, node.DirRX, prio, "")
				if ok1 || ok2 {
					out.tx[prio] += tx
					out.rx[prio] += rx
					out.have[prio], any = true, true
				}
			}
		}
		return out, any
	}
	return priorityTraffic{}, false
}

// Thresholds of the wrong-priority verdict: the priority counters count whole
// frames (headers on top of the payload perftest counts), so a test on the RoCE
// priority shows at least the bytes it moved there; under half means most went
// elsewhere. Below the floor the test moved too little to tell from other traffic.
const (
	minRoCEPriorityShare = 0.5
	minBytesToJudge      = 64 << 20
)

// judgePriority proves where the bytes of a bandwidth run went: the client is
// the sender of ib_write_bw, so the bytes it moved (the growth of its port's
// port_xmit_data, or the reported bandwidth times the duration) must appear in
// the tx byte counter of the RoCE priority rocePrio. A run that measured no
// bandwidth (it failed for another reason) is left alone.
func judgePriority(res *Result, before, after priorityTraffic, rocePrio int, duration time.Duration) verdict {
	if res.measuredBandwidth() <= 0 || !after.have[rocePrio] || !before.have[rocePrio] {
		return verdict{}
	}
	delta := func(p int) uint64 {
		if after.tx[p] < before.tx[p] {
			return 0 // counter reset
		}
		return after.tx[p] - before.tx[p]
	}
	var anyPrio uint64
	for p := 0; p < 8; p++ {
		anyPrio += delta(p)
	}
	var moved uint64
	switch {
	case before.haveRDMA && after.haveRDMA && after.rdmaTX > before.rdmaTX:
		moved = after.rdmaTX - before.rdmaTX
	case anyPrio > 0 && duration > 0:
		// No RDMA data counters: what perftest says it sent.
		moved = uint64(res.measuredBandwidth() * duration.Seconds())
	default:
		// Not one counter moved while the test ran: the counters are not live (a
		// replayed node), so there is nothing to prove either way.
		return verdict{}
	}
	if moved < minBytesToJudge {
		return verdict{}
	}
	share := float64(delta(rocePrio)) / float64(moved)
	res.PriorityProof = &PriorityProof{RoCEPriorityShare: share}
	if share >= minRoCEPriorityShare {
		return verdict{}
	}
	top := -1
	var topBytes uint64
	for p := 0; p < 8; p++ {
		if p != rocePrio && after.have[p] && delta(p) > topBytes {
			top, topBytes = p, delta(p)
		}
	}
	msg := fmt.Sprintf("the test sent %d bytes but priority %d (PFC, RoCE) counted %d (%.0f%%)", moved, rocePrio, delta(rocePrio), 100*share)
	if top >= 0 {
		res.PriorityProof.CarriedOnPriority = &top
		msg += fmt.Sprintf("; priority %d carried %d", top, topBytes)
	}
	res.Warnings = append(res.Warnings, msg)
	return verdict{reason: ReasonWrongPriority}
}
