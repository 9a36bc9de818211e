package collector

import (
	"math"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/pipeline"
)

func transceiverSnap() *node.Snapshot {
	return &node.Snapshot{Transceivers: map[string]*node.Transceiver{"eth0": {
		Interface: "eth0", Type: "OSFP", Spec: node.SpecCMIS, Media: node.MediaOptical, Vendor: "NVIDIA",
		TemperatureCelsius: 44.5, SupplyVolts: math.NaN(),
		Lanes:             []node.Lane{{TxPowerWatts: 1.3e-3, RxPowerWatts: 1.1e-3, BiasAmperes: 8e-3}, {TxPowerWatts: math.NaN(), RxPowerWatts: 9.12e-5, BiasAmperes: 8e-3}},
		TempThresholds:    &node.Limits{HighAlarm: 75, LowAlarm: -5, HighWarning: 70},
		RxPowerThresholds: &node.Limits{},
	}}}
}

// Rx power per lane always; Tx power and bias per lane only when asked;
// an unmonitored value (NaN) and all-zero thresholds give no series.
func TestTransceiverCollectorSeries(t *testing.T) {
	for _, lanes := range []bool{false, true} {
		var s Sink
		if err := (transceiverCollector{laneMonitors: lanes}).Update(&pipeline.Collection{Snapshot: transceiverSnap()}, &s); err != nil {
			t.Fatal(err)
		}
		text := rendered(&s, &sortCache{})
		for _, want := range []string{`roce_transceiver_rx_power_watts{interface="eth0",lane="2"} 9.12e-05`, `roce_transceiver_temperature_celsius{interface="eth0"} 44.5`,
			`roce_transceiver_threshold{interface="eth0",monitor="temperature",threshold="high_warning"} 70`} {
			if !strings.Contains(text, want) {
				t.Errorf("lanes %v: no %s in\n%s", lanes, want, text)
			}
		}
		if strings.Contains(text, "supply_voltage") || strings.Contains(text, `monitor="rx_power"`) {
			t.Errorf("a NaN or an all-zero threshold exported:\n%s", text)
		}
		if got := strings.Contains(text, "roce_transceiver_tx_bias_amperes{"); got != lanes {
			t.Errorf("lane monitors %v: bias exported %v", lanes, got)
		}
		if lanes && strings.Contains(text, `roce_transceiver_tx_power_watts{interface="eth0",lane="2"}`) {
			t.Error("a NaN Tx power exported")
		}
	}
}

func TestPHYCollectorSeries(t *testing.T) {
	snap := &node.Snapshot{PHY: map[string]*node.PHY{
		"eth0": {FECMode: "RS", FECCorrected: &node.FECCounter{Total: 256, Lanes: []uint64{255, 1}}, FECUncorrectable: &node.FECCounter{Total: 3}, LinkKnown: true, Link: true},
		"eth1": {LinkKnown: true, ExtState: "no_cable"},
		"eth2": {LinkKnown: true, Link: true, ExtState: "autoneg"},
	}}
	var s Sink
	if err := (phyCollector{}).Update(&pipeline.Collection{Snapshot: snap}, &s); err != nil {
		t.Fatal(err)
	}
	text := rendered(&s, &sortCache{})
	for _, want := range []string{`roce_phy_fec_corrected_blocks_total{interface="eth0"} 256`, `roce_phy_fec_uncorrectable_blocks_total{interface="eth0"} 3`,
		`roce_phy_fec_mode_info{interface="eth0",mode="RS"} 1`, `roce_phy_link_down_reason_info{interface="eth1",state="no_cable",substate=""} 1`} {
		if !strings.Contains(text, want) {
			t.Errorf("no %s in\n%s", want, text)
		}
	}
	if strings.Contains(text, `interface="eth2"`) || strings.Contains(text, `fec_corrected_blocks_total{interface="eth1"}`) {
		t.Errorf("a reason for an up link, or FEC where none is counted:\n%s", text)
	}
}
