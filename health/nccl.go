package health

import (
	"fmt"
	"regexp"

	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/roce-exporter/roce_exporter/config"
)

// checkNCCLEnv prints the NCCL variables that pin NCCL to this node's compute ports:
// exact-match lists ('=' prefix) so that a device named mlx5_1 does not also select
// mlx5_10, as the NCCL probe sets them for each node's ranks, and this node's own GID
// index read from its GID table rather than assumed to be 3 (it is not in containers,
// and an extra IPv6 or VLAN address shifts it). The index is this node's alone: the
// probe leaves it to NCCL (2.21 and later pick the RoCE v2 GID themselves) unless the
// plan sets it for the node (probes.nccl.node_env).
func checkNCCLEnv(e *env, r *results) {
	var ifnames []string
	var hcas []string
	var problems []Text
	var notIB []Text
	gidIndex := map[string]int{}
	var gidDevs []string
	roce := false
	for _, t := range e.targets {
		if t.planned == nil && (t.port == nil || !t.port.Up()) {
			// Without a plan, the compute ports are the ones that work now.
			continue
		}
		if t.planned != nil {
			if t.planned.Address.IsValid() {
				ifnames = append(ifnames, t.netdev)
			}
		} else if t.netdev != "" && (ifaceHasIPv4(t) || t.roce() && anyV2IPv4(t) >= 0) {
			ifnames = append(ifnames, t.netdev)
		}
		if t.port == nil {
			problems = append(problems, Textf("%s has no RDMA port (see planned_interface_present)", t.netdev))
			continue
		}
		if why := ncclIBUnusable(t); !why.Empty() {
			notIB = append(notIB, why)
			continue
		}
		hcas = append(hcas, t.port.Device+":"+strconv.Itoa(t.port.Number))
		if t.ib() {
			continue
		}
		roce = true
		subj := t.devSubject()
		if t.planned != nil && t.planned.Address.IsValid() {
			if g, ok := t.gidWith(t.planned.IP(), true); ok {
				gidIndex[subj] = g.Index
				gidDevs = append(gidDevs, subj)
			} else {
				see := Textf("roce_v2_gid_present")
				if !t.port.Up() {
					// Its GID check is skipped for the port: the root is the link.
					see = Textf("port_active: the port is down")
				}
				problems = append(problems, Textf("no RoCE v2 GID carries %s on %s (see %s)", t.planned.IP(), subj, see))
			}
			continue
		}
		if idx := anyV2IPv4(t); idx >= 0 {
			gidIndex[subj] = idx
			gidDevs = append(gidDevs, subj)
		} else {
			problems = append(problems, Textf("no RoCE v2 IPv4 GID on %s (see roce_v2_gid_present)", subj))
		}
	}
	if len(hcas) == 0 && len(ifnames) == 0 {
		switch {
		case len(problems) > 0:
			r.warn(SubjectNode, Textf("no NCCL setting resolves: %s", JoinTexts(slices.Concat(problems, notIB), "; ")), namedChecksFix(problems, Textf("")))
		case len(notIB) > 0:
			r.skip(SubjectNode, Textf("no RoCE or InfiniBand port for NCCL_IB_HCA: %s", JoinTexts(notIB, "; ")))
		default:
			r.skip(SubjectNode, Textf("no active compute port to build the NCCL environment from"))
		}
		return
	}

	var vars []Text
	ifnameFix := Textf("")
	if len(ifnames) > 0 {
		vars = append(vars, Textf("NCCL_SOCKET_IFNAME==%s", strings.Join(ifnames, ",")))
	} else {
		mgmt := Textf("")
		if e.node != nil && e.node.ManagementIP.IsValid() {
			mgmt = Textf(" (the one with %s)", e.node.ManagementIP.String())
		}
		problems = append(problems, Textf("no compute interface has an IP for NCCL_SOCKET_IFNAME: set it to the management interface%s", mgmt))
		ifnameFix = Textf("set NCCL_SOCKET_IFNAME to the management interface%s in the job environment", mgmt)
	}
	if len(hcas) > 0 {
		vars = append(vars, Textf("NCCL_IB_HCA==%s", strings.Join(hcas, ",")))
	}
	var own []Text
	if !ifnameFix.Empty() {
		own = append(own, ifnameFix)
	}
	if roce {
		distinct := map[int][]string{}
		for _, d := range gidDevs {
			distinct[gidIndex[d]] = append(distinct[gidIndex[d]], d)
		}
		switch len(distinct) {
		case 0:
		case 1:
			vars = append(vars, Textf("NCCL_IB_GID_INDEX=%s", strconv.Itoa(gidIndex[gidDevs[0]])))
		default:
			idx := make([]int, 0, len(distinct))
			for i := range distinct {
				idx = append(idx, i)
			}
			sort.Ints(idx)
			var per []string
			for _, i := range idx {
				per = append(per, fmt.Sprintf("%d on %s", i, joinNatural(distinct[i])))
			}
			problems = append(problems, Textf("the RoCE v2 GID index differs between devices (%s), so no single NCCL_IB_GID_INDEX fits: leave it unset or -1 and NCCL (2.21 or later) picks each device's RoCE v2 IPv4 GID itself", strings.Join(per, "; ")))
			own = append(own, Textf("unset NCCL_IB_GID_INDEX (or set NCCL_IB_GID_INDEX=-1) in the job environment"))
		}
	}
	vars = append(vars, ncclClassVars(e, roce, len(hcas) > 0)...)
	msg := JoinTexts(vars, " ")
	if len(notIB) > 0 {
		msg = Textf("%s (not for NCCL_IB_HCA: %s)", msg, JoinTexts(notIB, "; "))
	}
	if len(problems) > 0 {
		r.warn(SubjectNode, Textf("%s (unresolved: %s)", msg, JoinTexts(problems, "; ")), namedChecksFix(problems, JoinTexts(own, "; ")))
		return
	}
	if e.node == nil {
		msg = Textf("%s (from this node's active RDMA ports; no plan entry for this node)", msg)
	}
	r.ok(SubjectNode, msg)
}

// ncclClassVars are the variables that put NCCL's traffic on the plan's class: on RoCE
// NCCL_IB_TC, the traffic class (DSCP<<2 | ECT) the DSCP map sends to the PFC priority,
// and with PCP trust NCCL_IB_SL, whose value becomes the VLAN PCP; on InfiniBand
// NCCL_IB_SL, the service level the plan names. NCCL's defaults are 0 for both, the
// best-effort class.
func ncclClassVars(e *env, roce, anyHCA bool) []Text {
	exp, ok := e.expectations()
	if !ok || !anyHCA {
		return nil
	}
	var vars []Text
	if roce {
		if tc, ok := exp.RoCETrafficClass(); ok {
			// NCCL_IB_FIFO_TC (NCCL 2.22.3 and later) is the class of the receiver's
			// clear-to-send messages, NCCL_IB_TC's unless set: named beside it, so a
			// value set elsewhere cannot leave them on a lossy class.
			vars = append(vars, Textf("NCCL_IB_TC=%s", strconv.Itoa(tc)), Textf("NCCL_IB_FIFO_TC=%s", strconv.Itoa(tc)))
		}
		if exp.Trust == config.TrustPCP && exp.PFCPriority != nil {
			vars = append(vars, Textf("NCCL_IB_SL=%s", strconv.Itoa(*exp.PFCPriority)))
		}
	} else if exp.IBServiceLevel != nil {
		vars = append(vars, Textf("NCCL_IB_SL=%s", strconv.Itoa(*exp.IBServiceLevel)))
	}
	return vars
}

// ncclIBUnusable says why NCCL's IB transport cannot use the target's port, ""
// when it can (InfiniBand and RoCE). It connects its queue pairs itself over
// its bootstrap sockets, while an iWARP queue pair is connected only through
// the iWARP connection manager (rdma_cm over TCP); EFA offers no reliable
// connected queue pairs and is NCCL's only through the aws-ofi-nccl plugin.
func ncclIBUnusable(t *target) Text {
	if t.port == nil || t.ib() || t.roce() {
		return Textf("")
	}
	name := PortSubject(t.dev, t.port)
	switch {
	case t.dev != nil && t.dev.Driver == "efa":
		return Textf("%s is EFA, which NCCL reaches through the aws-ofi-nccl plugin (libfabric), not NCCL_IB_HCA or NCCL_IB_GID_INDEX", name)
	case t.dev != nil && t.dev.IWARP():
		return Textf("%s is iWARP, whose connections only rdma_cm sets up, which NCCL's IB transport does not use: NCCL runs over sockets there (NCCL_SOCKET_IFNAME)", name)
	}
	return Textf("%s is not a RoCE or InfiniBand port (%s), which NCCL's IB transport needs", name, orPlaceholder(rdmaProtocol(t.dev), "link layer "+t.port.LinkLayer))
}

func ifaceHasIPv4(t *target) bool {
	if t.iface == nil {
		return false
	}
	for _, a := range t.iface.Addresses {
		if a.Addr().Is4() {
			return true
		}
	}
	return false
}

// anyV2IPv4 returns the lowest index of a RoCE v2 GID carrying an IPv4 address on the
// target's netdev, or -1.
func anyV2IPv4(t *target) int {
	if gs := t.v2IPv4GIDs(); len(gs) > 0 {
		return gs[0].Index
	}
	return -1
}

var seeCheck = regexp.MustCompile(`\(see ([a-z0-9_]+)`)

// namedChecksFix names the checks the problems point to, in order, before
// the fixes of this check's own; the doctor prints those checks above.
func namedChecksFix(problems []Text, own Text) Text {
	var ids []string
	for _, p := range problems {
		for _, m := range seeCheck.FindAllStringSubmatch(p.String(), -1) {
			if !slices.Contains(ids, m[1]) {
				ids = append(ids, m[1])
			}
		}
	}
	var parts []Text
	if !own.Empty() {
		parts = append(parts, own)
	}
	if len(ids) > 0 {
		parts = append(parts, Textf("fix what %s report(s) for those ports (listed above), then run the doctor again", strings.Join(ids, ", ")))
	}
	return JoinTexts(parts, "; ")
}
