package collector

import (
	"log/slog"
	"maps"
	"slices"

	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/pipeline"
)

func init() { registerSource(node.SourcePHY, newPHYCollector) }

var (
	fecModeDesc = newGaugeDesc(namespace+"_phy_fec_mode_info",
		"Active FEC encoding (RS, BaseR, LLRS, None) from ethtool netlink; value is always 1.", "interface", "mode")
	fecCorrectedDesc = newCounterDesc(namespace+"_phy_fec_corrected_blocks_total",
		"FEC blocks received with errors FEC corrected (IEEE 802.3 aFECCorrectedBlocks). Corrected bits are roce_phy_fec_corrected_bit_errors_total.", "interface")
	fecUncorrectableDesc = newCounterDesc(namespace+"_phy_fec_uncorrectable_blocks_total",
		"FEC blocks received with errors FEC could not correct (IEEE 802.3 aFECUncorrectableBlocks): each is lost packets.", "interface")
	linkDownReasonDesc = newGaugeDesc(namespace+"_phy_link_down_reason_info",
		"Why the driver says the link is down (kernel extended link state and substate, e.g. no_cable, autoneg/no_partner_detected); present only while the link is down and the driver gives a reason.",
		"interface", "state", "substate")
)

// phyCollector exports FEC statistics and link-down reasons. FEC is
// exported as port totals: per-lane values double or octuple the series
// for what the total already shows.
type phyCollector struct{}

func newPHYCollector(*Options, *slog.Logger) Collector { return phyCollector{} }

func (phyCollector) Update(col *pipeline.Collection, out *Sink) error {
	snap := col.Snapshot
	for _, iface := range slices.Sorted(maps.Keys(snap.PHY)) {
		p := snap.PHY[iface]
		if p.FECMode != "" {
			out.emit(fecModeDesc, 1, iface, p.FECMode)
		}
		if p.FECCorrected != nil {
			out.emit(fecCorrectedDesc, float64(p.FECCorrected.Total), iface)
		}
		if p.FECUncorrectable != nil {
			out.emit(fecUncorrectableDesc, float64(p.FECUncorrectable.Total), iface)
		}
		if p.LinkKnown && !p.Link && p.ExtState != "" {
			out.emit(linkDownReasonDesc, 1, iface, p.ExtState, p.ExtSubstate)
		}
	}
	return nil
}
