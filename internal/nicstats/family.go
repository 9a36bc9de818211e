package nicstats

import "strconv"

// Family is a driver-neutral metric family (DESIGN.md, "ethtool" row).
type Family uint8

// The families. FamilyUnmapped marks raw names that have no canonical meaning.
const (
	FamilyUnmapped Family = iota
	FamilyPFCPauseFrames
	FamilyPFCPauseDuration
	FamilyPFCPauseTransitions
	FamilyPFCPauseStormEvents
	FamilyPriorityBytes
	FamilyPriorityPackets
	FamilyPriorityDiscards
	FamilyPriorityECNMarkedPackets
	FamilyPHYDiscards
	FamilyPHYCRCErrors
	FamilyPHYUncorrectedSymbolErrors
	FamilyPHYCorrectedBits
	FamilyPHYLinkDownEvents
	FamilyGlobalPauseFrames
	numFamilies
)

type familyInfo struct {
	name   string
	metric string
	help   string
	labels []string
	scale  float64
}

var (
	labelsDirPrio       = []string{"direction", "priority"}
	labelsDirPrioReason = []string{"direction", "priority", "reason"}
	labelsSeverity      = []string{"severity"}
	labelsDir           = []string{"direction"}
)

var families = [numFamilies]familyInfo{
	FamilyUnmapped: {name: "unmapped"},
	FamilyPFCPauseFrames: {
		name: "pfc_pause_frames", metric: "roce_pfc_pause_frames_total", labels: labelsDirPrio, scale: 1,
		help: "PFC pause frames per priority; rx = the peer paused this port, tx = this port paused the peer.",
	},
	FamilyPFCPauseDuration: {
		name: "pfc_pause_duration_microseconds", metric: "roce_pfc_pause_duration_seconds_total", labels: labelsDirPrio, scale: 1e-6,
		help: "Time spent paused by PFC per priority (rx) or holding the peer paused (tx).",
	},
	FamilyPFCPauseTransitions: {
		name: "pfc_pause_transitions", metric: "roce_pfc_pause_transitions_total", labels: labelsDirPrio, scale: 1,
		help: "PFC pause-to-resume transitions per priority.",
	},
	FamilyPFCPauseStormEvents: {
		name: "pfc_pause_storm_events", metric: "roce_pfc_pause_storm_events_total", labels: labelsSeverity, scale: 1,
		help: "PFC storm-prevention watchdog events; severity=error means the NIC stopped sending pause frames.",
	},
	FamilyPriorityBytes: {
		name: "priority_bytes", metric: "roce_priority_bytes_total", labels: labelsDirPrio, scale: 1,
		help: "Bytes per 802.1p priority.",
	},
	FamilyPriorityPackets: {
		name: "priority_packets", metric: "roce_priority_packets_total", labels: labelsDirPrio, scale: 1,
		help: "Packets per 802.1p priority.",
	},
	FamilyPriorityDiscards: {
		name: "priority_discards", metric: "roce_priority_discards_total", labels: labelsDirPrioReason, scale: 1,
		help: "Packets dropped per priority, by reason.",
	},
	FamilyPriorityECNMarkedPackets: {
		name: "priority_ecn_marked_packets", metric: "roce_priority_ecn_marked_packets_total", labels: labelsDirPrio, scale: 1,
		help: "Packets ECN-marked by the NIC's own buffer per priority.",
	},
	FamilyPHYDiscards: {
		name: "phy_discards", metric: "roce_phy_discards_total", labels: labelsDir, scale: 1,
		help: "Packets dropped at the port for lack of buffer (rx) or on transmit (tx).",
	},
	FamilyPHYCRCErrors: {
		name: "phy_crc_errors", metric: "roce_phy_crc_errors_total", scale: 1,
		help: "Frames received with a bad FCS.",
	},
	FamilyPHYUncorrectedSymbolErrors: {
		name: "phy_uncorrected_symbol_errors", metric: "roce_phy_uncorrected_symbol_errors_total", scale: 1,
		help: "PCS symbol errors that FEC could not correct.",
	},
	FamilyPHYCorrectedBits: {
		name: "phy_corrected_bits", metric: "roce_phy_corrected_bits_total", scale: 1,
		help: "Bits corrected by FEC.",
	},
	FamilyPHYLinkDownEvents: {
		name: "phy_link_down_events", metric: "roce_phy_link_down_events_total", scale: 1,
		help: "Times the physical link went down.",
	},
	FamilyGlobalPauseFrames: {
		name: "global_pause_frames", metric: "roce_global_pause_frames_total", labels: labelsDir, scale: 1,
		help: "802.3x link-level pause frames.",
	},
}

// String returns the family's short name, e.g. "pfc_pause_frames".
func (f Family) String() string {
	if f >= numFamilies {
		return "unknown"
	}
	return families[f].name
}

// MetricName returns the Prometheus metric name fixed by the design, e.g.
// "roce_pfc_pause_duration_seconds_total"; "" for FamilyUnmapped.
func (f Family) MetricName() string {
	if f >= numFamilies {
		return ""
	}
	return families[f].metric
}

// Help returns a one-line description for the metric's HELP text.
func (f Family) Help() string {
	if f >= numFamilies {
		return ""
	}
	return families[f].help
}

// LabelNames returns the family's label names (without "interface"), in the
// order of Entry.LabelValues. The slice is shared: do not modify it.
func (f Family) LabelNames() []string {
	if f >= numFamilies {
		return nil
	}
	return families[f].labels
}

// Scale converts the raw counter into the metric's base unit. Only pause
// durations need it: drivers count microseconds, the metric is seconds.
func (f Family) Scale() float64 {
	if f >= numFamilies {
		return 0
	}
	return families[f].scale
}

// Label values, shared by every Entry so that a Mapping holds no per-entry
// strings and the scrape path formats nothing.
const (
	DirRX = "rx"
	DirTX = "tx"

	SeverityWarning = "warning"
	SeverityError   = "error"

	ReasonDiscard    = "discard"
	ReasonBuffer     = "buffer"
	ReasonCongestion = "congestion"
)

// Entry is the classification of one raw statistic.
type Entry struct {
	Family Family
	// Direction is DirRX, DirTX or "" for families without direction.
	Direction string
	// Priority is the 802.1p priority 0-7, or -1.
	Priority int
	// Severity and Reason are set only for the families that carry them.
	Severity string
	Reason   string
	// LabelValues are the values for Family.LabelNames(), precomputed so a
	// collector can hand them to a const metric without formatting.
	LabelValues []string
	// Index is the position of the raw statistic in the string table and
	// Raw its driver name.
	Index int
	Raw   string
}

// key identifies the series an entry feeds; two raw names with the same key
// would be two sources for one series.
type key struct {
	family    Family
	direction string
	priority  int
	severity  string
	reason    string
}

func (e Entry) key() key {
	return key{e.Family, e.Direction, e.Priority, e.Severity, e.Reason}
}

func newEntry(f Family, dir string, prio int, severity, reason string) Entry {
	e := Entry{Family: f, Direction: dir, Priority: prio, Severity: severity, Reason: reason}
	for _, l := range f.LabelNames() {
		switch l {
		case "direction":
			e.LabelValues = append(e.LabelValues, dir)
		case "priority":
			e.LabelValues = append(e.LabelValues, strconv.Itoa(prio))
		case "severity":
			e.LabelValues = append(e.LabelValues, severity)
		case "reason":
			e.LabelValues = append(e.LabelValues, reason)
		}
	}
	return e
}

// classifier maps exact raw names to a template Entry. Built once at init
// from the drivers' name formats, so classifying is a map lookup: no regular
// expressions, and an unknown name can never be misread as a known one.
var classifier = buildClassifier()

func buildClassifier() map[string]Entry {
	m := make(map[string]Entry, 512)
	add := func(name string, e Entry) {
		if _, dup := m[name]; dup {
			panic("nicstats: duplicate classifier name " + name)
		}
		m[name] = e
	}
	perPrio := func(format string, f Family, dir, reason string) {
		for p := 0; p < 8; p++ {
			add(expand(format, p), newEntry(f, dir, p, "", reason))
		}
	}

	// mlx5 (drivers/net/ethernet/mellanox/mlx5/core/en_stats.c,
	// pport_per_prio_traffic_stats_desc / pport_per_prio_pfc_stats_desc /
	// pport_per_tc_prio_stats_desc / pport_per_tc_congest_prio_stats_desc).
	// The PFC names exist only for priorities in (pfc_en_tx | pfc_en_rx).
	perPrio("rx_prio%d_pause", FamilyPFCPauseFrames, DirRX, "")
	perPrio("tx_prio%d_pause", FamilyPFCPauseFrames, DirTX, "")
	perPrio("rx_prio%d_pause_duration", FamilyPFCPauseDuration, DirRX, "")
	perPrio("tx_prio%d_pause_duration", FamilyPFCPauseDuration, DirTX, "")
	perPrio("rx_prio%d_pause_transition", FamilyPFCPauseTransitions, DirRX, "")
	perPrio("rx_prio%d_bytes", FamilyPriorityBytes, DirRX, "")
	perPrio("tx_prio%d_bytes", FamilyPriorityBytes, DirTX, "")
	perPrio("rx_prio%d_packets", FamilyPriorityPackets, DirRX, "")
	perPrio("tx_prio%d_packets", FamilyPriorityPackets, DirTX, "")
	perPrio("rx_prio%d_discards", FamilyPriorityDiscards, DirRX, ReasonDiscard)
	perPrio("rx_prio%d_buf_discard", FamilyPriorityDiscards, DirRX, ReasonBuffer)
	perPrio("rx_prio%d_cong_discard", FamilyPriorityDiscards, DirRX, ReasonCongestion)
	perPrio("rx_prio%d_marked", FamilyPriorityECNMarkedPackets, DirRX, "")

	// bnxt_en (bnxt_ethtool.c; names confirmed in a real 6.6-kernel capture,
	// see testdata/bnxt_en-ethtool-S.txt.source). bnxt lists all eight
	// priorities whether or not PFC is enabled on them.
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

	one := func(name string, f Family, dir, severity string) {
		add(name, newEntry(f, dir, -1, severity, ""))
	}
	one("tx_pause_storm_warning_events", FamilyPFCPauseStormEvents, "", SeverityWarning)
	one("tx_pause_storm_error_events", FamilyPFCPauseStormEvents, "", SeverityError)

	one("rx_discards_phy", FamilyPHYDiscards, DirRX, "")
	one("tx_discards_phy", FamilyPHYDiscards, DirTX, "")

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

// expand substitutes the single %d of a driver name format. It runs only at
// init, so simplicity beats speed.
func expand(format string, p int) string {
	for i := 0; i+1 < len(format); i++ {
		if format[i] == '%' && format[i+1] == 'd' {
			return format[:i] + strconv.Itoa(p) + format[i+2:]
		}
	}
	panic("nicstats: format without %d: " + format)
}

// Classify returns the canonical meaning of one raw statistic name. The
// result's Index and Raw are left zero; NewMapping fills them.
func Classify(name string) Entry {
	if e, ok := classifier[name]; ok {
		return e
	}
	return Entry{Family: FamilyUnmapped, Priority: -1}
}
