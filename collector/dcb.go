package collector

import (
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/pipeline"
)

func init() { registerSource(node.SourceDCB, newDCBCollector) }

var (
	pfcEnabledDesc = newGaugeDesc(namespace+"_pfc_enabled",
		"1 if priority flow control is enabled on the priority (IEEE 802.1Qbb bitmap from DCB netlink). Only the priorities that matter (plan's RoCE priority, PFC on, traffic seen) unless --collector.priority.all.",
		"interface", "priority")
	trustDesc = newGaugeDesc(namespace+"_dcb_trust_info",
		"QoS trust mode: dscp when the DCB app table maps DSCP values, else pcp; value is always 1.",
		"interface", "trust")
	dscpPriorityDesc = newGaugeDesc(namespace+"_dcb_dscp_priority",
		"802.1p priority the DCB app table (DSCP trust) maps the DSCP to. Only the plan's RoCE and CNP DSCPs (expectations.roce_dscp, cnp_dscp; "+strconv.Itoa(node.DefaultRoCEDSCP)+" and "+strconv.Itoa(node.DefaultCNPDSCP)+" without a plan) are exported, two series per interface instead of 64; absent when the DSCP has no entry (PCP trust).",
		"interface", "dscp", "use")
	cnpDSCPDesc = newGaugeDesc(namespace+"_ecn_cnp_dscp",
		"DSCP of the congestion notification packets the NIC sends (MLNX_OFED ecn/roce_np/cnp_dscp).",
		"interface")
	cnpPrioDesc = newGaugeDesc(namespace+"_ecn_cnp_priority",
		"802.1p priority of the congestion notification packets the NIC sends (MLNX_OFED ecn/roce_np/cnp_802p_prio).",
		"interface")
	dcqcnParamsDesc = newGaugeDesc(namespace+"_dcqcn_params_info",
		"The port's DCQCN congestion control parameters, one series per port, value always 1: params identifies the set of its "+strconv.Itoa(len(node.DCQCNParamNames))+" values (a hash; the same values give the same hash whether read from MLNX_OFED's ecn/roce_rp and roce_np files, source=\"sysfs\", or upstream's debugfs cc_params as root, source=\"debugfs\"), nondefault lists those that differ from the firmware defaults. Absent where neither shows them. Ports of one NIC model with different params drift (RoCEDCQCNParamsDrift); `roce_exporter doctor` prints the values.",
		"interface", "source", "params", "nondefault")
	ecnEnabledDesc = newGaugeDesc(namespace+"_ecn_enabled",
		"1 if DCQCN/ECN is enabled for the priority in that role (np = notification point, rp = reaction point). Only where the driver exposes it (MLNX_OFED). priority=\"all\" when the setting is the same on all 8 priorities; else only the priorities that matter, unless --collector.priority.all.",
		"interface", "priority", "role")
)

// dcbCollector exports PFC, the trust mode, the plan's DSCPs' priorities and
// per-priority ECN.
type dcbCollector struct {
	prio *prioritySet
	// dscps are the DSCPs whose priority is exported, with what uses them.
	dscps []plannedDSCP
	// cnpDSCP is the plan's CNP DSCP, the cnp_dscp DCQCN is judged against.
	cnpDSCP int
}

type plannedDSCP struct {
	dscp int
	use  string
}

func newDCBCollector(o *Options, _ *slog.Logger) Collector {
	roce, cnp := node.DefaultRoCEDSCP, node.DefaultCNPDSCP
	if o != nil && o.Plan != nil {
		if e := o.Plan.Expectations; e.RoCEDSCP != nil {
			roce = *e.RoCEDSCP
		}
		if e := o.Plan.Expectations; e.CNPDSCP != nil {
			cnp = *e.CNPDSCP
		}
	}
	c := dcbCollector{prio: o.priorities(), dscps: []plannedDSCP{{roce, "roce"}}, cnpDSCP: cnp}
	if cnp != roce {
		c.dscps = append(c.dscps, plannedDSCP{cnp, "cnp"})
	}
	return c
}

func (c dcbCollector) Update(col *pipeline.Collection, out *Sink) error {
	snap := col.Snapshot
	for _, iface := range slices.Sorted(maps.Keys(snap.DCB)) {
		st := snap.DCB[iface]
		want := c.prio.of(snap, iface)
		if st.PFCKnown {
			for p := 0; p < 8; p++ {
				if want[p] {
					out.emit(pfcEnabledDesc, boolFloat(st.PFCEnabled[p]), iface, strconv.Itoa(p))
				}
			}
		}
		if st.Trust != "" {
			out.emit(trustDesc, 1, iface, st.Trust)
		}
		for _, d := range c.dscps {
			if p, ok := st.DSCP.Lookup(d.dscp); ok {
				out.emit(dscpPriorityDesc, float64(p), iface, strconv.Itoa(d.dscp), d.use)
			}
		}
		if st.CNPDSCP != nil {
			out.emit(cnpDSCPDesc, float64(*st.CNPDSCP), iface)
		}
		if st.CNPPrio != nil {
			out.emit(cnpPrioDesc, float64(*st.CNPPrio), iface)
		}
		if p := st.DCQCN; p != nil {
			out.emit(dcqcnParamsDesc, 1, iface, p.Source, p.Hash(), strings.Join(p.NonDefault(c.cnpDSCP), ","))
		}
		for _, role := range node.ECNRoles {
			e := st.ECN[role]
			if e == nil {
				continue
			}
			if uniform(e) && !c.prio.all {
				out.emit(ecnEnabledDesc, boolFloat(e.Enabled[0]), iface, "all", role)
				continue
			}
			for p := 0; p < 8; p++ {
				if e.Present[p] && want[p] {
					out.emit(ecnEnabledDesc, boolFloat(e.Enabled[p]), iface, strconv.Itoa(p), role)
				}
			}
		}
	}
	return nil
}

// uniform reports whether all 8 priorities' ECN files were read and agree:
// then one series (priority="all") says as much as eight.
func uniform(e *node.ECNSetting) bool {
	for p := 0; p < 8; p++ {
		if !e.Present[p] || e.Enabled[p] != e.Enabled[0] {
			return false
		}
	}
	return true
}
