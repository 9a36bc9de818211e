package collector

import (
	"testing"

	"github.com/roce-exporter/roce_exporter/node"
)

func TestMetricNames(t *testing.T) {
	for raw, want := range map[string]string{
		"port_rcv_data":  "roce_port_rcv_data_bytes_total",
		"port_xmit_data": "roce_port_xmit_data_bytes_total",
		"port_xmit_wait": "roce_port_xmit_wait_total",
		"link_downed":    "roce_port_link_downed_total",
		"VL15_dropped":   "roce_port_vl15_dropped_total",
	} {
		if got, _ := counterMetricName(node.SnakeCase(raw)); got != want {
			t.Errorf("counterMetricName(%q) = %q, want %q", raw, got, want)
		}
	}
	for raw, want := range map[string]string{
		"np_ecn_marked_roce_packets": "roce_hw_np_ecn_marked_roce_packets_total",
		"to_retransmits":             "roce_hw_local_ack_timeout_err_total",
		"cnpIgnored":                 "roce_hw_rp_cnp_ignored_total",
		"active_qps":                 "roce_hw_active_qps",
		"ip4InOctets":                "roce_hw_ip4_in_octets_total",
	} {
		if got := hwMetricName(node.CanonicalHWName(raw)); got != want {
			t.Errorf("hw name of %q = %q, want %q", raw, got, want)
		}
	}
}
