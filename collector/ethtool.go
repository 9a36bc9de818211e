package collector

import (
	"log/slog"
	"maps"
	"slices"
	"strconv"

	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/pipeline"
)

func init() { registerSource(node.SourceEthtool, newEthtoolCollector) }

var globalPauseEnabledDesc = newGaugeDesc(namespace+"_global_pause_enabled",
	"1 if 802.3x link-level pause is enabled in that direction. It should be off on a PFC port: it pauses all traffic.",
	"interface", "direction")

// familyMetric is how a driver-neutral ethtool family is exported.
type familyMetric struct {
	desc *Desc
	// scale converts the driver's unit to the metric's base unit: pause
	// durations are counted in microseconds and exported in seconds.
	scale float64
	// Which of the value's fields become labels, after "interface". tc
	// puts the value's Priority field under "tc": the family counts a
	// traffic class.
	direction, priority, tc, label bool
}

func newFamilyMetric(name, help string, scale float64, labels ...string) familyMetric {
	if slices.Contains(labels, "priority") {
		help += " Only the priorities that matter (the plan's RoCE priority, PFC on, counters ever above 0) unless --collector.priority.all."
	}
	if slices.Contains(labels, "tc") {
		help += " Only the classes whose counters rose above 0 unless --collector.priority.all."
	}
	m := familyMetric{desc: newCounterDesc(name, help, append([]string{"interface"}, labels...)...), scale: scale}
	for _, l := range labels {
		switch l {
		case "direction":
			m.direction = true
		case "priority":
			m.priority = true
		case "tc":
			m.tc = true
		default: // "severity", "reason": the value's Label
			m.label = true
		}
	}
	return m
}

// familyMetrics are the metric families the ethtool collector exports, one
// per driver-neutral family.
var familyMetrics = [node.NumFamilies]familyMetric{
	node.FamilyPFCPauseFrames: newFamilyMetric("roce_pfc_pause_frames_total",
		"PFC pause frames per priority; rx = the peer paused this port, tx = this port paused the peer.", 1, "direction", "priority"),
	node.FamilyPFCPauseDuration: newFamilyMetric("roce_pfc_pause_duration_seconds_total",
		"Time spent paused by PFC per priority (rx) or holding the peer paused (tx).", 1e-6, "direction", "priority"),
	node.FamilyPFCPauseTransitions: newFamilyMetric("roce_pfc_pause_transitions_total",
		"PFC pause-to-resume transitions per priority.", 1, "direction", "priority"),
	node.FamilyPFCPauseStormEvents: newFamilyMetric("roce_pfc_pause_storm_events_total",
		"PFC storm-prevention watchdog events; severity=error means the NIC stopped sending pause frames.", 1, "severity"),
	node.FamilyPriorityBytes: newFamilyMetric("roce_priority_bytes_total",
		"Bytes per 802.1p priority.", 1, "direction", "priority"),
	node.FamilyPriorityPackets: newFamilyMetric("roce_priority_packets_total",
		"Packets per 802.1p priority.", 1, "direction", "priority"),
	node.FamilyPriorityDiscards: newFamilyMetric("roce_priority_discards_total",
		"Packets dropped per priority, by reason (mlx5 rx_prio<N>_discards, bnxt_en's per-queue drops where the queue of the priority is known). Per traffic class drops are roce_traffic_class_discards_total.", 1, "direction", "priority", "reason"),
	node.FamilyTCDiscards: newFamilyMetric("roce_traffic_class_discards_total",
		"Packets dropped per traffic class of the port, by reason: buffer (no shared buffer left, mlx5 rx_prio<N>_buf_discard) or congestion (WRED, rx_prio<N>_cong_discard). mlx5 names them by priority but counts them per TC: under its default map TC 0 holds priority 1 and TC 1 priority 0.", 1, "direction", "tc", "reason"),
	node.FamilyTCECNMarkedPackets: newFamilyMetric("roce_traffic_class_ecn_marked_packets_total",
		"Packets ECN-marked by the NIC's own buffer per traffic class (mlx5 rx_prio<N>_marked, per TC despite its name).", 1, "direction", "tc"),
	node.FamilyPHYDiscards: newFamilyMetric("roce_phy_discards_total",
		"Packets dropped at the port for lack of buffer (rx) or on transmit (tx).", 1, "direction"),
	node.FamilyPHYCRCErrors: newFamilyMetric("roce_phy_crc_errors_total",
		"Frames received with a bad FCS.", 1),
	node.FamilyPHYUncorrectedSymbolErrors: newFamilyMetric("roce_phy_uncorrected_symbol_errors_total",
		"PCS symbol errors that FEC could not correct.", 1),
	node.FamilyPHYCorrectedBits: newFamilyMetric("roce_phy_fec_corrected_bit_errors_total",
		"Bits corrected by FEC.", 1),
	node.FamilyPHYLinkDownEvents: newFamilyMetric("roce_phy_link_down_events_total",
		"Times the physical link went down.", 1),
	node.FamilyGlobalPauseFrames: newFamilyMetric("roce_global_pause_frames_total",
		"802.3x link-level pause frames.", 1, "direction"),
	node.FamilyRXQueueDiscards: newFamilyMetric("roce_rx_queue_discards_total",
		"Packets the NIC dropped because the host had posted no buffer in the receive queue they were steered to: the host (CPU, driver, application) did not keep up, not the network (mlx5 rx_out_of_buffer, bnxt_en ring discards). Port buffer drops are roce_phy_discards_total.", 1),
}

// ethtoolCollector exports the mapped ethtool families, the raw statistics
// the operator asked for, and the 802.3x pause setting.
type ethtoolCollector struct {
	raw    map[string]*Desc
	labels []string // reused label buffer
	prio   *prioritySet
	seenTC map[string][8]bool
}

func newEthtoolCollector(o *Options, _ *slog.Logger) Collector {
	return &ethtoolCollector{raw: map[string]*Desc{}, prio: o.priorities(), seenTC: map[string][8]bool{}}
}

func (c *ethtoolCollector) Update(col *pipeline.Collection, out *Sink) error {
	snap := col.Snapshot
	for _, iface := range slices.Sorted(maps.Keys(snap.Ethtool)) {
		st := snap.Ethtool[iface]
		want := c.prio.of(snap, iface)
		wantTC := c.trafficClassesThatMatter(iface, st)
		for _, v := range st.Values {
			m := &familyMetrics[v.Family]
			if m.desc == nil ||
				m.priority && (v.Priority < 0 || v.Priority > 7 || !want[v.Priority]) ||
				m.tc && (v.Priority < 0 || v.Priority > 7 || !wantTC[v.Priority]) {
				continue
			}
			l := append(c.labels[:0], iface)
			if m.direction {
				l = append(l, v.Direction)
			}
			if m.priority || m.tc {
				l = append(l, strconv.Itoa(v.Priority))
			}
			if m.label {
				l = append(l, v.Label)
			}
			c.labels = l
			out.emit(m.desc, float64(v.Value)*m.scale, l...)
		}
		for _, r := range st.Raw {
			out.emit(c.rawDesc(r.Name), float64(r.Value), iface)
		}
		if p := st.GlobalPause; p != nil {
			out.emit(globalPauseEnabledDesc, boolFloat(p.RX), iface, node.DirRX)
			out.emit(globalPauseEnabledDesc, boolFloat(p.TX), iface, node.DirTX)
		}
	}
	return nil
}

// trafficClassesThatMatter are the traffic classes whose per-TC counters
// are exported: every class once one of its counters rose above 0 (for the
// life of the process, so a series does not come and go), or all eight with
// --collector.priority.all. Not the classes of the priorities that matter:
// the exporter does not read the ETS priority→TC map, and three more series
// per port for counters that stay 0 on a healthy port are over the series
// budget.
func (c *ethtoolCollector) trafficClassesThatMatter(iface string, st *node.EthtoolStats) [8]bool {
	if c.prio.all {
		return [8]bool{true, true, true, true, true, true, true, true}
	}
	tc := c.seenTC[iface]
	for _, v := range st.Values {
		if v.Family.TrafficClass() && v.Value > 0 && v.Priority >= 0 && v.Priority < 8 {
			tc[v.Priority] = true
		}
	}
	c.seenTC[iface] = tc
	return tc
}

// rawDesc is the family of a raw statistic selected by
// --collector.ethtool.raw-include. Two raw names that turn into one metric
// name feed one series; the encoder keeps the first.
func (c *ethtoolCollector) rawDesc(raw string) *Desc {
	d, ok := c.raw[raw]
	if !ok {
		d = newDesc(namespace+"_ethtool_"+node.SnakeCase(raw), "Raw ethtool statistic (selected by --collector.ethtool.raw-include).", typeUntyped, "interface")
		c.raw[raw] = d
	}
	return d
}
