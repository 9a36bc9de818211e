package health

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/roce-exporter/roce_exporter/node"
)

// The NIC's receive buffers and transmit scheduling, as mlx5 exposes them
// through DCB netlink (DCB_ATTR_DCB_BUFFER, IEEE ETS) and mlnx_qos prints
// them. PFC makes a priority lossless only if the buffer it lands in can
// hold what still arrives after the pause is sent, and only that priority:
// the driver turns a whole buffer lossless as soon as one of its priorities
// has PFC (port_buffer.c update_buffer_lossy).

// bufferTargets yields the RoCE targets whose receive-buffer split and PFC
// state were read, with the priorities that have PFC on.
func (e *env) bufferTargets(r *results, each func(t *target, d *node.DCBState, pfc []int)) {
	e.pfcTargets(r, func(t *target, d *node.DCBState) {
		pfc := enabledPriorities(d)
		switch {
		case d.Buffer == nil:
			r.skip(t.subject(), Textf("%s reports no receive-buffer split (DCB netlink's buffer object; mlx5 has one, most other drivers none): `dcb buffer show dev %s` or `mlnx_qos -i %s` (its \"buffer\" row) shows it where it exists", t.netdev, t.netdev, t.netdev))
		case len(pfc) == 0:
			r.skip(t.subject(), Textf("PFC is off on every priority of %s: no receive buffer is lossless (pfc_enabled_on_roce_priority judges whether one should be)", t.netdev))
		default:
			each(t, d, pfc)
		}
	})
}

// buffersOf groups priorities by the receive buffer they land in.
func buffersOf(b *node.ReceiveBuffer) map[int][]int {
	out := map[int][]int{}
	for p, buf := range b.PriorityBuffer {
		out[int(buf)] = append(out[int(buf)], p)
	}
	return out
}

// prio2bufferFix moves the PFC priorities into buffer 1 and every other
// priority into buffer 0.
func prio2bufferFix(netdev string, pfc []int) Text {
	list := make([]string, 8)
	var dcbArgs []string
	for p := range list {
		list[p] = "0"
		if slices.Contains(pfc, p) {
			list[p] = "1"
			dcbArgs = append(dcbArgs, fmt.Sprintf("%d:1", p))
		}
	}
	return Textf("give the PFC priorities a receive buffer of their own: `mlnx_qos -i %[1]s --prio2buffer %[2]s` (mlnx-tools), or with iproute2 `dcb buffer set dev %[1]s prio-buffer all:0 %[3]s`; then size that buffer for PFC (pfc_headroom_sufficient); with DCBX in firmware (`mlnx_qos` prints \"DCBX mode: Firmware controlled\") the firmware moves a PFC priority into its own buffer by itself once PFC is set%[4]s",
		netdev, strings.Join(list, ","), strings.Join(dcbArgs, " "), Textf(persistNote))
}

func checkBufferIsolation(e *env, r *results) {
	e.bufferTargets(r, func(t *target, d *node.DCBState, pfc []int) {
		groups := buffersOf(d.Buffer)
		var bad []Text
		var lossless []Text
		for _, buf := range slices.Sorted(maps.Keys(groups)) {
			var on, off []int
			for _, p := range groups[buf] {
				if d.PFCEnabled[p] {
					on = append(on, p)
				} else {
					off = append(off, p)
				}
			}
			if len(on) == 0 {
				continue
			}
			lossless = append(lossless, Textf("buffer %d (priority %s)", buf, prioList(on)))
			if len(off) > 0 {
				bad = append(bad, Textf("receive buffer %d holds PFC priority %s and lossy priority %s", buf, prioList(on), prioList(off)))
			}
		}
		if len(bad) == 0 {
			r.ok(t.subject(), Textf("only PFC priorities in the lossless %s", JoinTexts(lossless, ", ")))
			return
		}
		r.fail(t.subject(), Textf("%s: mlx5 makes a buffer lossless when any of its priorities has PFC, so the lossy traffic is paused together with RoCE, spreads congestion it should drop, and uses up the headroom RoCE's pauses need", JoinTexts(bad, "; ")),
			prio2bufferFix(t.netdev, pfc))
	})
}

// thousands writes 150880 as 150,880.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func checkPFCHeadroom(e *env, r *results) {
	e.bufferTargets(r, func(t *target, d *node.DCBState, pfc []int) {
		subj := t.subject()
		switch {
		case t.iface == nil:
			r.skip(subj, t.missingReason("netdev"))
			return
		case t.iface.Driver != "mlx5_core":
			r.skip(subj, Textf("the PFC headroom formula judged here is mlx5's; %s's driver is %s", t.netdev, orPlaceholder(t.iface.Driver, "unknown")))
			return
		case t.iface.SpeedMbps <= 0:
			r.skip(subj, Textf("the link speed of %s is unknown (link down?): the headroom PFC needs grows with it", t.netdev))
			return
		case t.iface.MTU <= 0:
			r.skip(subj, Textf("the MTU of %s could not be read", t.netdev))
			return
		case d.PFCDelay <= 0:
			r.skip(subj, Textf("%s reports no cable length (the PFC delay field, mlnx_qos's \"Cable len\")", t.netdev))
			return
		}
		cable, speed, mtu := d.PFCDelay, t.iface.SpeedMbps, t.iface.MTU
		xoff := node.MLX5PFCXoffBytes(cable, speed, mtu)
		need := xoff + node.MLX5MinimumMaxMTU
		basis := Textf("at %s Gb/s over the %d m of cable set for PFC and MTU %d, the driver keeps %s bytes of headroom above the pause threshold, (301 + 2.16 × %d) × %s + 2.72 × %d, plus at least %s for a full frame: %s bytes",
			num(float64(speed)/1000), cable, mtu, thousands(xoff), cable, num(float64(max(speed, 40000))/1000), mtu, thousands(node.MLX5MinimumMaxMTU), thousands(need))
		groups := buffersOf(d.Buffer)
		var small []string
		var fixSizes []uint32
		ok := []string{}
		for _, buf := range slices.Sorted(maps.Keys(groups)) {
			var on []int
			for _, p := range groups[buf] {
				if d.PFCEnabled[p] {
					on = append(on, p)
				}
			}
			if len(on) == 0 {
				continue
			}
			size := int(d.Buffer.Size[buf])
			text := fmt.Sprintf("buffer %d (PFC priority %s) is %s bytes", buf, prioList(on), thousands(size))
			if size < need {
				small = append(small, text)
				if fixSizes == nil {
					fixSizes = slices.Clone(d.Buffer.Size[:])
				}
				fixSizes[buf] = uint32(need)
			} else {
				ok = append(ok, text)
			}
		}
		cableNote := Textf("")
		if cable == 7 {
			cableNote = Textf(" (7 m is the driver's default: set the real length if the cable is longer)")
		}
		if len(small) == 0 {
			r.ok(subj, Textf("%s; %s%s", strings.Join(ok, ", "), basis, cableNote))
			return
		}
		sizes := make([]string, len(fixSizes))
		for i, v := range fixSizes {
			sizes[i] = strconv.FormatUint(uint64(v), 10)
		}
		total := Textf("")
		if d.Buffer.TotalSize > 0 {
			total = Textf(" (the sizes must fit in the port's %s bytes)", thousands(int(d.Buffer.TotalSize)))
		}
		r.fail(subj, Textf("%s, too small: %s%s. The pause comes too late, the buffer overflows under incast and RoCE drops packets (rx_discards_phy) although PFC is on", strings.Join(small, ", "), basis, cableNote),
			Textf("enlarge the lossless buffer: `mlnx_qos -i %[1]s --buffer_size %[2]s`%[3]s; if the cable is longer than %[4]d m, set its length first so the driver sizes the headroom for it: `mlnx_qos -i %[1]s --cable_len=<metres>`%[5]s",
				t.netdev, strings.Join(sizes, ","), total, cable, Textf(persistNote)))
	})
}

// rocePriority is the one priority RoCE uses on the target: the plan's PFC
// priority, else the only one with PFC on.
func (e *env) rocePriority(t *target) (int, bool) {
	ps := e.rocePriorities(t)
	if len(ps) != 1 {
		return 0, false
	}
	return ps[0], true
}

// cnpPriority is the priority the NIC's CNPs travel on: the CNP DSCP's in
// DSCP trust, MLNX_OFED's cnp_802p_prio otherwise.
func (e *env) cnpPriority(d *node.DCBState) (int, bool) {
	dscp := -1
	if exp, ok := e.expectations(); ok && exp.CNPDSCP != nil {
		dscp = *exp.CNPDSCP
	} else if d.CNPDSCP != nil {
		dscp = *d.CNPDSCP
	}
	if d.Trust == node.TrustDSCP && d.DSCP != nil && dscp >= 0 {
		if p, ok := d.DSCP.Lookup(dscp); ok {
			return p, true
		}
	}
	if d.CNPPrio != nil {
		return *d.CNPPrio, true
	}
	return 0, false
}

// minRoCEShare is the least ETS share of the link the RoCE class should get:
// on a compute NIC RoCE is nearly all the traffic, and below half of the link
// another busy class can hold it under its line rate.
const minRoCEShare = 50

func checkETSShare(e *env, r *results) {
	e.dcbTargets(r, "ETS", func(t *target, d *node.DCBState) {
		subj := t.subject()
		prio, ok := e.rocePriority(t)
		switch {
		case !ok:
			r.skip(subj, Textf("the RoCE priority of %s is unknown: the plan sets no pfc_priority and PFC is not on exactly one priority", t.netdev))
			return
		case d.ETS == nil:
			r.skip(subj, Textf("%s reports no ETS configuration: `dcb ets show dev %s` or `mlnx_qos -i %s` (its \"tc:\" lines) shows it", t.netdev, t.netdev, t.netdev))
			return
		}
		ets := d.ETS
		tc := int(ets.PrioTC[prio])
		if ets.TSA[tc] == node.TSAVendor {
			r.skip(subj, Textf("RoCE priority %d is in traffic class %d, scheduled by the NIC's default (tsa vendor): no bandwidth shares are set to judge", prio, tc))
			return
		}
		var msgs []Text
		status := StatusOK
		roce := Textf("RoCE priority %d is in traffic class %d", prio, tc)
		switch ets.TSA[tc] {
		case node.TSAStrict:
			msgs = append(msgs, Textf("%s, strict priority: served before the ETS classes", roce))
		case node.TSAETS:
			share := int(ets.BandwidthPercent[tc])
			text := Textf("%s with an ETS share of %d%%", roce, share)
			switch {
			case share == 0:
				status = StatusFail
				msgs = append(msgs, Textf("%s: it gets only the bandwidth the other classes leave, and stalls whenever they are busy", text))
			case share < minRoCEShare:
				status = StatusWarn
				msgs = append(msgs, Textf("%s: while the other classes are busy RoCE gets %d%% of the link", text, share))
			default:
				msgs = append(msgs, text)
			}
		default:
			msgs = append(msgs, Textf("%s, scheduled by %s", roce, ets.TSA[tc]))
		}
		if cp, ok := e.cnpPriority(d); ok {
			ctc := int(ets.PrioTC[cp])
			cnp := Textf("CNPs (priority %d) in traffic class %d", cp, ctc)
			switch {
			case ctc == tc:
				msgs = append(msgs, Textf("%s, with RoCE", cnp))
			case ets.TSA[ctc] == node.TSAETS && ets.BandwidthPercent[ctc] == 0:
				status = StatusFail
				msgs = append(msgs, Textf("%s with an ETS share of 0%%: congestion notifications wait behind the traffic they are meant to slow down", cnp))
			default:
				msgs = append(msgs, Textf("%s (%s)", cnp, ets.TSA[ctc]))
			}
		}
		msg := JoinTexts(msgs, "; ")
		if status == StatusOK {
			r.ok(subj, msg)
			return
		}
		fix := etsFix(t.netdev, ets, tc)
		if status == StatusFail {
			r.fail(subj, msg, fix)
		} else {
			r.warn(subj, msg, fix)
		}
	})
}

// etsFix proposes shares that give the RoCE class half the link and split
// the rest over the other ETS classes as they are now; strict classes stay
// strict.
func etsFix(netdev string, ets *node.ETSState, rocetc int) Text {
	var others []int
	sum := 0
	for tc, tsa := range ets.TSA {
		if tc != rocetc && tsa == node.TSAETS {
			others = append(others, tc)
			sum += int(ets.BandwidthPercent[tc])
		}
	}
	bw := make([]int, 8)
	tsas := make([]string, 8)
	for tc := range tsas {
		tsas[tc] = ets.TSA[tc]
		if tsas[tc] != node.TSAStrict {
			tsas[tc] = node.TSAETS
		}
	}
	tsas[rocetc] = node.TSAETS
	bw[rocetc] = 100
	if len(others) > 0 {
		bw[rocetc] = minRoCEShare
		left := 100 - minRoCEShare
		for i, tc := range others {
			switch {
			case i == len(others)-1:
				bw[tc] = left
			case sum > 0:
				bw[tc] = (100 - minRoCEShare) * int(ets.BandwidthPercent[tc]) / sum
			default:
				bw[tc] = (100 - minRoCEShare) / len(others)
			}
			left -= bw[tc]
		}
	}
	bws := make([]string, 8)
	var dcbBW []string
	for tc, v := range bw {
		bws[tc] = strconv.Itoa(v)
		dcbBW = append(dcbBW, fmt.Sprintf("%d:%d", tc, v))
	}
	return Textf("give traffic class %[4]d (RoCE) at least half of the link: `mlnx_qos -i %[1]s -s %[2]s --tcbw %[3]s` (mlnx-tools; the shares of the ETS classes add up to 100), or with iproute2 `dcb ets set dev %[1]s tc-tsa %[5]s tc-bw %[6]s`; keep the CNPs' class strict or with a share of its own%[7]s",
		netdev, strings.Join(tsas, ","), strings.Join(bws, ","), rocetc, dcbTSA(tsas), strings.Join(dcbBW, " "), Textf(persistNote))
}

func dcbTSA(tsas []string) string {
	out := make([]string, len(tsas))
	for tc, v := range tsas {
		out[tc] = fmt.Sprintf("%d:%s", tc, v)
	}
	return strings.Join(out, " ")
}
