package health

import (
	"fmt"
	"strconv"
	"strings"

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

func checkDSCPMapsToPFC(e *env, r *results) {
	exp := e.plan.Expectations
	switch {
	case exp.PFCPriority == nil:
		r.skip(SubjectNode, Textf(lossyReason))
		return
	case exp.RoCEDSCP == nil:
		r.skip(SubjectNode, Textf("the plan sets no RoCE DSCP (expectations.roce_dscp)"))
		return
	}
	want, dscp := *exp.PFCPriority, *exp.RoCEDSCP
	e.dcbTargets(r, "the DSCP to priority map", func(t *target, d *node.DCBState) {
		subj := t.subject()
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
					Textf("either switch to DSCP trust (`mlnx_qos -i %[1]s --trust dscp`, then map DSCP %[2]d to %[3]d) or move the compute IP to a VLAN interface (`ip link add link %[1]s name %[1]s.100 type vlan id 100 egress-qos-map 0:%[3]d`) and run NCCL with NCCL_IB_SL=%[3]d%[4]s", t.netdev, dscp, want, Textf(persistNote)))
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
			r.fail(subj, Textf("DSCP %d has no entry in the DSCP to priority map of %s, so RoCE marked with it lands on the default priority 0, where PFC (on %d) does not protect it", dscp, t.netdev, want),
				dscpFix(t.netdev, dscp, want))
		case got != want:
			on := d.DSCP.DSCPsOn(want)
			also := "no DSCP"
			if len(on) > 0 {
				also = "DSCP " + prioList(on)
			}
			r.fail(subj, Textf("DSCP %d maps to priority %d on %s, but PFC protects priority %d (which %s maps to): RoCE runs lossy and drops under congestion instead of pausing", dscp, got, t.netdev, want, also),
				dscpFix(t.netdev, dscp, want))
		case d.PFCKnown && !d.PFCEnabled[want]:
			// The map is right; PFC being off is pfc_enabled_on_roce_priority's finding.
			r.ok(subj, Textf("DSCP %d maps to priority %d, the plan's PFC priority (PFC itself is off there: see pfc_enabled_on_roce_priority)", dscp, want))
		default:
			r.ok(subj, Textf("DSCP %d maps to priority %d, the PFC priority", dscp, want))
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
	exp, ok := e.expectations()
	switch {
	case !ok:
		r.skip(SubjectNode, Textf("no plan entry for this node: the planned CNP DSCP is unknown"))
		return
	case exp.CNPDSCP == nil:
		r.skip(SubjectNode, Textf("the plan sets no CNP DSCP (expectations.cnp_dscp)"))
		return
	}
	want := *exp.CNPDSCP
	rocePrio := -1
	if exp.PFCPriority != nil {
		rocePrio = *exp.PFCPriority
	}
	e.dcbTargets(r, "the CNP priority", func(t *target, d *node.DCBState) {
		subj := t.subject()
		if d.CNPDSCP != nil && *d.CNPDSCP != want {
			r.warn(subj, Textf("%s sends CNPs with DSCP %d, the plan expects %d: the switches classify them by the other DSCP", t.netdev, *d.CNPDSCP, want),
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
			r.fail(subj, Textf("%s, the lossy best-effort queue: under congestion CNPs wait behind bulk traffic or are dropped, and DCQCN slows the senders too late", how), fix)
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
	exp, ok := e.expectations()
	if !ok {
		r.skip(SubjectNode, Textf("no plan entry for this node: the planned RoCE DSCP is unknown"))
		return
	}
	tc, ok := exp.RoCETrafficClass()
	if !ok {
		r.skip(SubjectNode, Textf("the plan sets no RoCE DSCP (expectations.roce_dscp)"))
		return
	}
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
			r.fail(subj, JoinTexts(bad, "; "), JoinTexts(fix, "; "))
		case len(bad) > 0:
			r.warn(subj, JoinTexts(bad, "; "), JoinTexts(fix, "; "))
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
		var bad []Text
		var good []Text
		for _, dir := range []string{node.DirTX, node.DirRX} {
			moved := rdma[dir]
			if moved < floor {
				continue
			}
			var onRoCE uint64
			for _, p := range prios {
				onRoCE += cur[dir][p]
			}
			share := float64(onRoCE) / float64(moved)
			if share >= roceShareMin {
				good = append(good, Textf("%s %s of RDMA, %s on priority %s", dir, humanBytes(moved), humanBytes(onRoCE), prioList(prios)))
				continue
			}
			top, topBytes := -1, uint64(0)
			for p, v := range cur[dir] {
				if !slicesContains(prios, p) && v > topBytes {
					top, topBytes = p, v
				}
			}
			where := Textf("on no other priority either")
			if top >= 0 {
				where = Textf("priority %d carried %s", top, humanBytes(topBytes))
			}
			bad = append(bad, Textf("%s: RDMA moved %s %s but the RoCE priority %s only %s (%.0f%%); %s", dir, humanBytes(moved), span, prioList(prios), humanBytes(onRoCE), 100*share, where))
		}
		switch {
		case len(bad) > 0:
			// Without a plan, the usual marking (the plan's default DSCP).
			tc := strconv.Itoa(node.DefaultRoCETrafficClass)
			if exp, ok := e.expectations(); ok {
				if v, ok := exp.RoCETrafficClass(); ok {
					tc = strconv.Itoa(v)
				}
			}
			r.fail(subj, Textf("%s: RoCE runs on a lossy priority and drops instead of pausing under congestion", JoinTexts(bad, "; ")),
				Textf("mark RoCE with the plan's traffic class: NCCL_IB_TC=%[1]s in the job environment (perftest: --tclass=%[1]s), or for every QP `echo %[1]s > /sys/class/infiniband/%[2]s/tc/%[3]d/traffic_class` (MLNX_OFED); then check roce_dscp_maps_to_pfc_priority for the DSCP to priority map", tc, t.port.Device, t.port.Number))
		case len(good) > 0:
			r.ok(subj, Textf("%s %s", JoinTexts(good, "; "), span))
		default:
			r.ok(subj, Textf("too little RDMA traffic %s to tell its priority (under %s)", span, humanBytes(floor)))
		}
	})
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
