package collector

import (
	"strings"
	"unicode"
)

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

// mlx5QCounters are the mlx5 hw_counters backed by 32-bit firmware
// q-counters (be32 in drivers/infiniband/hw/mlx5/counters.c): they wrap at
// 2^32 and are extended to 64 bits across scrapes. The congestion counters
// and rx_icrc_encapsulated are 64-bit and are not in this set.
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

// isHWGauge reports hw_counters files that hold a current level, not a
// running count (bnxt_re active_qps, watermark_*): they are gauges.
func isHWGauge(canonical string) bool {
	return strings.HasPrefix(canonical, "active_") || strings.HasPrefix(canonical, "watermark_")
}

// canonicalHWName returns the exported name for a hw_counters file.
func canonicalHWName(raw string) string {
	if c, ok := hwCounterAliases[raw]; ok {
		return c
	}
	return sanitizeName(raw)
}

// sanitizeName turns a driver's counter name into a metric-name fragment:
// lower snake case, camelCase split ("ip4InOctets" -> "ip4_in_octets",
// "RxECNMrkd" -> "rx_ecn_mrkd"), anything else replaced by "_".
func sanitizeName(raw string) string {
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

// counterMetricName names a counters/ (IB PMA) file. The data counters
// count 4-byte words and are exported in bytes.
func counterMetricName(raw string) (name string, scale float64) {
	// "port_rcv_data" becomes roce_port_rcv_data_bytes_total, not
	// roce_port_port_...
	base := strings.TrimPrefix(sanitizeName(raw), "port_")
	switch raw {
	case "port_rcv_data", "port_xmit_data":
		return namespace + "_port_" + base + "_bytes_total", 4
	}
	return namespace + "_port_" + withTotal(base), 1
}

func hwMetricName(canonical string) string {
	if isHWGauge(canonical) {
		return namespace + "_hw_" + canonical
	}
	return namespace + "_hw_" + withTotal(canonical)
}

func withTotal(s string) string {
	if strings.HasSuffix(s, "_total") {
		return s
	}
	return s + "_total"
}

// counterHelp carries the meaning of the counters operators look at most
// (NVIDIA "Understanding mlx5 Linux counters", IBA PortCounters). Help text
// depends only on the metric name, as Prometheus requires.
var counterHelp = map[string]string{
	"port_rcv_data":                   "Bytes received on the port (IB PMA PortRcvData x4; on mlx5 RoCE: RDMA traffic only).",
	"port_xmit_data":                  "Bytes transmitted on the port (IB PMA PortXmitData x4; on mlx5 RoCE: RDMA traffic only).",
	"port_rcv_packets":                "Packets received on the port.",
	"port_xmit_packets":               "Packets transmitted on the port.",
	"port_rcv_errors":                 "Received packets with errors (IB PMA, saturates at its field width).",
	"port_xmit_discards":              "Outbound packets discarded because the port was down or congested.",
	"port_xmit_wait":                  "Ticks with data to send but no flow-control credits (IB); meaning differs on RoCE.",
	"link_downed":                     "Times the link failed to recover from errors and went down (8-bit, saturates).",
	"link_error_recovery":             "Times the link recovered from errors by retraining (8-bit, saturates).",
	"symbol_error":                    "Minor link errors on the physical lanes (16-bit, saturates).",
	"local_link_integrity_errors":     "Times local physical errors exceeded the threshold (4-bit, saturates).",
	"excessive_buffer_overrun_errors": "Consecutive flow-control update errors (4-bit, saturates).",
	"out_of_buffer":                   "Packets dropped because no receive WQE was posted (receiver too slow or RQ too small).",
	"out_of_sequence":                 "Out-of-sequence packets received: packet loss in the fabric.",
	"packet_seq_err":                  "NAK sequence-error packets received: loss that triggered a retransmission.",
	"local_ack_timeout_err":           "QP ACK timer expirations on the sender: loss, severe congestion or a dead peer.",
	"implied_nak_seq_err":             "Implied NAK sequence errors (read response with a higher PSN than expected): loss.",
	"duplicate_request":               "Duplicate requests received (retransmissions after loss).",
	"rnr_nak_retry_err":               "Receiver-not-ready NAKs received.",
	"req_transport_retries_exceeded":  "Requests that exhausted transport retries; the QP moved to error (job-killing).",
	"req_rnr_retries_exceeded":        "Requests that exhausted RNR retries.",
	"rp_cnp_ignored":                  "CNPs received but ignored by the reaction point; rising means ECN/DCQCN is disabled on that priority.",
	"rp_cnp_handled":                  "CNPs handled by the reaction point to throttle the sender (congestion).",
	"np_ecn_marked_roce_packets":      "RoCE v2 packets received with ECN CE marked by the fabric (congestion).",
	"np_cnp_sent":                     "CNPs sent by the notification point in reaction to CE-marked packets.",
	"rx_icrc_encapsulated":            "RoCE packets with ICRC errors (corruption: optics, cable, NIC or switch).",
	"roce_adp_retrans":                "Adaptive retransmissions (hardware ACK-timeout tuning): a loss indicator.",
	"roce_adp_retrans_to":             "Timeouts during adaptive retransmission.",
	"rx_write_requests":               "RDMA WRITE requests received.",
	"rx_read_requests":                "RDMA READ requests received.",
	"rx_atomic_requests":              "Atomic requests received.",
	"resp_cqe_error":                  "Responder completions with error.",
	"req_cqe_error":                   "Requester completions with error.",
	"req_cqe_flush_error":             "Requester completions flushed after a QP moved to error.",
	"resp_cqe_flush_error":            "Responder completions flushed after a QP moved to error.",
}

func helpFor(kind, canonical string) string {
	if h, ok := counterHelp[canonical]; ok {
		return h
	}
	return "Value of the RDMA " + kind + " file " + canonical + "."
}
