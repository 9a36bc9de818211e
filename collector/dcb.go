package collector

import (
	"log/slog"
	"maps"
	"slices"
	"strconv"

	"github.com/roce-exporter/roce_exporter/node"
)

func init() { registerSource(node.SourceDCB, newDCBCollector) }

var (
	pfcEnabledDesc = newGaugeDesc(namespace+"_pfc_enabled",
		"1 if priority flow control is enabled on the priority (IEEE 802.1Qbb bitmap from DCB netlink). Only the priorities that matter (plan's RoCE priority, PFC on, traffic seen) unless --collector.priority.all.",
		"interface", "priority")
	trustDesc = newGaugeDesc(namespace+"_dcb_trust_info",
		"QoS trust mode: dscp when the DCB app table maps DSCP values, else pcp; value is always 1.",
		"interface", "trust")
	ecnEnabledDesc = newGaugeDesc(namespace+"_ecn_enabled",
		"1 if DCQCN/ECN is enabled for the priority in that role (np = notification point, rp = reaction point). Only where the driver exposes it (MLNX_OFED). priority=\"all\" when the setting is the same on all 8 priorities; else only the priorities that matter, unless --collector.priority.all.",
		"interface", "priority", "role")
)

// dcbCollector exports PFC, the trust mode and per-priority ECN.
type dcbCollector struct{ prio *prioritySet }

func newDCBCollector(o *Options, _ *slog.Logger) Collector {
	return dcbCollector{prio: o.priorities()}
}

func (c dcbCollector) Update(snap *node.Snapshot, out *Sink) error {
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
