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
		"1 if priority flow control is enabled on the priority (IEEE 802.1Qbb bitmap from DCB netlink).",
		"interface", "priority")
	trustDesc = newGaugeDesc(namespace+"_dcb_trust_info",
		"QoS trust mode: dscp when the DCB app table maps DSCP values, else pcp; value is always 1.",
		"interface", "trust")
	ecnEnabledDesc = newGaugeDesc(namespace+"_ecn_enabled",
		"1 if DCQCN/ECN is enabled for the priority in that role (np = notification point, rp = reaction point). Only where the driver exposes it (MLNX_OFED).",
		"interface", "priority", "role")
)

// dcbCollector exports PFC, the trust mode and per-priority ECN.
type dcbCollector struct{}

func newDCBCollector(*Options, *slog.Logger) Collector { return dcbCollector{} }

func (dcbCollector) Update(snap *node.Snapshot, out *Sink) error {
	for _, iface := range slices.Sorted(maps.Keys(snap.DCB)) {
		st := snap.DCB[iface]
		if st.PFCKnown {
			for p := 0; p < 8; p++ {
				out.emit(pfcEnabledDesc, boolFloat(st.PFCEnabled[p]), iface, strconv.Itoa(p))
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
			for p := 0; p < 8; p++ {
				if e.Present[p] {
					out.emit(ecnEnabledDesc, boolFloat(e.Enabled[p]), iface, strconv.Itoa(p), role)
				}
			}
		}
	}
	return nil
}
