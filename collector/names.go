package collector

import (
	"strings"

	"github.com/roce-exporter/roce_exporter/node"
)

// counterMetricName names a counters/ (IB PMA) file. The data counters
// count 4-byte words and are exported in bytes.
func counterMetricName(name string) (metric string, scale float64) {
	// "port_rcv_data" becomes roce_port_rcv_data_bytes_total, not
	// roce_port_port_...
	base := strings.TrimPrefix(name, "port_")
	if node.IsPMADataCounter(name) {
		return namespace + "_port_" + base + "_bytes_total", node.PMADataWordBytes
	}
	return namespace + "_port_" + withTotal(base), 1
}

func hwMetricName(canonical string) string {
	if node.IsHWGauge(canonical) {
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
