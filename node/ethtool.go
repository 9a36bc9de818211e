package node

import "strconv"

// Family is the driver-neutral meaning of an ethtool statistic: the same
// family from mlx5, bnxt_en and ice counts the same thing.
type Family uint8

// The families. FamilyUnmapped marks names with no driver-neutral meaning.
const (
	FamilyUnmapped Family = iota
	FamilyPFCPauseFrames
	// FamilyPFCPauseDuration counts microseconds.
	FamilyPFCPauseDuration
	FamilyPFCPauseTransitions
	FamilyPFCPauseStormEvents
	FamilyPriorityBytes
	FamilyPriorityPackets
	FamilyPriorityDiscards
	FamilyPHYDiscards
	FamilyPHYCRCErrors
	FamilyPHYUncorrectedSymbolErrors
	FamilyPHYCorrectedBits
	FamilyPHYLinkDownEvents
	FamilyGlobalPauseFrames
	// FamilyRXQueueDiscards counts packets the NIC dropped because the host
	// had posted no buffer in the receive queue (ring) they were steered
	// to: the host, not the network, was too slow. Port buffer drops are
	// FamilyPHYDiscards.
	FamilyRXQueueDiscards
	// FamilyTCDiscards and FamilyTCECNMarkedPackets are counted per traffic
	// class of the port, not per priority, with the class in Priority:
	// mlx5's rx_prio<N>_buf_discard, _cong_discard and _marked, which
	// despite their names read the per-traffic-class PPCNT groups.
	FamilyTCDiscards
	FamilyTCECNMarkedPackets
	// FamilyCoSBytes, FamilyCoSPackets and FamilyCoSDiscards are bnxt_en's
	// per-CoS-queue receive counters, with the queue index in Priority.
	// They are never exported: ResolveCoSDiscards turns the discards into
	// per-priority discards where the queue of a priority is known, and
	// removes all three.
	FamilyCoSBytes
	FamilyCoSPackets
	FamilyCoSDiscards
	// FamilyMACControlFrames counts every MAC control frame a port received or
	// sent (IEEE 802.3 aMACControlFramesReceived/Transmitted, mlx5
	// rx/tx_mac_control_phy): 802.3x pause and PFC frames of every priority,
	// also those of a priority whose own pause counter the driver does not
	// show because PFC is off there. It is never exported; the incast probe
	// reads it to see pause frames on a priority the host does not count.
	FamilyMACControlFrames
	NumFamilies
)

var familyNames = [NumFamilies]string{
	FamilyUnmapped:                   "unmapped",
	FamilyPFCPauseFrames:             "pfc_pause_frames",
	FamilyPFCPauseDuration:           "pfc_pause_duration_microseconds",
	FamilyPFCPauseTransitions:        "pfc_pause_transitions",
	FamilyPFCPauseStormEvents:        "pfc_pause_storm_events",
	FamilyPriorityBytes:              "priority_bytes",
	FamilyPriorityPackets:            "priority_packets",
	FamilyPriorityDiscards:           "priority_discards",
	FamilyPHYDiscards:                "phy_discards",
	FamilyPHYCRCErrors:               "phy_crc_errors",
	FamilyPHYUncorrectedSymbolErrors: "phy_uncorrected_symbol_errors",
	FamilyPHYCorrectedBits:           "phy_corrected_bits",
	FamilyPHYLinkDownEvents:          "phy_link_down_events",
	FamilyGlobalPauseFrames:          "global_pause_frames",
	FamilyRXQueueDiscards:            "rx_queue_discards",
	FamilyTCDiscards:                 "tc_discards",
	FamilyTCECNMarkedPackets:         "tc_ecn_marked_packets",
	FamilyCoSBytes:                   "cos_bytes",
	FamilyCoSPackets:                 "cos_packets",
	FamilyCoSDiscards:                "cos_discards",
	FamilyMACControlFrames:           "mac_control_frames",
}

// String returns the family's short name, e.g. "pfc_pause_frames".
func (f Family) String() string {
	if f >= NumFamilies {
		return "unknown"
	}
	return familyNames[f]
}

// Exported reports whether a family becomes a metric; the CoS families
// only feed ResolveCoSDiscards, the MAC control frames only the incast probe.
func (f Family) Exported() bool {
	return f > FamilyUnmapped && f < FamilyCoSBytes
}

// TrafficClass reports whether the family's Priority field holds a
// traffic class rather than an 802.1p priority.
func (f Family) TrafficClass() bool {
	return f == FamilyTCDiscards || f == FamilyTCECNMarkedPackets
}

// DefaultTrafficClass is the traffic class mlx5 puts a priority in until
// the operator sets another map (mlnx_qos --prio_tc, dcb ets): priority 0
// in TC 1, priority 1 in TC 0, the others in the class of their number
// (IEEE 802.1Q's recommended map for eight classes, which the firmware
// applies; mlnx_qos prints "tc: 0 … priority: 1", "tc: 1 … priority: 0").
func DefaultTrafficClass(priority int) int {
	switch priority {
	case 0:
		return 1
	case 1:
		return 0
	}
	return priority
}

// Directions of a statistic: rx is what the port received (for pause: the
// peer paused this port), tx what it sent.
const (
	DirRX = "rx"
	DirTX = "tx"
)

// Severities of pause-storm watchdog events, and causes of per-priority
// discards.
const (
	StormWarning = "warning"
	StormError   = "error"

	DiscardOther      = "discard"
	DiscardBuffer     = "buffer"
	DiscardCongestion = "congestion"
)

// EthtoolCounter is the meaning of one driver statistic.
type EthtoolCounter struct {
	Family Family
	// Direction is DirRX, DirTX or "" for families without direction.
	Direction string
	// Priority is the 802.1p priority 0-7, or -1; for the traffic-class
	// families (TrafficClass) the traffic class 0-7.
	Priority int
	// Label is the storm severity or the discard cause, "" for the other
	// families.
	Label string
}

// EthtoolStats is the mapped view of one interface's ethtool statistics.
type EthtoolStats struct {
	Interface string
	// GlobalPause is the 802.3x pause configuration, nil when unknown.
	GlobalPause *GlobalPause
	Values      []EthtoolValue
	// Raw are statistics kept under their driver names because the
	// operator asked for them.
	Raw []Counter
}

// GlobalPause is the link-level (802.3x) pause setting of an interface.
type GlobalPause struct{ Autoneg, RX, TX bool }

// EthtoolValue is one mapped statistic: an EthtoolCounter and its value.
type EthtoolValue struct {
	Family    Family
	Direction string
	Priority  int
	Label     string
	Value     uint64
}

// Get returns a mapped value, false when the NIC does not report it.
func (e *EthtoolStats) Get(family Family, direction string, priority int, label string) (uint64, bool) {
	for _, v := range e.Values {
		if v.Family == family && v.Direction == direction && v.Priority == priority && v.Label == label {
			return v.Value, true
		}
	}
	return 0, false
}

// ClassifyEthtool returns the meaning of one driver statistic name, false
// when it has none. Names are matched exactly against the drivers' formats,
// so an unknown name can never be misread as a known one, and a priority
// whose PFC counters the driver does not list is never reported as 0.
func ClassifyEthtool(name string) (EthtoolCounter, bool) {
	c, ok := classifier[name]
	return c, ok
}

// classifier maps exact driver names to their meaning, built once from the
// drivers' name formats: classifying is a map lookup, with no regular
// expressions.
var classifier = buildClassifier()

func buildClassifier() map[string]EthtoolCounter {
	m := make(map[string]EthtoolCounter, 512)
	add := func(name string, c EthtoolCounter) {
		if _, dup := m[name]; dup {
			panic("node: duplicate ethtool name " + name)
		}
		m[name] = c
	}
	perPrio := func(format string, f Family, dir, label string) {
		for p := 0; p < 8; p++ {
			add(expand(format, p), EthtoolCounter{Family: f, Direction: dir, Priority: p, Label: label})
		}
	}

	// mlx5 (drivers/net/ethernet/mellanox/mlx5/core/en_stats.c,
	// pport_per_prio_traffic_stats_desc / pport_per_prio_pfc_stats_desc /
	// pport_per_tc_prio_stats_desc / pport_per_tc_congest_prio_stats_desc).
	// The PFC names exist only for priorities in (pfc_en_tx | pfc_en_rx).
	//
	// rx_prio%d_buf_discard, _cong_discard and _marked are per traffic
	// class despite their names: mlx5e_grp_per_tc_prio_update_stats and
	// mlx5e_grp_per_tc_congest_prio_update_stats read them from the PPCNT
	// groups MLX5_PER_TRAFFIC_CLASS_COUNTERS_GROUP and
	// MLX5_PER_TRAFFIC_CLASS_CONGESTION_GROUP with prio_tc = %d, where the
	// traffic-class groups take a TC. Under mlx5's default map (priority 0
	// in TC 1, priority 1 in TC 0, N in N) rx_prio0_buf_discard counts
	// priority 1's class, so they are exported per TC.
	perPrio("rx_prio%d_pause", FamilyPFCPauseFrames, DirRX, "")
	perPrio("tx_prio%d_pause", FamilyPFCPauseFrames, DirTX, "")
	perPrio("rx_prio%d_pause_duration", FamilyPFCPauseDuration, DirRX, "")
	perPrio("tx_prio%d_pause_duration", FamilyPFCPauseDuration, DirTX, "")
	perPrio("rx_prio%d_pause_transition", FamilyPFCPauseTransitions, DirRX, "")
	perPrio("rx_prio%d_bytes", FamilyPriorityBytes, DirRX, "")
	perPrio("tx_prio%d_bytes", FamilyPriorityBytes, DirTX, "")
	perPrio("rx_prio%d_packets", FamilyPriorityPackets, DirRX, "")
	perPrio("tx_prio%d_packets", FamilyPriorityPackets, DirTX, "")
	perPrio("rx_prio%d_discards", FamilyPriorityDiscards, DirRX, DiscardOther)
	perPrio("rx_prio%d_buf_discard", FamilyTCDiscards, DirRX, DiscardBuffer)
	perPrio("rx_prio%d_cong_discard", FamilyTCDiscards, DirRX, DiscardCongestion)
	perPrio("rx_prio%d_marked", FamilyTCECNMarkedPackets, DirRX, "")

	// bnxt_en (bnxt_ethtool.c; names confirmed in a real 6.6-kernel capture,
	// see internal/nicstats/testdata/bnxt_en-ethtool-S.txt.source). bnxt
	// lists all eight priorities whether or not PFC is enabled on them.
	perPrio("rx_pfc_ena_frames_pri%d", FamilyPFCPauseFrames, DirRX, "")
	perPrio("tx_pfc_ena_frames_pri%d", FamilyPFCPauseFrames, DirTX, "")
	perPrio("pfc_pri%d_rx_duration_us", FamilyPFCPauseDuration, DirRX, "")
	perPrio("pfc_pri%d_tx_duration_us", FamilyPFCPauseDuration, DirTX, "")
	perPrio("pfc_pri%d_rx_transitions", FamilyPFCPauseTransitions, DirRX, "")
	perPrio("pfc_pri%d_tx_transitions", FamilyPFCPauseTransitions, DirTX, "")
	perPrio("rx_bytes_pri%d", FamilyPriorityBytes, DirRX, "")
	perPrio("tx_bytes_pri%d", FamilyPriorityBytes, DirTX, "")
	perPrio("rx_packets_pri%d", FamilyPriorityPackets, DirRX, "")
	perPrio("tx_packets_pri%d", FamilyPriorityPackets, DirTX, "")
	// The receive counters of the eight CoS queues (rx_port_stats_ext):
	// a queue is not a priority, see ResolveCoSDiscards.
	perPrio("rx_bytes_cos%d", FamilyCoSBytes, DirRX, "")
	perPrio("rx_packets_cos%d", FamilyCoSPackets, DirRX, "")
	perPrio("rx_discard_packets_cos%d", FamilyCoSDiscards, DirRX, "")

	// ice: upstream names, the out-of-tree driver's UNIFIED_STATS names
	// (ice_ethtool.h PICK(legacy, unified)), and the pre-2019 upstream names.
	// Only XOFF frames are mapped. XON ("resume") frames are deliberately
	// NOT counted as pfc_pause_transitions: mlx5/bnxt count state changes,
	// which also happen when a pause quantum simply expires without any XON
	// frame, so an XON frame count would undercount and the two would not
	// be comparable on one dashboard.
	perPrio("rx_priority_%d_xoff.nic", FamilyPFCPauseFrames, DirRX, "")
	perPrio("tx_priority_%d_xoff.nic", FamilyPFCPauseFrames, DirTX, "")
	perPrio("port-rx-xoff_prio-%d_events", FamilyPFCPauseFrames, DirRX, "")
	perPrio("port-tx-xoff_prio-%d_events", FamilyPFCPauseFrames, DirTX, "")
	perPrio("port.rx-priority-%d-xoff", FamilyPFCPauseFrames, DirRX, "")
	perPrio("port.tx-priority-%d-xoff", FamilyPFCPauseFrames, DirTX, "")

	one := func(name string, f Family, dir, label string) {
		add(name, EthtoolCounter{Family: f, Direction: dir, Priority: -1, Label: label})
	}
	one("tx_pause_storm_warning_events", FamilyPFCPauseStormEvents, "", StormWarning)
	one("tx_pause_storm_error_events", FamilyPFCPauseStormEvents, "", StormError)

	one("rx_discards_phy", FamilyPHYDiscards, DirRX, "")
	one("tx_discards_phy", FamilyPHYDiscards, DirTX, "")
	// bnxt_en's port statistics (rx_port_stats/tx_port_stats of the
	// firmware): packets the port itself discarded.
	one("rx_stat_discard", FamilyPHYDiscards, DirRX, "")
	one("tx_stat_discard", FamilyPHYDiscards, DirTX, "")
	// ice: PRTRPB_RDPC, the port's receive packet buffer drop count
	// (upstream name, then the out-of-tree driver's unified one).
	one("rx_dropped.nic", FamilyPHYDiscards, DirRX, "")
	one("port-rx-dropped_pkts", FamilyPHYDiscards, DirRX, "")

	// Receive-queue drops: mlx5 "the receive queue had no software buffer
	// for the incoming packet"; bnxt_en the sum of its rings' hardware
	// rx_discards (rx_total_ring_discards; older drivers, RHEL 8's among
	// them, call the same sum rx_total_discard_pkts). The per-ring
	// "[N]: rx_discards" lines are not mapped: the total counts them once.
	one("rx_out_of_buffer", FamilyRXQueueDiscards, DirRX, "")
	one("rx_total_ring_discards", FamilyRXQueueDiscards, DirRX, "")
	one("rx_total_discard_pkts", FamilyRXQueueDiscards, DirRX, "")

	one("rx_crc_errors_phy", FamilyPHYCRCErrors, "", "")
	one("rx_fcs_err_frames", FamilyPHYCRCErrors, "", "")
	// ice GLPRT_CRCERRS: port-level CRC errors, same meaning as mlx5's.
	one("rx_crc_errors.nic", FamilyPHYCRCErrors, "", "")
	one("port-rx-crc_errors", FamilyPHYCRCErrors, "", "")

	one("rx_pcs_symbol_err_phy", FamilyPHYUncorrectedSymbolErrors, "", "")
	one("rx_pcs_symbol_err", FamilyPHYUncorrectedSymbolErrors, "", "")
	one("rx_corrected_bits_phy", FamilyPHYCorrectedBits, "", "")
	one("rx_corrected_bits", FamilyPHYCorrectedBits, "", "")
	one("link_down_events_phy", FamilyPHYLinkDownEvents, "", "")
	one("link_down_events", FamilyPHYLinkDownEvents, "", "")

	// mlx5's 802.3 group (en_stats.c pport_802_3_stats_desc).
	one("rx_mac_control_phy", FamilyMACControlFrames, DirRX, "")
	one("tx_mac_control_phy", FamilyMACControlFrames, DirTX, "")

	one("rx_global_pause", FamilyGlobalPauseFrames, DirRX, "")
	one("tx_global_pause", FamilyGlobalPauseFrames, DirTX, "")
	one("rx_pause_frames", FamilyGlobalPauseFrames, DirRX, "")
	one("tx_pause_frames", FamilyGlobalPauseFrames, DirTX, "")
	one("link_xoff_rx.nic", FamilyGlobalPauseFrames, DirRX, "")
	one("link_xoff_tx.nic", FamilyGlobalPauseFrames, DirTX, "")
	one("port-rx-xoff_events", FamilyGlobalPauseFrames, DirRX, "")
	one("port-tx-xoff_events", FamilyGlobalPauseFrames, DirTX, "")
	return m
}

// ResolveCoSDiscards turns bnxt_en's per-CoS-queue receive discards
// (rx_discard_packets_cos<N>) into per-priority discards, reason
// DiscardOther, and drops the CoS values, which are never exported.
//
// A CoS queue is not a priority: the firmware maps priorities onto queues
// (several priorities may share one), and ethtool does not print the map.
// It prints its result though: bnxt's rx_bytes_pri<P> and
// rx_packets_pri<P> are rx_bytes_cos<Q> and rx_packets_cos<Q> of P's queue
// Q, read from the same buffer in the same call (bnxt_get_ethtool_stats,
// pri2cos_idx). So P's queue is among those whose bytes and packets equal
// P's, and where all of those queues have the same discard count, that count
// is P's. Where they differ (idle queues that dropped differently) or the
// driver prints no per-priority counters (its pri2cos is not valid), P gets
// no discard value: a wrong priority would page for the wrong class.
func ResolveCoSDiscards(values []EthtoolValue) []EthtoolValue {
	type cosCounters struct {
		bytes, packets, discards [8]uint64
		have                     [8]uint8 // bits: 1 bytes, 2 packets, 4 discards
	}
	var cos cosCounters
	var priBytes, priPackets [8]uint64
	var havePri [8]uint8
	found := false
	for _, v := range values {
		if v.Priority < 0 || v.Priority > 7 || v.Direction != DirRX {
			continue
		}
		switch v.Family {
		case FamilyCoSBytes:
			cos.bytes[v.Priority], cos.have[v.Priority] = v.Value, cos.have[v.Priority]|1
			found = true
		case FamilyCoSPackets:
			cos.packets[v.Priority], cos.have[v.Priority] = v.Value, cos.have[v.Priority]|2
			found = true
		case FamilyCoSDiscards:
			cos.discards[v.Priority], cos.have[v.Priority] = v.Value, cos.have[v.Priority]|4
			found = true
		case FamilyPriorityBytes:
			priBytes[v.Priority], havePri[v.Priority] = v.Value, havePri[v.Priority]|1
		case FamilyPriorityPackets:
			priPackets[v.Priority], havePri[v.Priority] = v.Value, havePri[v.Priority]|2
		}
	}
	if !found {
		return values
	}
	out := values[:0]
	for _, v := range values {
		switch v.Family {
		case FamilyCoSBytes, FamilyCoSPackets, FamilyCoSDiscards:
		default:
			out = append(out, v)
		}
	}
	for p := 0; p < 8; p++ {
		if havePri[p] != 3 {
			continue
		}
		var discards uint64
		candidates := 0
		agree := true
		for q := 0; q < 8; q++ {
			if cos.have[q] != 7 || cos.bytes[q] != priBytes[p] || cos.packets[q] != priPackets[p] {
				continue
			}
			if candidates > 0 && cos.discards[q] != discards {
				agree = false
			}
			discards = cos.discards[q]
			candidates++
		}
		if candidates > 0 && agree {
			out = append(out, EthtoolValue{Family: FamilyPriorityDiscards, Direction: DirRX, Priority: p, Label: DiscardOther, Value: discards})
		}
	}
	return out
}

// expand substitutes the single %d of a driver name format. It runs only at
// init, so simplicity beats speed.
func expand(format string, p int) string {
	for i := 0; i+1 < len(format); i++ {
		if format[i] == '%' && format[i+1] == 'd' {
			return format[:i] + strconv.Itoa(p) + format[i+2:]
		}
	}
	panic("node: format without %d: " + format)
}
