package main

import (
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/probes"
)

// The node page shows each device's last incast: the failure with what the
// port counted and the hint, the pass, and what only the other side sees.
func TestNodePageShowsLastIncast(t *testing.T) {
	store := probes.NewStore()
	now := time.Now()
	store.Add(&probes.Result{Probe: probes.KindIncast, Peer: "node02+node03", Device: "mlx5_0", Start: now, Reason: probes.ReasonSwitchNoECN,
		Hint: probes.Hint(probes.ReasonSwitchNoECN), Warnings: []string{"no packet of the 2:1 incast arrived ECN-marked"},
		Incast: &probes.Incast{Role: probes.IncastReceiver, Receiver: "gpu-node-07", Senders: []string{"node02", "node03"},
			Counters: map[string]uint64{"np_ecn_marked_roce_packets": 0, "out_of_sequence": 0, "tx_pause_priority_3": 12},
			Unseen:   []string{"the pause frames the switch sent the senders (node02, node03)"}}})
	store.Add(&probes.Result{Probe: probes.KindIncast, Peer: "node05", Device: "mlx5_1", Start: now, Success: true,
		Incast: &probes.Incast{Role: probes.IncastSender, Receiver: "node05", Counters: map[string]uint64{"rx_pause_priority_3": 3100, "rp_cnp_handled": 10500}}})
	page := degradedPage(t, store)
	i := strings.Index(page, "The switch under incast")
	if i < 0 {
		t.Fatal("no incast section")
	}
	section := page[i:]
	section = section[:strings.Index(section, "</table>")]
	for _, want := range []string{
		`<tr class="fail"><td>FAILED: switch_no_ecn</td>`, "no packet of the 2:1 incast arrived ECN-marked", "<code>nv set qos roce mode lossless</code>",
		"tx_pause_priority_3 &#43;12", "the pause frames the switch sent the senders (node02, node03)",
		`<tr class="ok"><td>ok: no loss, the switch paused or marked</td>`, "rp_cnp_handled &#43;10500, rx_pause_priority_3 &#43;3100",
	} {
		if !strings.Contains(section, want) {
			t.Errorf("incast section lacks %q:\n%s", want, section)
		}
	}
	if strings.Contains(section, "np_ecn_marked_roce_packets &#43;0") {
		t.Error("counters that did not move are listed as moved")
	}
	if strings.Contains(degradedPage(t, probes.NewStore()), "The switch under incast") {
		t.Error("an incast section without an incast")
	}
}
