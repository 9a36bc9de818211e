package health

import (
	"math"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/node"
)

func testModule() *node.Transceiver {
	return &node.Transceiver{
		Type: "OSFP", Vendor: "NVIDIA", PartNumber: "MMA4Z00-NS400", SN: "X",
		TemperatureCelsius: 45, SupplyVolts: 3.29,
		Lanes:             []node.Lane{{TxPowerWatts: 1.3e-3, RxPowerWatts: 1.1e-3, BiasAmperes: 8e-3}, {TxPowerWatts: 1.3e-3, RxPowerWatts: 1.0e-3, BiasAmperes: 8e-3}},
		TempThresholds:    &node.Limits{HighAlarm: 75, LowAlarm: -5, HighWarning: 70, LowWarning: 0},
		VccThresholds:     &node.Limits{HighAlarm: 3.63, LowAlarm: 3.05, HighWarning: 3.465, LowWarning: 3.135},
		RxPowerThresholds: &node.Limits{HighAlarm: 3.5481e-3, LowAlarm: 0.1288e-3, HighWarning: 2.8184e-3, LowWarning: 0.2042e-3},
		TxPowerThresholds: &node.Limits{HighAlarm: 3.5481e-3, LowAlarm: 0.4074e-3, HighWarning: 2.8184e-3, LowWarning: 0.5129e-3},
		BiasThresholds:    &node.Limits{HighAlarm: 10e-3, LowAlarm: 2e-3, HighWarning: 8.5e-3, LowWarning: 3e-3},
	}
}

// Both sides of the module judgement: silent within thresholds, a warning
// past a warning threshold, an alarm past an alarm one, dark lanes once.
func TestJudgeModule(t *testing.T) {
	if ex, dark := judgeModule(testModule()); len(ex) != 0 || dark != 0 {
		t.Errorf("healthy module judged %+v dark %d", ex, dark)
	}
	m := testModule()
	m.Lanes[1].RxPowerWatts = 0.15e-3 // -8.24 dBm: past the warning only
	ex, _ := judgeModule(m)
	if len(ex) != 1 || ex[0].alarm || ex[0].kind != "rx" || !strings.Contains(ex[0].text.String(), "lane 2 Rx power -8.24 dBm below the module's low warning -6.90 dBm (alarm -8.90 dBm)") {
		t.Errorf("dim lane: %+v", ex)
	}
	m.TemperatureCelsius = 76
	ex, _ = judgeModule(m)
	if len(ex) != 2 || !ex[0].alarm || ex[0].kind != "temp" {
		t.Errorf("hot module: %+v", ex)
	}
	m = testModule()
	m.Lanes[0].RxPowerWatts, m.Lanes[1].RxPowerWatts = 1e-7, 0
	if ex, dark := judgeModule(m); len(ex) != 0 || dark != 2 {
		t.Errorf("dark module: %+v dark %d", ex, dark)
	}
	// An unmonitored value (NaN) is never judged.
	m = testModule()
	m.TemperatureCelsius = math.NaN()
	m.Lanes[0].BiasAmperes = math.NaN()
	if ex, _ := judgeModule(m); len(ex) != 0 {
		t.Errorf("NaN judged: %+v", ex)
	}
	if dBm(1e-3) != "0.00 dBm" || dBm(0) != "-inf dBm" {
		t.Error("dBm")
	}
}

func TestModuleFixNamesTheCause(t *testing.T) {
	fix := moduleFix("eth0", map[string]bool{"rx": true, "temp": true}).String()
	for _, want := range []string{"clean both fibre ends", "airflow", "ethtool -m eth0"} {
		if !strings.Contains(fix, want) {
			t.Errorf("fix lacks %q: %s", want, fix)
		}
	}
}

func TestLinkDownReason(t *testing.T) {
	for _, c := range []struct {
		p    *node.PHY
		want string
	}{
		{nil, ""},
		{&node.PHY{LinkKnown: true, Link: true}, ""},
		{&node.PHY{LinkKnown: true, ExtState: "no_cable"}, "; the driver says: no cable"},
		{&node.PHY{LinkKnown: true, ExtState: "autoneg", ExtSubstate: "no_partner_detected"}, "; the driver says: autoneg, no partner detected"},
	} {
		if got := linkDownReason(c.p).String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.p, got, c.want)
		}
	}
}

// The check on both sides through the registry: a module within its own
// thresholds is ok, one without thresholds is ok (nothing to judge by),
// past a warning threshold warns, past an alarm fails, and a dark one fails.
func TestCheckTransceiverBothSides(t *testing.T) {
	const id, subj = "transceiver_within_thresholds", "ens1f0np0"
	runCases(t, []checkCase{
		{name: "healthy", id: id, subject: subj, want: StatusOK, msg: []string{"within its own thresholds"}},
		{name: "no thresholds", snap: func(s *node.Snapshot) {
			m := testModule()
			m.TempThresholds, m.VccThresholds, m.RxPowerThresholds, m.TxPowerThresholds, m.BiasThresholds = nil, nil, nil, nil, nil
			s.Transceivers[subj] = m
		}, id: id, subject: subj, want: StatusOK, msg: []string{"publishes no thresholds"}},
		{name: "dim lane", snap: func(s *node.Snapshot) {
			m := testModule()
			m.Lanes[1].RxPowerWatts = 0.15e-3
			s.Transceivers[subj] = m
		}, id: id, subject: subj, want: StatusWarn, msg: []string{"lane 2 Rx power -8.24 dBm below the module's low warning"}},
		{name: "hot", snap: func(s *node.Snapshot) {
			m := testModule()
			m.TemperatureCelsius = 76
			s.Transceivers[subj] = m
		}, id: id, subject: subj, want: StatusFail, fix: []string{"airflow"}},
		{name: "dark", snap: func(s *node.Snapshot) {
			m := testModule()
			m.Lanes[0].RxPowerWatts, m.Lanes[1].RxPowerWatts = 0, 0
			s.Transceivers[subj] = m
		}, id: id, subject: subj, want: StatusFail, msg: []string{"receives no light"}},
	})
}
