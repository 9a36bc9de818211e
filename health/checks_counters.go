package health

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/roce-exporter/roce_exporter/node"
)

// Shares of time paused on one priority (rate of the pause duration counter, as
// yuuki/rdma_exporter's design derives it). A few percent is normal back-pressure
// and more is heavy congestion worth a warning, but even half the time paused can
// be legitimate incast; a storm or a deadlock is pause that (almost) never lets go,
// as switch PFC watchdogs define it (SONiC: paused for more than 99% of the
// detection window). The alerts draw the same line (alerts/README.md).
const (
	pauseWarnShare = 0.05
	pauseFailShare = 0.95
)

// pmaDrivers are the PCI drivers whose RDMA ports have IBA PMA counters/; bnxt_re,
// irdma and efa have only hw_counters/ by design.
var pmaDrivers = map[string]bool{"mlx5_core": true, "mlx4_core": true}

// hwOptional says, for the PCI drivers whose ports may rightly have no
// hw_counters/, when they have one. mlx4 registers per-port hw_counters (its
// diagnostic counters) only when the firmware reports per-port diagnostics
// (MLX4_DEV_CAP_FLAG2_DIAG_PER_PORT; kernel commit 378c67413de1), and
// MLNX_OFED 3.x never did.
var hwOptional = map[string]string{
	"mlx4_core": "mlx4 creates it only on firmware with per-port diagnostic counters",
}

func checkCountersReadable(e *env, r *results) {
	for _, t := range e.targets {
		subj := t.devSubject()
		if t.port == nil {
			r.skip(subj, t.missingReason("RDMA port"))
			continue
		}
		p := t.port
		dir := Textf("/sys/class/infiniband/%s/ports/%d", p.Device, p.Number)
		var missing []Text
		var lost []Text
		var paths []Text
		if len(p.Counters) == 0 && pmaDrivers[t.dev.Driver] {
			missing, paths = append(missing, Textf("counters/")), append(paths, Textf("%s/counters", dir))
			lost = append(lost, Textf("the link and traffic counters of counters/ (link_downed, symbol_error, port_rcv_errors, port_rcv_data…)"))
		}
		if len(p.HWCounters) == 0 && (hwOptional[t.dev.Driver] == "" || len(p.Counters) == 0) {
			missing, paths = append(missing, Textf("hw_counters/")), append(paths, Textf("%s/hw_counters", dir))
			lost = append(lost, Textf("the transport and congestion counters of hw_counters/ (out_of_sequence, local_ack_timeout_err, req_transport_retries_exceeded, rp_cnp_ignored…)"))
		}
		if len(missing) > 0 {
			fix := Textf("`ls -l %s` and the exporter log show which reads failed; reading needs access to sysfs (run as root or in a privileged container with the host's /sys); firmware-restricted functions refuse counter queries, so exclude them with --collector.rdma.device-exclude", JoinTexts(paths, " "))
			if len(p.Counters) == 0 {
				fix = Textf("%s; `dmesg | grep -i mad` shows PMA query errors", fix)
			}
			r.warn(subj, Textf("%s of %s gave no values: %s are missing from the metrics and from these checks", JoinTexts(missing, " and "), dir, JoinTexts(lost, " and ")), fix)
			continue
		}
		if len(p.Counters) == 0 {
			r.ok(subj, Textf("%d hw_counters/ values read (the %s driver has no counters/ by design)", len(p.HWCounters), t.dev.Driver))
			continue
		}
		if len(p.HWCounters) == 0 {
			r.ok(subj, Textf("%d counters/ values read; no hw_counters/ (%s)", len(p.Counters), hwOptional[t.dev.Driver]))
			continue
		}
		r.ok(subj, Textf("%d counters/ and %d hw_counters/ values read", len(p.Counters), len(p.HWCounters)))
	}
}

type pauseKey struct {
	dir  string
	prio int
}

func pauseDurations(st *node.EthtoolStats) map[pauseKey]uint64 {
	out := map[pauseKey]uint64{}
	for _, v := range st.Values {
		if v.Family == node.FamilyPFCPauseDuration {
			out[pauseKey{v.Direction, v.Priority}] = v.Value
		}
	}
	return out
}

func stormFix(netdev string, rx, tx, storm bool) Text {
	var parts []Text
	if rx {
		parts = append(parts, Textf("rx pause means the switch is pausing %s: look for congestion or a PFC storm in the fabric (the switch port's PFC counters and PFC watchdog log, and the host at the other end of the congested path)", netdev))
	}
	if tx || storm {
		parts = append(parts, Textf("tx pause means this host cannot drain its receive buffer: check the pcie_* findings, `ethtool -S %s | grep -E 'discard|stalled|buffer'`, IOMMU and CPU power settings, and the GPUDirect path", netdev))
	}
	if storm {
		parts = append(parts, Textf("storm error events mean the NIC's watchdog stopped sending pause frames after its timeout (`ethtool --get-tunable %s pfc-prevention-tout`), so packets were dropped", netdev))
	}
	return JoinTexts(parts, "; ")
}

func checkPFCStorm(e *env, r *results) {
	e.ethtoolTargets(r, "a PFC pause storm", func(t *target, st *node.EthtoolStats) {
		subj := t.subject()
		dur := pauseDurations(st)
		stormErr, haveErr := st.Get(node.FamilyPFCPauseStormEvents, "", -1, node.StormError)
		stormWarn, haveWarn := st.Get(node.FamilyPFCPauseStormEvents, "", -1, node.StormWarning)
		if len(dur) == 0 && !haveErr && !haveWarn {
			r.skip(subj, Textf("%s reports no PFC pause-duration or storm counters (PFC off, or a driver without them)", t.netdev))
			return
		}
		prev := e.prevEthtool(t.netdev)
		dt, okdt := e.interval()
		if prev == nil || !okdt {
			if stormErr > 0 {
				r.warn(subj, Textf("%d PFC storm error event(s) since boot on %s: the NIC's watchdog stopped sending pause frames at some time, and packets were dropped then; with one sample it is unknown whether the storm is ongoing", stormErr, t.netdev), stormFix(t.netdev, false, false, true))
			} else {
				r.skip(subj, Textf("the share of time paused needs two samples; the next scrape can tell"))
			}
			return
		}
		prevDur := pauseDurations(prev)
		keys := make([]pauseKey, 0, len(dur))
		for k := range dur {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if keys[i].prio != keys[j].prio {
				return keys[i].prio < keys[j].prio
			}
			return keys[i].dir < keys[j].dir
		})
		worst, worstKey := 0.0, pauseKey{}
		var hot []string
		hotRX, hotTX := false, false
		for _, k := range keys {
			pv, ok := prevDur[k]
			if !ok {
				continue
			}
			d, ok := delta(dur[k], pv)
			if !ok {
				continue
			}
			share := float64(d) / (dt * 1e6)
			if share > worst || worstKey.dir == "" {
				worst, worstKey = share, k
			}
			if share > pauseWarnShare {
				hot = append(hot, fmt.Sprintf("%s priority %d paused %s of the time", k.dir, k.prio, pct(share)))
				hotRX = hotRX || k.dir == "rx"
				hotTX = hotTX || k.dir == "tx"
			}
		}
		var errInc, warnInc uint64
		if pv, ok := prev.Get(node.FamilyPFCPauseStormEvents, "", -1, node.StormError); ok && haveErr {
			errInc, _ = delta(stormErr, pv)
		}
		if pv, ok := prev.Get(node.FamilyPFCPauseStormEvents, "", -1, node.StormWarning); ok && haveWarn {
			warnInc, _ = delta(stormWarn, pv)
		}
		var parts []string
		parts = append(parts, hot...)
		if errInc > 0 {
			parts = append(parts, fmt.Sprintf("%d new storm error event(s)", errInc))
		}
		if warnInc > 0 {
			parts = append(parts, fmt.Sprintf("%d new storm warning event(s)", warnInc))
		}
		window := Textf(" in the last %s", secs(dt))
		fix := stormFix(t.netdev, hotRX, hotTX, errInc > 0)
		calm := Textf("no storm%s", window)
		if worstKey.dir != "" {
			calm = Textf("%s: at most %s of the time paused (%s priority %d)", calm, pct(worst), worstKey.dir, worstKey.prio)
		}
		switch {
		case errInc > 0 || worst > pauseFailShare:
			r.fail(subj, Textf("PFC storm on %s%s: %s", t.netdev, window, strings.Join(parts, ", ")), fix)
		case worst > pauseWarnShare || warnInc > 0:
			if fix.Empty() {
				fix = stormFix(t.netdev, false, true, false)
			}
			r.warn(subj, Textf("heavy PFC pausing on %s%s: %s", t.netdev, window, strings.Join(parts, ", ")), fix)
		case stormErr > 0:
			// The watchdog fired some time since boot: packets were dropped
			// then, which the one-sample run reports too.
			r.warn(subj, Textf("%s, but %d PFC storm error event(s) since boot on %s: the NIC's watchdog stopped sending pause frames at some time, and packets were dropped then", calm, stormErr, t.netdev),
				stormFix(t.netdev, false, false, true))
		default:
			r.ok(subj, calm)
		}
	})
}

func checkPHYErrors(e *env, r *results) {
	for _, t := range e.targets {
		subj := t.subject()
		if t.absent() {
			r.skip(subj, t.missingReason("netdev"))
			continue
		}
		st, why := e.ethtoolFor(t)
		if st == nil {
			r.skip(subj, why)
			continue
		}
		cur, ok := st.Get(node.FamilyPHYUncorrectedSymbolErrors, "", -1, "")
		if !ok {
			r.skip(subj, Textf("%s reports no uncorrected symbol error counter", t.netdev))
			continue
		}
		fix := Textf("uncorrected symbol errors are bit errors FEC could not repair, so packets were lost: clean and reseat the cable or transceiver of %[1]s, then replace it (and the switch-side optic) if errors continue; `ethtool -m %[1]s` shows optical power, `ethtool --show-fec %[1]s` must match the switch's FEC mode, `mlxlink -d %[2]s -c` shows the error rate", t.netdev, orPlaceholder(t.pciAddress(), "<pci address>"))
		var prevV uint64
		havePrev := false
		if prev := e.prevEthtool(t.netdev); prev != nil {
			prevV, havePrev = prev.Get(node.FamilyPHYUncorrectedSymbolErrors, "", -1, "")
		}
		w := e.window(cur, prevV, havePrev)
		switch {
		case w.rising():
			r.fail(subj, Textf("%d uncorrected PHY symbol error(s) on %s%s (%d since boot): the link is losing packets now", w.inc, t.netdev, w.last(), cur), fix)
		case cur > 0:
			r.warn(subj, Textf("%d uncorrected PHY symbol error(s) on %s since boot%s", cur, t.netdev, w.historyNote()), fix)
		case w.compared:
			r.ok(subj, Textf("no uncorrected PHY symbol errors%s, none since boot", w.last()))
		default:
			r.ok(subj, Textf("no uncorrected PHY symbol errors since boot"))
		}
	}
}

func checkLinkFlaps(e *env, r *results) {
	dt, okdt := e.interval()
	for _, t := range e.targets {
		subj := t.subject()
		if t.absent() {
			r.skip(subj, t.missingReason("netdev"))
			continue
		}
		type reading struct {
			name      Text
			cur, prev uint64
			havePrev  bool
		}
		var rs []reading
		if t.iface != nil {
			rd := reading{name: Textf("%s", Textf("carrier_changes")), cur: t.iface.CarrierChanges}
			if pi := e.prevInterface(t.netdev); pi != nil {
				rd.prev, rd.havePrev = pi.CarrierChanges, true
			}
			rs = append(rs, rd)
		}
		if t.port != nil {
			if v, ok := t.port.Counter("link_downed"); ok {
				rd := reading{name: Textf("%s", Textf("link_downed")), cur: v}
				if pp := e.prevPort(t.port); pp != nil {
					rd.prev, rd.havePrev = pp.Counter("link_downed")
				}
				rs = append(rs, rd)
			}
		}
		if st := e.snap.Ethtool[t.netdev]; st != nil {
			if v, ok := st.Get(node.FamilyPHYLinkDownEvents, "", -1, ""); ok {
				rd := reading{name: Textf("PHY link-down events"), cur: v}
				if ps := e.prevEthtool(t.netdev); ps != nil {
					rd.prev, rd.havePrev = ps.Get(node.FamilyPHYLinkDownEvents, "", -1, "")
				}
				rs = append(rs, rd)
			}
		}
		if len(rs) == 0 {
			r.skip(subj, Textf("no link-down counters for this port"))
			continue
		}
		var totals, incs []string
		compared := false
		for _, rd := range rs {
			totals = append(totals, fmt.Sprintf("%s %d", rd.name, rd.cur))
			if !rd.havePrev || !okdt {
				continue
			}
			if d, ok := delta(rd.cur, rd.prev); ok {
				compared = true
				if d > 0 {
					incs = append(incs, fmt.Sprintf("%s +%d", rd.name, d))
				}
			}
		}
		switch {
		case !compared:
			r.skip(subj, Textf("flaps show between two samples; since boot: %s", strings.Join(totals, ", ")))
		case len(incs) > 0:
			r.fail(subj, Textf("the link of %s went down in the last %s (%s): every flap breaks the RDMA connections over it", orPlaceholder(t.netdev, subj), secs(dt), strings.Join(incs, ", ")),
				Textf("check the cable or optic seating and cleanliness (`ethtool -m %[1]s`), the switch port's log for link-down reasons, `dmesg | grep -i %[1]s` for the host side, and `mlxlink -d %[2]s` for the link's error history", orPlaceholder(t.netdev, "<netdev>"), orPlaceholder(t.pciAddress(), "<pci address>")))
		default:
			r.ok(subj, Textf("no link-down in the last %s (since boot: %s)", secs(dt), strings.Join(totals, ", ")))
		}
	}
}

func checkTransportRetries(e *env, r *results) {
	const name = "req_transport_retries_exceeded"
	for _, t := range e.targets {
		subj := t.devSubject()
		if t.port == nil {
			r.skip(subj, t.missingReason("RDMA port"))
			continue
		}
		cur, ok := t.port.HWCounter(name)
		if !ok {
			r.skip(subj, Textf("the %s driver reports no %s counter", orPlaceholder(t.dev.Driver, "RDMA"), name))
			continue
		}
		fix := Textf("a queue pair gave up after all retransmissions, so packets were lost on the path or the peer stopped answering: check no_pfc_storm, no_uncorrected_phy_errors and the PFC/ECN findings on both ends and the switch, and the loss counters (out_of_sequence, packet_seq_err, local_ack_timeout_err) in the metrics")
		var prevV uint64
		havePrev := false
		if pp := e.prevPort(t.port); pp != nil {
			prevV, havePrev = pp.HWCounter(name)
		}
		w := e.window(cur, prevV, havePrev)
		switch {
		case w.rising():
			r.fail(subj, Textf("%s rose by %d%s (%d since boot): RDMA connections are being torn down", name, w.inc, w.last(), cur), fix)
		case cur > 0:
			r.warn(subj, Textf("%s is %d since boot (RDMA connections were torn down)%s", name, cur, w.historyNote()), fix)
		case w.compared:
			r.ok(subj, Textf("%s unchanged%s (0 since boot)", name, w.last()))
		default:
			r.ok(subj, Textf("%s is 0 since boot", name))
		}
	}
}

// Receive discards judged as a share of the packets received on the same class.
// A lossless (PFC) RoCE priority should drop nothing: a drop there means a pause
// came too late (headroom, PFC off on one side) or the host stopped draining its
// receive buffer, and every drop costs a Go-back-N retransmission of a whole window.
//
//   - discardFailRatio, 1 in 100,000: the loss RoCE deployment guides name as the
//     most RDMA tolerates before throughput falls sharply (spiderpool's "Configure
//     Lossless Network For RoCE": below 1e-05, ideally zero). Over the doctor's
//     5 s window it also needs discardFailPerSecond, so that one or two drops on a
//     nearly idle port (a ratio of 1e-3 out of a few thousand packets) do not fail.
//   - discardWarnRatio, 1 in a million: a tenth of that, loss that is measurable
//     but does not yet hurt; below it (one drop every few minutes at 30 Mpps is
//     1e-10) a fleet of a thousand ports would warn on noise.
//
// The same ratio judges the history: discards since boot against packets since
// boot, so a port that once dropped a handful of packets among billions stays ok.
const (
	discardWarnRatio     = 1e-6
	discardFailRatio     = 1e-5
	discardFailPerSecond = 1.0
)

// lossCounts are the receive discards of one class and the packets it received.
type lossCounts struct {
	discards, packets uint64
	haveDiscards      bool
	havePackets       bool
}

// sumEth adds the values of a family in one direction over the priorities that
// match; false when the NIC reports none of them.
func sumEth(st *node.EthtoolStats, family node.Family, dir string, match func(prio int) bool) (uint64, bool) {
	var sum uint64
	found := false
	for _, v := range st.Values {
		if v.Family == family && v.Direction == dir && match(v.Priority) {
			sum += v.Value
			found = true
		}
	}
	return sum, found
}

// lossOf reads the RoCE priorities' discards (every cause the driver splits them
// into: rx_prio<N>_discards per priority, and mlx5's buffer and congestion drops,
// which it counts per traffic class, for the classes the RoCE priorities are
// queued in) and packets; with no RoCE priority, the port's rx_discards_phy
// against all packets received. tcOf maps a priority to its traffic class.
func lossOf(st *node.EthtoolStats, prios []int, tcOf func(prio int) int) lossCounts {
	var l lossCounts
	if len(prios) > 0 {
		on := func(p int) bool { return slices.Contains(prios, p) }
		l.discards, l.haveDiscards = sumEth(st, node.FamilyPriorityDiscards, node.DirRX, on)
		onTC := func(tc int) bool {
			return slices.ContainsFunc(prios, func(p int) bool { return tcOf(p) == tc })
		}
		// A drop for lack of buffer may be counted both per priority and
		// per class (mlx5 documents both as "no receive buffer"): the larger
		// is what is known to have been lost.
		if d, ok := sumEth(st, node.FamilyTCDiscards, node.DirRX, onTC); ok {
			l.discards = max(l.discards, d)
			l.haveDiscards = true
		}
		l.packets, l.havePackets = sumEth(st, node.FamilyPriorityPackets, node.DirRX, on)
		return l
	}
	all := func(int) bool { return true }
	l.discards, l.haveDiscards = sumEth(st, node.FamilyPHYDiscards, node.DirRX, all)
	l.packets, l.havePackets = sumEth(st, node.FamilyPriorityPackets, node.DirRX, all)
	return l
}

// trafficClassOf maps the port's priorities to their traffic classes: the
// ETS map the NIC reported, else mlx5's default.
func (e *env) trafficClassOf(t *target) func(prio int) int {
	if d := e.snap.DCB[t.netdev]; d != nil && t.netdev != "" && d.ETS != nil {
		ets := d.ETS
		return func(p int) int {
			if p < 0 || p >= len(ets.PrioTC) {
				return node.DefaultTrafficClass(p)
			}
			return int(ets.PrioTC[p])
		}
	}
	return node.DefaultTrafficClass
}

// lossRatio is discards per packet received; +Inf when drops came with no packets
// counted (or no packet counter to count them).
func lossRatio(discards, packets uint64, havePackets bool) float64 {
	switch {
	case discards == 0:
		return 0
	case !havePackets || packets == 0:
		return math.Inf(1)
	}
	return float64(discards) / float64(packets)
}

// ratioText is "4.5e-4 of the 2667038631 packets received", or "" with no packets
// to compare against.
func ratioText(discards, packets uint64, havePackets bool) Text {
	if !havePackets || packets == 0 {
		return Textf("")
	}
	return Textf(" (%s of the %d packets received)", sci(float64(discards)/float64(packets)), packets)
}

// sci writes a small ratio as 4.5e-4.
func sci(v float64) string {
	m := strconv.FormatFloat(v, 'e', 1, 64)
	mant, exp, _ := strings.Cut(m, "e")
	n, _ := strconv.Atoi(exp)
	return strings.TrimSuffix(mant, ".0") + "e" + strconv.Itoa(n)
}

func checkDiscards(e *env, r *results) {
	e.ethtoolTargets(r, "the NIC's receive-drop count", func(t *target, st *node.EthtoolStats) {
		subj := t.subject()
		prios := e.rocePriorities(t)
		tcOf := e.trafficClassOf(t)
		cur := lossOf(st, prios, tcOf)
		class := "RoCE priority " + prioList(prios)
		if len(prios) > 0 && !cur.haveDiscards {
			// Not split by priority: the port's counter is what there is.
			prios, cur = nil, lossOf(st, nil, tcOf)
		}
		if len(prios) == 0 {
			class = Textf("all priorities (rx_discards_phy; the NIC does not split its drops by priority, so they may be on a lossy class)").String()
		}
		if !cur.haveDiscards {
			r.skip(subj, Textf("%s reports no receive-discard counters (rx_prio<N>_discards, rx_discards_phy)", t.netdev))
			return
		}
		var prev lossCounts
		havePrev := false
		if ps := e.prevEthtool(t.netdev); ps != nil {
			prev = lossOf(ps, prios, tcOf)
			havePrev = prev.haveDiscards
		}
		w := e.window(cur.discards, prev.discards, havePrev)
		pw := e.window(cur.packets, prev.packets, havePrev && cur.havePackets && prev.havePackets)
		fix := discardFix(t, prios)
		// Drops that cannot be put on the lossless class warn at most: they
		// may be TCP on a lossy priority, which recovers by itself.
		lossless := len(prios) > 0
		if w.rising() {
			ratio := lossRatio(w.inc, pw.inc, pw.compared)
			perSecond := float64(w.inc) / w.dt
			what := Textf("%s dropped %d received packet(s) of %s%s%s, %s/s", t.netdev, w.inc, class, w.last(), ratioText(w.inc, pw.inc, pw.compared), num(perSecond))
			switch {
			case lossless && pw.compared && ratio > discardFailRatio && perSecond >= discardFailPerSecond:
				r.fail(subj, Textf("%s: the NIC ran out of receive buffer on a class that must be lossless, and every drop makes RDMA retransmit", what), fix)
				return
			case ratio > discardWarnRatio:
				r.warn(subj, Textf("%s: the NIC ran out of receive buffer", what), fix)
				return
			}
		}
		total := Textf("%d received packet(s) of %s dropped since boot%s", cur.discards, class, ratioText(cur.discards, cur.packets, cur.havePackets))
		switch {
		case lossRatio(cur.discards, cur.packets, cur.havePackets) > discardWarnRatio:
			note := w.historyNote()
			if w.rising() {
				note = Textf(", %d%s, too few to matter now", w.inc, w.last())
			}
			r.warn(subj, Textf("the NIC of %s ran out of receive buffer at some time: %s%s", t.netdev, total, note), fix)
		case cur.discards > 0:
			r.ok(subj, Textf("%s, below 1 in %d", total, int(1/discardWarnRatio)))
		case w.compared:
			r.ok(subj, Textf("no drops on %s since boot, none%s", class, w.last()))
		default:
			r.ok(subj, Textf("no drops on %s since boot", class))
		}
	})
}

func discardFix(t *target, prios []int) Text {
	if len(prios) == 0 {
		return Textf("`ethtool -S %[1]s | grep -E 'prio[0-7]_(packets|discards)'` shows which priority loses packets; on the RoCE priority drops mean PFC is not pausing the sender in time (see pfc_enabled_on_roce_priority and the switch port's PFC), elsewhere that the host does not drain its receive queues fast enough (the pcie_* findings, IRQ and CPU power settings)", t.netdev)
	}
	p := prioList(prios)
	return Textf("drops on a lossless priority mean PFC did not stop the sender in time: check that PFC is on for priority %[2]s on both the NIC (pfc_enabled_on_roce_priority) and the switch port, that the NIC's receive buffer for it has the headroom its cable length needs (`mlnx_qos -i %[1]s` shows buffer sizes; `mlnx_qos -i %[1]s --cable_len=<metres>` resizes them), and the pcie_* findings (a host that does not drain fills the buffer); `ethtool -S %[1]s | grep -E 'discard|pause'` shows the counters", t.netdev, p)
}
