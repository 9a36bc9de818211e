package node

import (
	"strings"
	"unicode"
)

// The IB PMA data counters count 4-byte words, not bytes (IBA PortRcvData /
// PortXmitData).
const (
	CounterPortRcvData  = "port_rcv_data"
	CounterPortXmitData = "port_xmit_data"
	PMADataWordBytes    = 4
)

// CountersExtDir is MLNX_OFED's directory of the 64-bit IBA
// PortCountersExtended attributes, beside the PortCounters of counters/
// (drivers/infiniband/core/sysfs.c of mlnx-ofa_kernel 2.x/3.x, pma_ext_group;
// OFED 4.0 and kernel 4.5 moved the 64-bit values into counters/). Its
// files: port_{xmit,rcv}_{data,packets}_64 and
// port_{unicast,multicast}_{xmit,rcv}_packets.
const CountersExtDir = "counters_ext"

// CountersExtName maps a counters_ext/ file onto the name the same
// PortCountersExtended field has in counters/ on current kernels:
// port_rcv_data_64 is port_rcv_data (still in 4-byte words),
// port_unicast_rcv_packets is unicast_rcv_packets.
func CountersExtName(raw string) string {
	name := SnakeCase(raw)
	if base, ok := strings.CutSuffix(name, "_64"); ok {
		return base
	}
	for _, cast := range []string{"port_unicast_", "port_multicast_"} {
		if rest, ok := strings.CutPrefix(name, cast); ok {
			return strings.TrimPrefix(cast, "port_") + rest
		}
	}
	return name
}

// IsPMADataCounter reports the counters/ files that count 4-byte words.
func IsPMADataCounter(name string) bool {
	return name == CounterPortRcvData || name == CounterPortXmitData
}

// hwCounterAliases maps other drivers' hw_counters names to the mlx5 name
// with the same meaning, so one alert works on every vendor. bnxt_re renamed
// most of these to the mlx5 names in 2025; older kernels still use the left
// column. irdma (Intel E810) uses camelCase.
var hwCounterAliases = map[string]string{
	// bnxt_re, before the rename
	"to_retransmits":     "local_ack_timeout_err",
	"seq_err_naks_rcvd":  "packet_seq_err",
	"rnr_naks_rcvd":      "rnr_nak_retry_err",
	"dup_req":            "duplicate_request",
	"oos_drop_count":     "out_of_sequence",
	"rx_out_of_buffer":   "out_of_buffer",
	"max_retry_exceeded": "req_transport_retries_exceeded",
	"rx_ecn_marked_pkts": "np_ecn_marked_roce_packets",
	"tx_cnp_pkts":        "np_cnp_sent",
	"np_cnp_pkts":        "np_cnp_sent",
	"rx_cnp_pkts":        "rp_cnp_handled",
	"rx_atomic_req":      "rx_atomic_requests",
	"rx_read_req":        "rx_read_requests",
	"rx_write_req":       "rx_write_requests",
	// irdma gen2
	"cnpHandled": "rp_cnp_handled",
	"cnpIgnored": "rp_cnp_ignored",
	"cnpSent":    "np_cnp_sent",
	"RxECNMrkd":  "np_ecn_marked_roce_packets",
}

// IsHWCounterAlias reports a vendor name that CanonicalHWName maps onto an
// mlx5 name. Where a transitional driver shows both, the native name wins.
func IsHWCounterAlias(raw string) bool {
	_, ok := hwCounterAliases[raw]
	return ok
}

// CanonicalHWName returns the driver-neutral name of a hw_counters file: the
// mlx5 name where another vendor's counter means the same, else the raw name
// in lower snake case.
func CanonicalHWName(raw string) string {
	if c, ok := hwCounterAliases[raw]; ok {
		return c
	}
	return SnakeCase(raw)
}

// mlx5QCounters are the mlx5 hw_counters backed by 32-bit firmware
// q-counters (be32 in drivers/infiniband/hw/mlx5/counters.c): they wrap at
// 2^32 and must be extended to 64 bits across reads. The congestion
// counters and rx_icrc_encapsulated are 64-bit and are not in this set.
var mlx5QCounters = map[string]bool{
	"rx_write_requests": true, "rx_read_requests": true, "rx_atomic_requests": true,
	"rx_dct_connect": true, "out_of_buffer": true, "out_of_sequence": true,
	"duplicate_request": true, "rnr_nak_retry_err": true, "packet_seq_err": true,
	"implied_nak_seq_err": true, "local_ack_timeout_err": true,
	"resp_local_length_error": true, "resp_cqe_error": true, "req_cqe_error": true,
	"req_remote_invalid_request": true, "req_remote_access_errors": true,
	"resp_remote_access_errors": true, "resp_cqe_flush_error": true,
	"req_cqe_flush_error": true, "req_transport_retries_exceeded": true,
	"req_rnr_retries_exceeded": true, "roce_adp_retrans": true, "roce_adp_retrans_to": true,
	"roce_slow_restart": true, "roce_slow_restart_cnps": true, "roce_slow_restart_trans": true,
}

// Wraps32 reports whether a hw_counters file of this driver is a 32-bit
// counter that wraps. An unknown driver ("" when the PCI parent is not
// readable) is treated as mlx5, the only driver with such counters: extending
// a 64-bit counter is harmless, missing a wrap is not.
func Wraps32(driver, canonical string) bool {
	return (driver == "mlx5_core" || driver == "") && mlx5QCounters[canonical]
}

// IsHWGauge reports hw_counters files that hold a current level, not a
// running count (bnxt_re active_qps, watermark_*).
func IsHWGauge(canonical string) bool {
	return strings.HasPrefix(canonical, "active_") || strings.HasPrefix(canonical, "watermark_")
}

// HWCountersLifespanFile is the hw_counters file that is a setting (the
// kernel's cache period in milliseconds), not a counter.
const HWCountersLifespanFile = "lifespan"

// SnakeCase turns a driver's counter name into lower snake case: camelCase
// split ("ip4InOctets" -> "ip4_in_octets", "RxECNMrkd" -> "rx_ecn_mrkd"),
// anything but ASCII letters and digits replaced by "_". The result is a
// valid metric-name fragment.
func SnakeCase(raw string) string {
	var b strings.Builder
	b.Grow(len(raw) + 4)
	rs := []rune(raw)
	lastUnderscore := true
	for i, r := range rs {
		switch {
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if unicode.IsUpper(r) && i > 0 && !lastUnderscore {
				prev := rs[i-1]
				nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
				if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
					b.WriteByte('_')
				}
			}
			b.WriteRune(unicode.ToLower(r))
			lastUnderscore = false
		default:
			if !lastUnderscore {
				b.WriteByte('_')
				lastUnderscore = true
			}
		}
	}
	s := strings.TrimRight(b.String(), "_")
	if s == "" {
		return "unnamed"
	}
	if s[0] >= '0' && s[0] <= '9' {
		s = "_" + s
	}
	return s
}
