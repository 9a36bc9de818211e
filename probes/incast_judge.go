package probes

import (
	"fmt"
	"strings"

	"github.com/roce-exporter/roce_exporter/node"
)

// What an incast proves, read from the counters of one side's port before and
// after it (the node read twice through the pipeline, as every probe reads it).
// Each side judges only what it counts itself: the receiver the switch's ECN
// marks (np_ecn_marked_roce_packets), the CNPs its NIC sent back (np_cnp_sent)
// and the packets lost on their way to it (out_of_sequence, its own port's
// drops); a sender the pause frames the switch sent it (rx pause per priority,
// and every MAC control frame for the priorities its driver does not count),
// the CNPs it acted on (rp_cnp_handled, rp_cnp_ignored) and its retransmissions
// (packet_seq_err, local_ack_timeout_err, roce_adp_retrans). What only the
// other side counts is named in the result as unseen, never guessed.

// The hw_counters the incast reads (canonical names, node.CanonicalHWName).
const (
	hwECNMarked       = "np_ecn_marked_roce_packets"
	hwCNPSent         = "np_cnp_sent"
	hwCNPHandled      = "rp_cnp_handled"
	hwCNPIgnored      = "rp_cnp_ignored"
	hwOutOfSequence   = "out_of_sequence"
	hwPacketSeqErr    = "packet_seq_err"
	hwLocalAckTimeout = "local_ack_timeout_err"
	hwAdaptiveRetrans = "roce_adp_retrans"
)

var incastHWCounters = []string{hwECNMarked, hwCNPSent, hwCNPHandled, hwCNPIgnored, hwOutOfSequence, hwPacketSeqErr, hwLocalAckTimeout, hwAdaptiveRetrans}

// senderLossCounters are a requester's signs of lost packets: a NAK for a
// sequence gap, an ACK timeout, an adaptive retransmission.
var senderLossCounters = []string{hwPacketSeqErr, hwLocalAckTimeout, hwAdaptiveRetrans}

// incastReading is one device's port at one moment: the counters above that it
// has, and those of its netdev (of a RoCE LAG bond's slaves, summed, where the
// physical ports count).
type incastReading struct {
	hw     map[string]uint64
	rxData uint64
	txData uint64
	data   bool
	// Pause frames per priority; the driver shows a priority's only while PFC
	// is on there (mlx5).
	rxPause, txPause         [8]uint64
	haveRXPause, haveTXPause [8]bool
	rxGlobalPause            uint64
	haveRXGlobalPause        bool
	rxMACControl             uint64
	haveRXMACControl         bool
	rxPHYDiscards            uint64
	haveRXPHYDiscards        bool
	prioDiscards             [8]uint64
	havePrioDiscards         [8]bool
}

// incastReadingOf reads the device's first Ethernet port; false when the node
// has no such port.
func incastReadingOf(s *node.Snapshot, device string) (incastReading, bool) {
	if s == nil {
		return incastReading{}, false
	}
	d := s.Device(device)
	if d == nil {
		return incastReading{}, false
	}
	for _, p := range d.Ports {
		if !p.Ethernet() {
			continue
		}
		r := incastReading{hw: map[string]uint64{}}
		for _, name := range incastHWCounters {
			if v, ok := p.HWCounter(name); ok {
				r.hw[name] = v
			}
		}
		r.rxData, r.txData, r.data = p.DataBytes()
		netdevs := []string{p.Interface}
		if len(p.BondSlaves) > 0 {
			netdevs = p.BondSlaves
		}
		for _, nd := range netdevs {
			st := s.Ethtool[nd]
			if nd == "" || st == nil {
				continue
			}
			for _, v := range st.Values {
				r.add(v)
			}
		}
		return r, true
	}
	return incastReading{}, false
}

func (r *incastReading) add(v node.EthtoolValue) {
	inPrio := v.Priority >= 0 && v.Priority < 8
	switch {
	case v.Family == node.FamilyPFCPauseFrames && inPrio && v.Direction == node.DirRX:
		r.rxPause[v.Priority] += v.Value
		r.haveRXPause[v.Priority] = true
	case v.Family == node.FamilyPFCPauseFrames && inPrio && v.Direction == node.DirTX:
		r.txPause[v.Priority] += v.Value
		r.haveTXPause[v.Priority] = true
	case v.Family == node.FamilyGlobalPauseFrames && v.Direction == node.DirRX:
		r.rxGlobalPause += v.Value
		r.haveRXGlobalPause = true
	case v.Family == node.FamilyMACControlFrames && v.Direction == node.DirRX:
		r.rxMACControl += v.Value
		r.haveRXMACControl = true
	case v.Family == node.FamilyPHYDiscards && v.Direction == node.DirRX:
		r.rxPHYDiscards += v.Value
		r.haveRXPHYDiscards = true
	case v.Family == node.FamilyPriorityDiscards && inPrio && v.Direction == node.DirRX:
		r.prioDiscards[v.Priority] += v.Value
		r.havePrioDiscards[v.Priority] = true
	}
}

// incastDelta is what moved between two readings; a counter missing from
// either, or one that went backwards (a reset), is unknown, never zero.
type incastDelta struct {
	before, after incastReading
	// moved holds every known delta by a driver-neutral name, for the result.
	moved map[string]uint64
}

func newIncastDelta(before, after incastReading) *incastDelta {
	return &incastDelta{before: before, after: after, moved: map[string]uint64{}}
}

func diff(a, b uint64, haveA, haveB bool) (uint64, bool) {
	if !haveA || !haveB || b < a {
		return 0, false
	}
	return b - a, true
}

// hw is the growth of a hw_counters file.
func (d *incastDelta) hw(name string) (uint64, bool) {
	a, okA := d.before.hw[name]
	b, okB := d.after.hw[name]
	return d.recordDiff(name, a, b, okA, okB)
}

// recordDiff is diff, kept under name for the result when known.
func (d *incastDelta) recordDiff(name string, a, b uint64, haveA, haveB bool) (uint64, bool) {
	v, ok := diff(a, b, haveA, haveB)
	if ok {
		d.moved[name] = v
	}
	return v, ok
}

func (d *incastDelta) rxPause(p int) (uint64, bool) {
	return d.recordDiff(fmt.Sprintf("rx_pause_priority_%d", p), d.before.rxPause[p], d.after.rxPause[p], d.before.haveRXPause[p], d.after.haveRXPause[p])
}

func (d *incastDelta) txPause(p int) (uint64, bool) {
	return d.recordDiff(fmt.Sprintf("tx_pause_priority_%d", p), d.before.txPause[p], d.after.txPause[p], d.before.haveTXPause[p], d.after.haveTXPause[p])
}

// rxPauseElsewhere is the pause frames this port received for priorities other
// than prio: the counted ones of the other priorities, and the MAC control
// frames that no per-priority or global pause counter accounts for (pause
// frames of a priority whose PFC is off on this host, which mlx5 counts
// nowhere else). prios lists the other priorities that were counted.
func (d *incastDelta) rxPauseElsewhere(prio int) (frames uint64, prios []int) {
	var counted uint64
	countedKnown := true
	for p := 0; p < 8; p++ {
		v, ok := d.rxPause(p)
		if !ok {
			if d.before.haveRXPause[p] || d.after.haveRXPause[p] {
				countedKnown = false // a reset
			}
			continue
		}
		counted += v
		if p != prio && v > 0 {
			frames += v
			prios = append(prios, p)
		}
	}
	if global, ok := diff(d.before.rxGlobalPause, d.after.rxGlobalPause, d.before.haveRXGlobalPause, d.after.haveRXGlobalPause); ok {
		counted += global
	}
	if mac, ok := diff(d.before.rxMACControl, d.after.rxMACControl, d.before.haveRXMACControl, d.after.haveRXMACControl); ok && countedKnown && mac > counted {
		d.moved["rx_pause_priority_uncounted"] = mac - counted
		frames += mac - counted
		prios = append(prios, -1)
	}
	return frames, prios
}

// receiverDrops is what the receiving port lost: out-of-sequence packets (a
// gap in a queue pair's sequence: lost in the fabric or by the NIC) and the
// NIC's own buffer drops (rx_discards_phy, the RoCE priority's discards).
func (d *incastDelta) receiverDrops(prio int) (fabric, nic uint64, known bool) {
	oos, okOOS := d.hw(hwOutOfSequence)
	phy, okPHY := d.recordDiff("rx_discards_phy", d.before.rxPHYDiscards, d.after.rxPHYDiscards, d.before.haveRXPHYDiscards, d.after.haveRXPHYDiscards)
	pd, okPD := d.recordDiff(fmt.Sprintf("rx_discards_priority_%d", prio), d.before.prioDiscards[prio], d.after.prioDiscards[prio], d.before.havePrioDiscards[prio], d.after.havePrioDiscards[prio])
	return oos, max(phy, pd), okOOS || okPHY || okPD
}

// senderLoss sums a requester's loss counters that it has.
func (d *incastDelta) senderLoss() (uint64, []string, bool) {
	var total uint64
	var moved []string
	known := false
	for _, name := range senderLossCounters {
		if v, ok := d.hw(name); ok {
			known = true
			total += v
			if v > 0 {
				moved = append(moved, fmt.Sprintf("%s +%d", name, v))
			}
		}
	}
	return total, moved, known
}

// incastExpect is what the plan says the fabric must do.
type incastExpect struct {
	rocePrio int
	// ecn is false when the plan says ECN is off (expectations.ecn: false):
	// then missing marks are not a fault.
	ecn bool
	// senders are the other side of a receiver; receiver that of a sender.
	senders  []string
	receiver string
}

// incastSaturation is the share of the receiver's port rate the senders
// together must reach before a run without any mark counts as switch_no_ecn:
// below it the port was not oversubscribed (a sender limited by its host or
// started late), and no switch marks an idle queue. A fabric with PFC and
// without ECN carries ~95% or more (the switch pauses, the port stays full).
const incastSaturation = 0.8

// judgeIncastReceiver judges the receiver's side. It never names a cause only
// the senders count: those go to the result's unseen list.
func judgeIncastReceiver(res *Result, before, after incastReading, want incastExpect, portBytesPerSecond float64) verdict {
	d := newIncastDelta(before, after)
	in := res.Incast
	defer func() { in.Counters = d.moved }()
	p := want.rocePrio
	others := strings.Join(want.senders, ", ")
	in.Unseen = append(in.Unseen, fmt.Sprintf("the pause frames the switch sent the senders (%s) and the CNPs they acted on: their own incast results", others))

	fabric, nic, dropsKnown := d.receiverDrops(p)
	txPause, txKnown := d.txPause(p)
	switch {
	case nic > 0:
		res.Warnings = append(res.Warnings, fmt.Sprintf("this NIC dropped %d packets for lack of buffer under the %d:1 incast (rx_discards_phy, rx_prio%d_discards) and sent %s pause frames on priority %d",
			nic, len(want.senders), p, countText(txPause, txKnown), p))
		return failed(ReasonIncastReceiverDrops)
	case fabric > 0:
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d packets of the %d:1 incast never arrived in order (out_of_sequence): the switch dropped them instead of pausing the senders on priority %d; whether it paused them on another priority only their results say",
			fabric, len(want.senders), p))
		return failed(ReasonSwitchNoPFC)
	case !dropsKnown:
		in.Unseen = append(in.Unseen, "drops: this port has neither out_of_sequence nor its NIC's discard counters")
	}

	marked, markedKnown := d.hw(hwECNMarked)
	sent, sentKnown := d.hw(hwCNPSent)
	switch {
	case !want.ecn:
		in.Unseen = append(in.Unseen, "ECN: the plan turns it off (expectations.ecn: false)")
	case !markedKnown && !sentKnown:
		in.Unseen = append(in.Unseen, "ECN: this port has no np_ecn_marked_roce_packets or np_cnp_sent (congestion counters need cc_query_allowed)")
	case marked == 0 && sent == 0:
		if portBytesPerSecond > 0 && in.BytesPerSecond < incastSaturation*portBytesPerSecond {
			// Not congested enough to expect a mark: say so, judge nothing.
			res.skip(fmt.Sprintf("the senders reached %.0f%% of the port rate together and nothing was marked: the port was not oversubscribed, so the switch's ECN cannot be judged", 100*in.BytesPerSecond/portBytesPerSecond))
			return verdict{}
		}
		res.Warnings = append(res.Warnings, fmt.Sprintf("no packet of the %d:1 incast arrived ECN-marked and this NIC sent no CNP: the switch does not mark RoCE on priority %d", len(want.senders), p))
		return failed(ReasonSwitchNoECN)
	case marked > 0 && sentKnown && sent == 0:
		res.Warnings = append(res.Warnings, fmt.Sprintf("the switch marked %d packets but this NIC sent no CNP: its notification point is off for priority %d", marked, p))
		return failed(ReasonHostECNOff)
	}
	if txKnown && txPause > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("this NIC itself paused the switch %d times on priority %d: the host, not the switch port, was the bottleneck for part of the run", txPause, p))
	}
	return verdict{}
}

// judgeIncastSender judges a sender's side.
func judgeIncastSender(res *Result, before, after incastReading, want incastExpect) verdict {
	d := newIncastDelta(before, after)
	in := res.Incast
	defer func() { in.Counters = d.moved }()
	p := want.rocePrio
	in.Unseen = append(in.Unseen, fmt.Sprintf("the ECN marks and the drops at the receiver (%s): its own incast result", want.receiver))

	paused, pausedKnown := d.rxPause(p)
	elsewhere, prios := d.rxPauseElsewhere(p)
	loss, lossMoved, lossKnown := d.senderLoss()
	if !pausedKnown {
		in.Unseen = append(in.Unseen, fmt.Sprintf("pause frames on priority %d: this NIC counts none there (PFC off on this host? see pfc_enabled_on_roce_priority)", p))
	}
	switch {
	case elsewhere > 0 && paused == 0:
		res.Warnings = append(res.Warnings, fmt.Sprintf("the switch paused this sender %d times on %s, never on the RoCE priority %d: its PFC protects another priority than the one RoCE travels on", elsewhere, priorityNames(prios), p))
		return failed(ReasonPFCOnWrongPriority)
	case loss > 0 && paused == 0:
		res.Warnings = append(res.Warnings, fmt.Sprintf("this sender retransmitted under the %d:1 incast (%s) and the switch never paused it on priority %d: it dropped instead", len(want.senders), strings.Join(lossMoved, ", "), p))
		return failed(ReasonSwitchNoPFC)
	case loss > 0:
		res.Warnings = append(res.Warnings, fmt.Sprintf("this sender retransmitted (%s) although the switch paused it %d times on priority %d: a hop of the path drops on that priority (no PFC there, or too little headroom for the cable)", strings.Join(lossMoved, ", "), paused, p))
		return failed(ReasonSwitchNoPFC)
	case !lossKnown:
		in.Unseen = append(in.Unseen, "loss: this NIC has none of packet_seq_err, local_ack_timeout_err, roce_adp_retrans")
	}

	handled, handledKnown := d.hw(hwCNPHandled)
	ignored, _ := d.hw(hwCNPIgnored)
	if want.ecn && ignored > 0 && handled == 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d CNPs reached this sender and were ignored (rp_cnp_ignored): its reaction point is off for priority %d", ignored, p))
		return failed(ReasonHostECNOff)
	}
	if paused == 0 && handled == 0 && loss == 0 && elsewhere == 0 {
		res.skip(fmt.Sprintf("nothing held this sender back: no pause frame, no CNP, no retransmission; from here the switch port was not oversubscribed (see %s's result)", want.receiver))
		return verdict{}
	}
	if want.ecn && handledKnown && handled == 0 {
		in.Unseen = append(in.Unseen, fmt.Sprintf("ECN: no CNP reached this sender; whether the switch marked at all only %s counts", want.receiver))
	}
	return verdict{}
}

func countText(v uint64, known bool) string {
	if !known {
		return "an unknown number of"
	}
	return fmt.Sprint(v)
}

// priorityNames names the priorities pause frames came on; -1 stands for the
// frames no per-priority counter of this host counts.
func priorityNames(prios []int) string {
	var parts []string
	for _, p := range prios {
		if p < 0 {
			parts = append(parts, "a priority this host does not count (PFC off there; rx_mac_control_phy)")
		} else {
			parts = append(parts, fmt.Sprintf("priority %d", p))
		}
	}
	return strings.Join(parts, " and ")
}
