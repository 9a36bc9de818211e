package health

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/node"
)

func (e *env) dcbFor(t *target) (*node.DCBState, Text) {
	if d := e.snap.DCB[t.netdev]; d != nil && t.netdev != "" {
		return d, Textf("")
	}
	if why := e.sourceReason("dcb", Textf("DCB state")); !why.Empty() {
		return nil, why
	}
	name := orPlaceholder(t.netdev, t.devSubject())
	if e.snap.Sources[node.SourceDCB] == node.SourcePartial {
		return nil, Textf("no DCB state for %s: the dcb collector could not read every interface (see the exporter log), so it is unknown whether %s has none or its read failed", name, name)
	}
	return nil, Textf("no DCB state for %s: its driver answers no DCB netlink requests on this function (VFs and SFs have none; check the PF)", name)
}

func (e *env) ethtoolFor(t *target) (*node.EthtoolStats, Text) {
	if s := e.snap.Ethtool[t.netdev]; s != nil && t.netdev != "" {
		return s, Textf("")
	}
	if why := e.sourceReason("ethtool", Textf("ethtool statistics")); !why.Empty() {
		return nil, why
	}
	return nil, Textf("no ethtool statistics for %s", orPlaceholder(t.netdev, t.devSubject()))
}

// enabledPriorities lists the priorities with PFC on; none when the PFC state
// is unknown.
func enabledPriorities(d *node.DCBState) []int {
	if !d.PFCKnown {
		return nil
	}
	var out []int
	for p, on := range d.PFCEnabled {
		if on {
			out = append(out, p)
		}
	}
	return out
}

func prioList(ps []int) string {
	if len(ps) == 0 {
		return "none"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ", ")
}

// pfcFix enables PFC on exactly the RoCE priority and keep (the plan's other
// RDMA classes whose PFC is on, which the fix must not turn off), with the two
// tools operators have: mlnx_qos (mlnx-tools, shipped with DOCA-OFED) and
// iproute2's dcb.
func pfcFix(netdev string, prio int, keep ...int) Text {
	bits := make([]string, 8)
	for i := range bits {
		bits[i] = "0"
	}
	on := []string{fmt.Sprintf("%d:on", prio)}
	bits[prio] = "1"
	for _, p := range keep {
		bits[p] = "1"
		on = append(on, fmt.Sprintf("%d:on", p))
	}
	return Textf("`mlnx_qos -i %[1]s --pfc %[2]s` (mlnx-tools), or with iproute2 `dcb pfc set dev %[1]s prio-pfc all:off %[3]s`; the link drops for a moment while PFC changes, and the setting is lost on reboot unless the switch pushes it by DCBX, so apply it from a boot-time systemd unit; the switch port must have PFC on priority %[4]d too",
		netdev, strings.Join(bits, ","), strings.Join(on, " "), prio)
}

// otherClassesWithPFC are the priorities of the plan's other RDMA classes
// that have PFC on now.
func (e *env) otherClassesWithPFC(d *node.DCBState) []int {
	var out []int
	for _, c := range e.plan.Expectations.OtherRDMAClasses {
		if d.PFCEnabled[c.Priority] {
			out = append(out, c.Priority)
		}
	}
	slices.Sort(out)
	return out
}

// ethernetTargets yields the targets that are on this node and Ethernet (with
// roceOnly, RoCE) ports, reporting the others as skipped; what names what the
// check judges, for the reason it does not apply.
func (e *env) ethernetTargets(r *results, what string, roceOnly bool, each func(t *target)) {
	for _, t := range e.targets {
		why := t.notEthernet(what)
		if roceOnly {
			why = t.notRoCE(what)
		}
		switch {
		case !why.Empty():
			r.skip(t.subject(), why)
		case t.absent():
			r.skip(t.subject(), t.missingReason("netdev"))
		default:
			each(t)
		}
	}
}

// dcbTargets yields the RoCE targets with readable DCB state, reporting the rest:
// PFC and the trust mode are what makes RoCE lossless, which iWARP (over TCP)
// does not need.
func (e *env) dcbTargets(r *results, what string, each func(t *target, d *node.DCBState)) {
	e.ethernetTargets(r, what, true, func(t *target) {
		d, why := e.dcbFor(t)
		if d == nil {
			r.skip(t.subject(), why)
			return
		}
		each(t, d)
	})
}

// pfcTargets yields the Ethernet targets whose PFC configuration was read. A
// driver that answered without a PFC object (or an interface where only the
// MLNX_OFED ECN files were found) leaves PFC unknown, which is not "off".
func (e *env) pfcTargets(r *results, each func(t *target, d *node.DCBState)) {
	e.dcbTargets(r, "PFC", func(t *target, d *node.DCBState) {
		if !d.PFCKnown {
			how := Textf("its driver reported no PFC configuration over DCB netlink")
			if d.ECN != nil {
				how = Textf("only its MLNX_OFED ECN files could be read, DCB netlink gave no PFC configuration")
			}
			r.skip(t.subject(), Textf("PFC state of %s is unknown: %s; `dcb pfc show dev %s` or `mlnx_qos -i %s` shows it", t.netdev, how, t.netdev, t.netdev))
			return
		}
		each(t, d)
	})
}

// ethtoolTargets yields the Ethernet targets with ethtool statistics, reporting the
// rest.
func (e *env) ethtoolTargets(r *results, what string, each func(t *target, st *node.EthtoolStats)) {
	e.ethernetTargets(r, what, false, func(t *target) {
		st, why := e.ethtoolFor(t)
		if st == nil {
			r.skip(t.subject(), why)
			return
		}
		each(t, st)
	})
}

const lossyReason = "the plan sets no pfc_priority: RoCE runs lossy by design, PFC is not checked"

func checkPFCEnabled(e *env, r *results) {
	if e.plan.Expectations.PFCPriority == nil {
		r.skip(SubjectNode, Textf(lossyReason))
		return
	}
	prio := *e.plan.Expectations.PFCPriority
	e.pfcTargets(r, func(t *target, d *node.DCBState) {
		on := enabledPriorities(d)
		if d.PFCEnabled[prio] {
			r.ok(t.subject(), Textf("PFC on for RoCE priority %d", prio))
			return
		}
		r.fail(t.subject(), Textf("PFC is off on RoCE priority %d (PFC enabled on: %s): RoCE traffic there is dropped instead of paused under congestion", prio, prioList(on)),
			pfcFix(t.netdev, prio, e.otherClassesWithPFC(d)...))
	})
}

func checkPFCOnly(e *env, r *results) {
	if e.plan.Expectations.PFCPriority == nil {
		r.skip(SubjectNode, Textf(lossyReason))
		return
	}
	prio := *e.plan.Expectations.PFCPriority
	e.pfcTargets(r, func(t *target, d *node.DCBState) {
		var extra []int
		var planned []string
		for _, p := range enabledPriorities(d) {
			if c, ok := e.plan.Expectations.OtherRDMAClassOn(p); ok {
				planned = append(planned, fmt.Sprintf("%d (%s)", p, c.Name))
				continue
			}
			if p != prio {
				extra = append(extra, p)
			}
		}
		also := Textf("")
		if len(planned) > 0 {
			also = Textf("; the plan's other RDMA classes on %s", strings.Join(planned, ", "))
		}
		if len(extra) == 0 {
			r.ok(t.subject(), Textf("no PFC on priorities other than %d%s", prio, also))
			return
		}
		r.warn(t.subject(), Textf("PFC is also on for priority %s, which carries neither RoCE (RoCE priority %d) nor another RDMA class of the plan (expectations.other_rdma_classes): lossless classes without RDMA only add head-of-line blocking and pause-storm risk%s", prioList(extra), prio, also),
			pfcFix(t.netdev, prio, e.otherClassesWithPFC(d)...))
	})
}

func pauseText(p *node.GlobalPause) string {
	onOff := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	return fmt.Sprintf("rx %s, tx %s", onOff(p.RX), onOff(p.TX))
}

func checkGlobalPause(e *env, r *results) {
	exp, hasPlan := e.expectations()
	e.ethtoolTargets(r, "802.3x pause", func(t *target, st *node.EthtoolStats) {
		subj := t.subject()
		if st.GlobalPause == nil {
			r.skip(subj, Textf("802.3x pause settings of %s could not be read", t.netdev))
			return
		}
		var pfcOn []int
		if d := e.snap.DCB[t.netdev]; d != nil {
			pfcOn = enabledPriorities(d)
		}
		// The plan's PFC is RoCE's; an iWARP port runs over TCP and may use
		// global pause.
		pfcUsed := hasPlan && exp.PFCPriority != nil && t.roce() || len(pfcOn) > 0
		p := st.GlobalPause
		switch {
		case !p.RX && !p.TX:
			r.ok(subj, Textf("802.3x global pause off (%s)", pauseText(p)))
		case pfcUsed:
			why := Textf("the plan expects PFC")
			if len(pfcOn) > 0 {
				why = Textf("PFC is on for priority %s", prioList(pfcOn))
			}
			r.fail(subj, Textf("802.3x global pause is on (%s) while %s: global pause stops every priority at once and does not mix with PFC", pauseText(p), why),
				Textf("ethtool -A %[1]s rx off tx off (takes effect now); to keep it across reboots use NetworkManager `nmcli connection modify %[1]s ethtool.pause-autoneg off ethtool.pause-rx off ethtool.pause-tx off`, or a systemd-networkd .link file with RxFlowControl=no and TxFlowControl=no", t.netdev))
		default:
			r.ok(subj, Textf("802.3x global pause on (%s); no PFC is in use on this port", pauseText(p)))
		}
	})
}

func checkTrust(e *env, r *results) {
	want := e.plan.Expectations.Trust
	if want == "" {
		r.skip(SubjectNode, Textf("the plan sets no trust mode (expectations.trust)"))
		return
	}
	e.dcbTargets(r, "the QoS trust mode", func(t *target, d *node.DCBState) {
		switch {
		case d.Trust == "":
			r.skip(t.subject(), Textf("trust mode of %s could not be read", t.netdev))
		case d.Trust == string(want):
			r.ok(t.subject(), Textf("trust %s, as planned", want))
		default:
			fix := Textf("`mlnx_qos -i %[1]s --trust %[2]s` (mlnx-tools)", t.netdev, want)
			if want == config.TrustDSCP {
				fix = Textf("%s%s", fix, Textf("; with upstream iproute2, adding a DSCP mapping switches mlx5 to DSCP trust: `dcb app add dev %[1]s dscp-prio %[3]d:%[2]s` (DSCP %[3]d is the usual RoCE marking)", t.netdev, pfcPrioText(e), node.DefaultRoCEDSCP))
			} else {
				fix = Textf("%s; with upstream iproute2, removing every DSCP mapping switches mlx5 back to PCP trust: `dcb app flush dev %s dscp-prio`", fix, t.netdev)
			}
			fix = Textf("%s; the setting is lost on reboot, so apply it from a boot-time systemd unit", fix)
			r.fail(t.subject(), Textf("trust %s, the plan expects %s: the NIC reads RoCE's priority from the wrong header, so RoCE can land on a priority without PFC", d.Trust, want), fix)
		}
	})
}

// rocePriorities are the priorities RoCE uses on the target: the plan's, else the
// ones with PFC on; none when neither says, or on a port that is not RoCE.
func (e *env) rocePriorities(t *target) []int {
	if !t.roce() {
		return nil
	}
	if exp, ok := e.expectations(); ok && exp.PFCPriority != nil {
		return []int{*exp.PFCPriority}
	}
	if d := e.snap.DCB[t.netdev]; d != nil {
		return enabledPriorities(d)
	}
	return nil
}

func pfcPrioText(e *env) string {
	if exp, ok := e.expectations(); ok && exp.PFCPriority != nil {
		return strconv.Itoa(*exp.PFCPriority)
	}
	return "<RoCE priority>"
}

func checkECN(e *env, r *results) {
	exp, hasPlan := e.expectations()
	switch {
	case hasPlan && exp.ECN == nil:
		// The plan's convention: an expectation left out is not checked.
		r.skip(SubjectNode, Textf("the plan does not ask for ECN (expectations.ecn)"))
		return
	case hasPlan && !*exp.ECN:
		r.skip(SubjectNode, Textf("the plan sets ecn: false"))
		return
	}
	e.ethernetTargets(r, "ECN (DCQCN)", true, func(t *target) {
		d := e.snap.DCB[t.netdev]
		prios := e.rocePriorities(t)
		if d != nil && d.ECN != nil && d.ECN[node.ECNRoleNP] != nil && d.ECN[node.ECNRoleRP] != nil && len(prios) > 0 {
			ecnFromFiles(r, t, d, prios)
			return
		}
		e.ecnFromCounters(r, t, prios)
	})
}

func ecnFromFiles(r *results, t *target, d *node.DCBState, prios []int) {
	var off []Text
	var cmds []Text
	for _, p := range prios {
		var roles []string
		for _, role := range []string{"np", "rp"} {
			if !d.ECN[role].Enabled[p] {
				roles = append(roles, role)
				cmds = append(cmds, Textf("echo 1 > /sys/class/net/%s/ecn/roce_%s/enable/%d", t.netdev, role, p))
			}
		}
		if len(roles) > 0 {
			roleText := Textf("%s", roles[0])
			if len(roles) == 2 {
				roleText = Textf("%s and %s", roles[0], roles[1])
			}
			off = append(off, Textf("priority %d (%s off)", p, roleText))
		}
	}
	if len(off) == 0 {
		r.ok(t.subject(), Textf("ECN (DCQCN) np and rp enabled on priority %s", prioList(prios)))
		return
	}
	r.fail(t.subject(), Textf("ECN (DCQCN) is off on %s: congestion is then handled by PFC pauses alone, which spreads it through the fabric", JoinTexts(off, ", ")),
		Textf("%s; this is lost on reboot, so run it from a boot-time systemd unit; the switch must also ECN-mark the RoCE queue", JoinTexts(cmds, "; ")))
}

func (e *env) ecnFromCounters(r *results, t *target, prios []int) {
	subj := t.subject()
	noFiles := Textf("the driver exposes no per-priority ECN enable files (only MLNX_OFED does)")
	if t.port == nil {
		r.skip(subj, Textf("%s and %s", noFiles, t.missingReason("RDMA port")))
		return
	}
	cur, ok := t.port.HWCounter("rp_cnp_ignored")
	if !ok {
		r.skip(subj, Textf("%s and the port has no rp_cnp_ignored counter to infer it from", noFiles))
		return
	}
	pp := e.prevPort(t.port)
	dt, okdt := e.interval()
	var prev uint64
	if pp != nil {
		prev, ok = pp.HWCounter("rp_cnp_ignored")
	}
	if pp == nil || !ok || !okdt {
		r.skip(subj, Textf("%s, and inferring it from rp_cnp_ignored needs two samples (it is %d since boot); the next scrape can tell", noFiles, cur))
		return
	}
	d, ok := delta(cur, prev)
	if !ok {
		r.skip(subj, Textf("rp_cnp_ignored went backwards (counter reset); the next sample can tell"))
		return
	}
	prioText := "<RoCE priority>"
	if len(prios) == 1 {
		prioText = strconv.Itoa(prios[0])
	}
	fix := Textf("enable DCQCN on the RoCE priority: with MLNX_OFED `echo 1 > /sys/class/net/%[1]s/ecn/roce_rp/enable/%[2]s` and `echo 1 > /sys/class/net/%[1]s/ecn/roce_np/enable/%[2]s` (at every boot); without it, check the NIC's congestion-control firmware settings (`mlxconfig -d %[3]s query | grep -i ROCE_CC`)",
		t.netdev, prioText, orPlaceholder(t.pciAddress(), "<pci address>"))
	if d > 0 {
		r.fail(subj, Textf("rp_cnp_ignored rose by %d in %s: congestion notifications arrive but the NIC ignores them, so DCQCN/ECN is off on the RoCE priority (inferred from counters)", d, secs(dt)), fix)
		return
	}
	if dm, dc, ok := npDeltas(t.port, pp); ok && dm > 0 && dc == 0 {
		r.fail(subj, Textf("np_ecn_marked_roce_packets rose by %d in %s but np_cnp_sent did not: the NIC does not answer ECN marks with congestion notifications, so ECN is off on the RoCE priority (inferred from counters)", dm, secs(dt)), fix)
		return
	}
	r.ok(subj, Textf("inferred from counters: rp_cnp_ignored did not rise in %s (%d since boot)", secs(dt), cur))
}

// npDeltas returns how much np_ecn_marked_roce_packets and np_cnp_sent rose.
func npDeltas(cur, prev *node.Port) (marked, sent uint64, ok bool) {
	m1, ok1 := cur.HWCounter("np_ecn_marked_roce_packets")
	m0, ok0 := prev.HWCounter("np_ecn_marked_roce_packets")
	c1, ok2 := cur.HWCounter("np_cnp_sent")
	c0, ok3 := prev.HWCounter("np_cnp_sent")
	if !ok0 || !ok1 || !ok2 || !ok3 {
		return 0, 0, false
	}
	dm, okm := delta(m1, m0)
	dc, okc := delta(c1, c0)
	return dm, dc, okm && okc
}
