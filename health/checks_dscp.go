package health

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/node"
)

// The chain these checks follow: the application marks RoCE with a traffic class
// (NCCL_IB_TC, perftest --tclass, or the device default), whose upper six bits are the
// DSCP; with DSCP trust the NIC (and every switch) maps the DSCP to an 802.1p priority;
// PFC protects that priority only if it is the one with PFC on. Any broken link puts
// RoCE on a lossy queue, which goes unnoticed until congestion drops packets.

// persistNote is the reboot caveat every fix here carries.
const persistNote = "; this is lost on reboot or driver reload, so apply it from a boot-time systemd unit (After=network-pre.target) on every node"

// dscpFix maps one DSCP to a priority with both tools operators have.
func dscpFix(netdev string, dscp, prio int) Text {
	return Textf("`mlnx_qos -i %[1]s --dscp2prio set,%[2]d,%[3]d` (mlnx-tools), or with iproute2 `dcb app replace dev %[1]s dscp-prio %[2]d:%[3]d`%[4]s; the switch must map DSCP %[2]d to priority %[3]d too",
		netdev, dscp, prio, Textf(persistNote))
}

// pcpFix gives RoCE a VLAN tag on its priority without moving the node's
// other traffic there. Verbs (NCCL) put the QP's service level into the
// PCP themselves, so NCCL_IB_SL is all they need. rdma_cm (NVMe-oF, iSER)
// takes the PCP from the VLAN's egress-qos-map entry for the socket
// priority its ToS maps to (iboe_tos_to_sl: rt_tos2priority, then the
// map), so only that priority is mapped: `egress-qos-map 0:<prio>` would put
// every kernel packet on the VLAN (TCP, ARP, NCCL's bootstrap) on the
// lossless priority too.
func pcpFix(netdev string, dscp, prio int, roceTC func() (int, bool)) Text {
	tc, ok := roceTC()
	if !ok {
		tc = node.DefaultRoCETrafficClass
	}
	return Textf("either switch to DSCP trust (`mlnx_qos -i %[1]s --trust dscp`, then map DSCP %[2]d to %[3]d) or move the compute IP to a VLAN interface (`ip link add link %[1]s name %[1]s.100 type vlan id 100`) and run NCCL with NCCL_IB_SL=%[3]d, which puts priority %[3]d in the tag of RDMA frames only; for rdma_cm users (NVMe-oF, iSER) with ToS %[4]d add `egress-qos-map %[5]d:%[3]d` to the VLAN (ToS %[4]d is socket priority %[5]d to the kernel), never `0:%[3]d`, which would move all the VLAN's kernel traffic (TCP, ARP, NCCL's bootstrap) onto the lossless priority%[6]s",
		netdev, dscp, prio, tc, rtTOS2Priority(tc), Textf(persistNote))
}

// rtTOS2Priority is the kernel's rt_tos2priority (include/net/route.h with
// ip_tos2prio in net/ipv4/route.c): the socket priority of an IPv4 ToS,
// from its four RFC 1349 ToS bits.
func rtTOS2Priority(tos int) int {
	// TC_PRIO_BESTEFFORT 0, BULK 2, INTERACTIVE_BULK 4, INTERACTIVE 6;
	// ECN_OR_COST(class) is the class itself.
	ipTOS2Prio := [16]int{0, 0, 0, 0, 2, 2, 2, 2, 6, 6, 6, 6, 4, 4, 4, 4}
	return ipTOS2Prio[(tos&0x1e)>>1]
}

// roceGIDNetdev is the netdev of the RoCE v2 GID that carries the plan's compute IP
// (a VLAN upper device when RoCE is tagged), "" when unknown.
func roceGIDNetdev(t *target) string {
	if t.planned == nil || !t.planned.Address.IsValid() {
		return ""
	}
	if t.port == nil {
		return ""
	}
	// Not gidWith: a GID on a VLAN upper device is exactly what is looked for here.
	for _, g := range t.port.GIDs {
		if ip, ok := g.IPv4(); ok && g.Type == node.GIDTypeRoCEv2 && ip == t.planned.IP() {
			return g.Interface
		}
	}
	return ""
}

// defaultsNote marks a verdict judged against the usual RoCE setup because
// no plan says otherwise.
func defaultsNote(planned bool) Text {
	if planned {
		return Text{}
	}
	return Textf(" (no plan: judged against the usual RoCE setup, DSCP %d on the priority with PFC on, CNPs on DSCP %d, traffic class %d; a plan's expectations replace these defaults)", node.DefaultRoCEDSCP, node.DefaultCNPDSCP, node.DefaultRoCETrafficClass)
}

func checkDSCPMapsToPFC(e *env, r *results) {
	exp, planned := e.expectations()
	switch {
	case planned && exp.PFCPriority == nil:
		r.skip(SubjectNode, Textf(lossyReason))
		return
	case planned && exp.RoCEDSCP == nil:
		r.skip(SubjectNode, Textf("the plan sets no RoCE DSCP (expectations.roce_dscp)"))
		return
	}
	if !planned {
		// Without a plan: RoCE's usual DSCP, on the one priority PFC
		// protects on the port, and the trust mode the port has.
		exp = config.Expectations{RoCEDSCP: ptrInt(node.DefaultRoCEDSCP)}
	}
	note := defaultsNote(planned)
	e.dcbTargets(r, "the DSCP to priority map", func(t *target, d *node.DCBState) {
		subj := t.subject()
		var want int
		dscp := *exp.RoCEDSCP
		if planned {
			want = *exp.PFCPriority
		} else {
			on := enabledPriorities(d)
			if len(on) != 1 {
				r.skip(subj, Textf("no plan, and PFC is on for %s priorities of %s (%s): which one RoCE should use is the plan's to say (expectations.pfc_priority)", map[bool]string{true: "no", false: "several"}[len(on) == 0], t.netdev, prioList(on)))
				return
			}
			if lowPriority(on[0]) {
				// Mapping RoCE onto the best-effort class would be worse
				// advice than none.
				r.skip(subj, Textf("no plan, and PFC protects only priority %d of %s, the best-effort class every unmarked packet lands on: the usual RoCE setup is PFC and DSCP %d on priority 3; a plan (expectations.pfc_priority) says which is meant", on[0], t.netdev, dscp))
				return
			}
			want = on[0]
		}
		trust := d.Trust
		if trust == "" {
			trust = string(exp.Trust)
		}
		switch trust {
		case node.TrustPCP:
			// In PCP trust the priority is the VLAN tag's PCP, which RoCE takes from the
			// QP's service level (NCCL_IB_SL): an untagged RoCE frame carries none and
			// lands on priority 0 at the switch and the receiver.
			gidDev := roceGIDNetdev(t)
			ignored := Textf("")
			if exp.Trust == node.TrustDSCP {
				ignored = Textf(" (the plan expects dscp: see trust_mode_matches_plan; DSCP %d is ignored)", dscp)
			}
			switch {
			case gidDev == "":
				r.skip(subj, Textf("trust pcp: RoCE's priority is the VLAN PCP its service level sets (NCCL_IB_SL=%d); whether %s is tagged is unknown without its RoCE v2 GID", want, t.netdev))
			case gidDev == t.netdev:
				r.fail(subj, Textf("trust pcp%s, but the RoCE v2 GID of %s is on %s itself, untagged: untagged RoCE carries no PCP, so it lands on priority 0, not the PFC priority %d", ignored, t.planned.IP(), t.netdev, want),
					pcpFix(t.netdev, dscp, want, exp.RoCETrafficClass))
			default:
				r.ok(subj, Textf("trust pcp: RoCE runs tagged on %s; its priority is the PCP the QP's service level sets (NCCL_IB_SL=%d)", gidDev, want))
			}
			return
		case node.TrustDSCP:
		default:
			r.skip(subj, Textf("trust mode of %s could not be read", t.netdev))
			return
		}
		if d.DSCP == nil {
			r.skip(subj, Textf("trust dscp, but the DSCP to priority map of %s could not be read (no DSCP entry in the DCB app table); `dcb app show dev %s dscp-prio` or `mlnx_qos -i %s` shows it", t.netdev, t.netdev, t.netdev))
			return
		}
		got, ok := d.DSCP.Lookup(dscp)
		switch {
		case !ok:
			r.fail(subj, Textf("DSCP %d has no entry in the DSCP to priority map of %s, so RoCE marked with it lands on the default priority 0, where PFC (on %d) does not protect it%s", dscp, t.netdev, want, note),
				dscpFix(t.netdev, dscp, want))
		case got != want:
			on := d.DSCP.DSCPsOn(want)
			also := "no DSCP"
			if len(on) > 0 {
				also = "DSCP " + prioList(on)
			}
			r.fail(subj, Textf("DSCP %d maps to priority %d on %s, but PFC protects priority %d (which %s maps to): RoCE runs lossy and drops under congestion instead of pausing%s", dscp, got, t.netdev, want, also, note),
				dscpFix(t.netdev, dscp, want))
		case d.PFCKnown && !d.PFCEnabled[want]:
			// The map is right; PFC being off is pfc_enabled_on_roce_priority's finding.
			r.ok(subj, Textf("DSCP %d maps to priority %d, the plan's PFC priority (PFC itself is off there: see pfc_enabled_on_roce_priority)", dscp, want))
		default:
			r.ok(subj, Textf("DSCP %d maps to priority %d, the PFC priority%s", dscp, want, note))
		}
	})
}

// lowPriorities are 802.1Q's two lowest traffic types (best effort 0, background 1),
// the default queue every unmapped packet also lands on.
func lowPriority(p int) bool { return p == 0 || p == 1 }

// checkCNPPriority: DCQCN's congestion notification packets must reach the sender
// fast, while the queue they report on is congested. NVIDIA's default marks them DSCP
// 48 on priority 6, a queue of their own that switches serve with strict priority
// (Cumulus/SONiC RoCE profiles: "CNP → strict priority queue 6"); on the lossless RoCE
// priority they are also safe. On a lossy best-effort queue they wait behind bulk
// traffic or are dropped, and DCQCN reacts too late.
func checkCNPPriority(e *env, r *results) {
	exp, planned := e.expectations()
	if planned && exp.CNPDSCP == nil {
		r.skip(SubjectNode, Textf("the plan sets no CNP DSCP (expectations.cnp_dscp)"))
		return
	}
	want := node.DefaultCNPDSCP
	if planned {
		want = *exp.CNPDSCP
	}
	note := defaultsNote(planned)
	rocePrio := -1
	if exp.PFCPriority != nil {
		rocePrio = *exp.PFCPriority
	}
	e.dcbTargets(r, "the CNP priority", func(t *target, d *node.DCBState) {
		subj := t.subject()
		if d.CNPDSCP != nil && *d.CNPDSCP != want {
			r.warn(subj, Textf("%s sends CNPs with DSCP %d, the plan expects %d: the switches classify them by the other DSCP%s", t.netdev, *d.CNPDSCP, want, note),
				Textf("echo %d > /sys/class/net/%s/ecn/roce_np/cnp_dscp (MLNX_OFED)%s; or change expectations.cnp_dscp if the fabric uses %d", want, t.netdev, Textf(persistNote), *d.CNPDSCP))
			return
		}
		var prio int
		var how Text
		switch {
		case d.Trust == node.TrustDSCP && d.DSCP != nil:
			p, mapped := d.DSCP.Lookup(want)
			if !mapped {
				p = 0
			}
			prio, how = p, Textf("DSCP %d maps to priority %d", want, p)
		case d.CNPPrio != nil:
			prio, how = *d.CNPPrio, Textf("CNPs are sent on priority %d (roce_np/cnp_802p_prio)", *d.CNPPrio)
		default:
			r.skip(subj, Textf("the priority of CNPs on %s is unknown: no DSCP map (trust %s) and no MLNX_OFED roce_np/cnp_802p_prio", t.netdev, orPlaceholder(d.Trust, "unknown")))
			return
		}
		pfcOn := d.PFCKnown && d.PFCEnabled[prio]
		switch {
		case prio == rocePrio || pfcOn:
			r.ok(subj, Textf("%s, a lossless (PFC) priority", how))
		case lowPriority(prio):
			fix := Textf("map DSCP %d to priority 6, its own queue (NVIDIA's default): %s", want, dscpFix(t.netdev, want, 6))
			if d.CNPPrio != nil {
				fix = Textf("%s; and `echo 6 > /sys/class/net/%s/ecn/roce_np/cnp_802p_prio`", fix, t.netdev)
			}
			r.fail(subj, Textf("%s, the lossy best-effort queue: under congestion CNPs wait behind bulk traffic or are dropped, and DCQCN slows the senders too late%s", how, note), fix)
		default:
			r.ok(subj, Textf("%s, a queue of its own (PFC off; the switch should serve it with strict priority)", how))
		}
	})
}

// checkDefaultTrafficClass compares the traffic class RDMA is sent with when the
// application sets none with the plan's: MLNX_OFED's tc/<port>/traffic_class
// overrides every QP of the port; rdma_cm's default_roce_tos applies to rdma_cm
// connections only (NVMe-oF, iSER, MPI over rdmacm), never to NCCL.
func checkDefaultTrafficClass(e *env, r *results) {
	exp, planned := e.expectations()
	tc := node.DefaultRoCETrafficClass
	if planned {
		var ok bool
		if tc, ok = exp.RoCETrafficClass(); !ok {
			r.skip(SubjectNode, Textf("the plan sets no RoCE DSCP (expectations.roce_dscp)"))
			return
		}
	}
	note := defaultsNote(planned)
	dscp := tc >> 2
	for _, t := range e.targets {
		subj := t.devSubject()
		switch {
		case t.port == nil:
			r.skip(subj, t.missingReason("RDMA port"))
			continue
		case !t.roce():
			r.skip(subj, t.notRoCE("the default traffic class"))
			continue
		}
		p := t.port
		devFix := Textf("echo %d > /sys/class/infiniband/%s/tc/%d/traffic_class (MLNX_OFED)%s; NCCL jobs can instead set NCCL_IB_TC=%d", tc, p.Device, p.Number, Textf(persistNote), tc)
		tosFix := Textf("cma_roce_tos -d %[1]s -p %[2]d -t %[3]d (mlnx-tools); by hand: modprobe rdma_cm; mkdir -p /sys/kernel/config/rdma_cm/%[1]s; echo %[3]d > /sys/kernel/config/rdma_cm/%[1]s/ports/%[2]d/default_roce_tos%[4]s", p.Device, p.Number, tc, Textf(persistNote))
		var bad []Text
		var good []Text
		var fix []Text
		failed := false
		if p.TrafficClass != nil {
			v := *p.TrafficClass
			if v>>2 == dscp {
				good = append(good, Textf("device traffic class %d (DSCP %d)", v, v>>2))
			} else {
				failed = true
				bad = append(bad, Textf("the device traffic class is %d (DSCP %d), the plan's RoCE DSCP is %d (traffic class %d): every QP of the port, NCCL's included, is marked with it", v, v>>2, dscp, tc))
				fix = append(fix, devFix)
			}
		} else if p.TrafficClassFile {
			bad = append(bad, Textf("no device traffic class is set (tc/%d/traffic_class is empty): RDMA is sent with DSCP 0 unless each job sets NCCL_IB_TC=%d", p.Number, tc))
			fix = append(fix, devFix)
		}
		if p.DefaultRoCETOS != nil {
			v := *p.DefaultRoCETOS
			if v>>2 == dscp {
				good = append(good, Textf("rdma_cm default ToS %d (DSCP %d)", v, v>>2))
			} else {
				bad = append(bad, Textf("the rdma_cm default ToS is %d (DSCP %d), not %d: rdma_cm users (NVMe-oF, iSER) run off the lossless priority", v, v>>2, tc))
				fix = append(fix, tosFix)
			}
		}
		switch {
		case len(bad) > 0 && failed:
			r.fail(subj, Textf("%s%s", JoinTexts(bad, "; "), note), JoinTexts(fix, "; "))
		case len(bad) > 0:
			r.warn(subj, Textf("%s%s", JoinTexts(bad, "; "), note), JoinTexts(fix, "; "))
		case len(good) > 0:
			r.ok(subj, Textf("%s, as planned", JoinTexts(good, ", ")))
		default:
			r.skip(subj, Textf("this kernel exposes no default traffic class (MLNX_OFED's tc/%d/traffic_class, rdma_cm's default_roce_tos): RoCE is marked by each application; NCCL needs NCCL_IB_TC=%d (see nccl_env)", p.Number, tc))
		}
	}
}

// Thresholds of rdma_bytes_on_roce_priority. The priority counters count whole
// frames (Ethernet, IP, UDP and RoCE headers on top of what the PMA data counters
// count) plus any non-RDMA traffic of the class, so a port whose RoCE runs on the
// priority shows at least as many bytes there as RDMA moved; below half, most RDMA
// bytes went elsewhere. The floors keep an idle port from being judged on noise.
const (
	roceShareMin       = 0.5
	rdmaFloorSinceBoot = 1 << 30   // 1 GiB
	rdmaFloorInterval  = 100 << 20 // 100 MiB
)

// checkRDMABytesOnRoCEPriority proves where the bytes went: the RDMA bytes of the
// port (port_xmit_data / port_rcv_data) must appear in the byte counters of the
// RoCE priority. Between two samples it judges the interval; with one, the totals
// since the counters started.
func checkRDMABytesOnRoCEPriority(e *env, r *results) {
	e.ethernetTargets(r, "RoCE's priority", true, func(t *target) {
		subj := t.subject()
		prios := e.rocePriorities(t)
		// A RoCE LAG port's frames are counted by the bond's slaves, not the bond.
		netdevs := []string{t.netdev}
		if t.port != nil && len(t.port.BondSlaves) > 0 {
			netdevs = t.port.BondSlaves
		}
		var st, pst []*node.EthtoolStats
		for _, nd := range netdevs {
			if s := e.snap.Ethtool[nd]; s != nil {
				st = append(st, s)
			}
			if s := e.prevEthtool(nd); s != nil {
				pst = append(pst, s)
			}
		}
		switch {
		case len(st) < len(netdevs):
			_, why := e.ethtoolFor(t)
			if why.Empty() {
				why = Textf("no ethtool statistics for %s", strings.Join(netdevs, ", "))
			}
			r.skip(subj, why)
			return
		case len(prios) == 0:
			r.skip(subj, Textf("no RoCE priority: the plan sets no pfc_priority and no priority has PFC on"))
			return
		case t.port == nil:
			r.skip(subj, t.missingReason("RDMA port"))
			return
		}
		rx, tx, ok := t.port.DataBytes()
		if !ok {
			r.skip(subj, Textf("the port's RDMA data counters (port_rcv_data, port_xmit_data) are not readable"))
			return
		}
		prioBytes := func(ss []*node.EthtoolStats, dir string) ([8]uint64, bool) {
			var out [8]uint64
			any := false
			for _, s := range ss {
				for p := 0; p < 8; p++ {
					if v, ok := s.Get(node.FamilyPriorityBytes, dir, p, ""); ok {
						out[p] += v
						any = true
					}
				}
			}
			return out, any
		}
		cur := map[string][8]uint64{}
		for _, dir := range []string{node.DirTX, node.DirRX} {
			b, ok := prioBytes(st, dir)
			if !ok {
				r.skip(subj, Textf("%s exposes no per-priority byte counters (ethtool -S %s_prio<N>_bytes)", strings.Join(netdevs, ", "), dir))
				return
			}
			cur[dir] = b
		}
		rdma := map[string]uint64{node.DirTX: tx, node.DirRX: rx}
		floor, span := uint64(rdmaFloorSinceBoot), Textf("since the counters started")
		// The interval is judged when it moved enough RDMA bytes to tell; an idle
		// interval falls back to the totals, so one and two samples agree.
		if pp := e.prevPort(t.port); pp != nil && len(pst) == len(netdevs) {
			prx, ptx, ok1 := pp.DataBytes()
			ptxb, ok2 := prioBytes(pst, node.DirTX)
			prxb, ok3 := prioBytes(pst, node.DirRX)
			if ok1 && ok2 && ok3 && rx >= prx && tx >= ptx && max(rx-prx, tx-ptx) >= rdmaFloorInterval {
				rdma[node.DirRX], rdma[node.DirTX] = rx-prx, tx-ptx
				for dir, prev := range map[string][8]uint64{node.DirTX: ptxb, node.DirRX: prxb} {
					c := cur[dir]
					for p := range c {
						c[p] -= min(prev[p], c[p])
					}
					cur[dir] = c
				}
				floor, span = rdmaFloorInterval, Textf("in the last interval")
			}
		}
		// The plan's other RDMA classes (storage on a priority of its own)
		// move RDMA bytes too: on their priorities those are theirs.
		classes := e.otherRDMAClassesBesides(prios)
		var bad []Text
		var good []string
		for _, dir := range []string{node.DirTX, node.DirRX} {
			moved := rdma[dir]
			if moved < floor {
				continue
			}
			var onRoCE, onClasses uint64
			for _, p := range prios {
				onRoCE += cur[dir][p]
			}
			var classText []string
			for _, c := range classes {
				onClasses += cur[dir][c.Priority]
				if v := cur[dir][c.Priority]; v > 0 {
					classText = append(classText, fmt.Sprintf("%s on %s's priority %d", humanBytes(v), c.Name, c.Priority))
				}
			}
			share := float64(onRoCE+onClasses) / float64(moved)
			if share >= roceShareMin {
				text := fmt.Sprintf("%s %s of RDMA, %s on priority %s", dir, humanBytes(moved), humanBytes(onRoCE), prioList(prios))
				if len(classText) > 0 {
					text += " and " + strings.Join(classText, " and ")
				}
				good = append(good, text)
				continue
			}
			top, topBytes := -1, uint64(0)
			for p, v := range cur[dir] {
				if _, isClass := classOn(classes, p); !isClass && !slicesContains(prios, p) && v > topBytes {
					top, topBytes = p, v
				}
			}
			where := Textf("on no other priority either")
			if top >= 0 {
				where = Textf("priority %d carried %s", top, humanBytes(topBytes))
			}
			planned := Textf("the RoCE priority %s only %s", prioList(prios), humanBytes(onRoCE))
			if len(classes) > 0 {
				planned = Textf("the RoCE priority %s and the plan's other RDMA classes (%s) only %s", prioList(prios), classList(classes), humanBytes(onRoCE+onClasses))
			}
			bad = append(bad, Textf("%s: RDMA moved %s %s but %s (%.0f%%); %s", dir, humanBytes(moved), span, planned, 100*share, where))
		}
		history := floor == rdmaFloorSinceBoot
		lands, mapKnown, mapWhy := e.roceDSCPLands(t)
		mapIsCause := mapKnown && !slicesContains(prios, lands)
		switch {
		case len(bad) > 0:
			msg := Textf("%s: RoCE runs on a lossy priority and drops instead of pausing under congestion", JoinTexts(bad, "; "))
			var fix Text
			if mapIsCause {
				// Marking cannot help while the map sends the mark elsewhere.
				msg = Textf("%s; %s, so the map is the cause (see roce_dscp_maps_to_pfc_priority)", msg, mapWhy)
				fix = e.mapFix(t, prios[0])
			} else {
				// Without a plan, the usual marking (the default DSCP).
				tc := strconv.Itoa(node.DefaultRoCETrafficClass)
				if exp, ok := e.expectations(); ok {
					if v, ok := exp.RoCETrafficClass(); ok {
						tc = strconv.Itoa(v)
					}
				}
				fix = Textf("mark RoCE with the plan's traffic class: NCCL_IB_TC=%[1]s in the job environment (perftest: --tclass=%[1]s), or for every QP `echo %[1]s > /sys/class/infiniband/%[2]s/tc/%[3]d/traffic_class` (MLNX_OFED)", tc, t.port.Device, t.port.Number)
			}
			if history {
				// Totals since boot keep a fault that was fixed until the
				// next reboot: they warn, as history does in every check.
				r.warn(subj, Textf("%s; this is history since the counters started, not enough RDMA moved in the last interval to judge now", msg), Textf("%s; then run the doctor with traffic on the port (or --interval long enough to see it) to judge the present", fix))
				return
			}
			r.fail(subj, msg, fix)
		case len(good) > 0:
			msg := Textf("%s %s", strings.Join(good, "; "), span)
			if history && mapIsCause {
				// The two findings about this port differ in time, not in fact.
				msg = Textf("%s; that is history: %s now (see roce_dscp_maps_to_pfc_priority), so RoCE sent from now on does not land there", msg, mapWhy)
			}
			r.ok(subj, msg)
		default:
			r.ok(subj, Textf("too little RDMA traffic %s to tell its priority (under %s)", span, humanBytes(floor)))
		}
	})
}

// otherRDMAClassesBesides are the plan's other RDMA classes whose priority
// is not one of RoCE's.
func (e *env) otherRDMAClassesBesides(prios []int) []config.RDMAClass {
	exp, ok := e.expectations()
	if !ok {
		return nil
	}
	var out []config.RDMAClass
	for _, c := range exp.OtherRDMAClasses {
		if !slicesContains(prios, c.Priority) {
			out = append(out, c)
		}
	}
	return out
}

func classOn(classes []config.RDMAClass, p int) (config.RDMAClass, bool) {
	for _, c := range classes {
		if c.Priority == p {
			return c, true
		}
	}
	return config.RDMAClass{}, false
}

// classList names classes with their priorities: "storage on 4, gds on 5".
func classList(classes []config.RDMAClass) string {
	s := make([]string, len(classes))
	for i, c := range classes {
		s[i] = fmt.Sprintf("%s on %d", c.Name, c.Priority)
	}
	return strings.Join(s, ", ")
}

// roceDSCPLands says on which priority the DCB configuration puts RoCE
// marked with the RoCE DSCP (the plan's, else the default 26), and how:
// known only with the DCB state read and a trust mode that decides it.
func (e *env) roceDSCPLands(t *target) (int, bool, string) {
	d := e.snap.DCB[t.netdev]
	if d == nil {
		return 0, false, ""
	}
	dscp := node.DefaultRoCEDSCP
	if exp, ok := e.expectations(); ok && exp.RoCEDSCP != nil {
		dscp = *exp.RoCEDSCP
	}
	switch d.Trust {
	case node.TrustDSCP:
		if d.DSCP == nil {
			return 0, false, ""
		}
		if p, ok := d.DSCP.Lookup(dscp); ok {
			return p, true, fmt.Sprintf("the DSCP map of %s sends DSCP %d to priority %d", t.netdev, dscp, p)
		}
		return 0, true, fmt.Sprintf("DSCP %d has no entry in the DSCP map of %s, so it lands on priority 0", dscp, t.netdev)
	case node.TrustPCP:
		if gid := roceGIDNetdev(t); gid != "" && gid == t.netdev {
			return 0, true, fmt.Sprintf("%s trusts PCP and RoCE runs untagged on it, so it lands on priority 0", t.netdev)
		}
	}
	return 0, false, ""
}

// mapFix puts RoCE's DSCP on the RoCE priority: the map, or the trust mode
// when the NIC does not read the DSCP at all.
func (e *env) mapFix(t *target, prio int) Text {
	dscp := node.DefaultRoCEDSCP
	if exp, ok := e.expectations(); ok && exp.RoCEDSCP != nil {
		dscp = *exp.RoCEDSCP
	}
	if d := e.snap.DCB[t.netdev]; d != nil && d.Trust == node.TrustPCP {
		return Textf("make the NIC read the DSCP: `mlnx_qos -i %s --trust dscp`, then %s", t.netdev, dscpFix(t.netdev, dscp, prio))
	}
	return Textf("fix the DSCP to priority map: %s", dscpFix(t.netdev, dscp, prio))
}

func slicesContains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// humanBytes prints a byte count with a binary unit.
func humanBytes(b uint64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	v, i := float64(b), -1
	for v >= unit && i < 5 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[i])
}

func ptrInt(v int) *int { return &v }
