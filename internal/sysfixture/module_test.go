package sysfixture

import (
	"math"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/node"
)

// The generated captures read back, through the exporter's own parser and
// decoder, as the module they describe: OSFP and QSFP112 alike.
func TestModuleCaptureRoundTrip(t *testing.T) {
	for _, m := range []*Module{DefaultModule(2), QSFP112Module(0)} {
		eep, err := node.ParseModuleHex(strings.NewReader(ethtoolModule("eth0", m)))
		if err != nil {
			t.Fatal(err)
		}
		tr, err := node.DecodeModule(eep)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Spec != node.SpecCMIS || tr.Identifier != m.Identifier || tr.Vendor != m.Vendor || tr.PartNumber != m.PN || tr.SN != m.SN || tr.Media != node.MediaOptical {
			t.Errorf("%+v", tr)
		}
		if math.Abs(tr.TemperatureCelsius-m.TempC) > 1.0/256 || math.Abs(tr.SupplyVolts-m.Vcc) > 1e-4 {
			t.Errorf("temperature %v vcc %v", tr.TemperatureCelsius, tr.SupplyVolts)
		}
		if len(tr.Lanes) != len(m.RxPowerMW) {
			t.Fatalf("%d lanes", len(tr.Lanes))
		}
		for i, l := range tr.Lanes {
			if math.Abs(l.RxPowerWatts-m.RxPowerMW[i]*1e-3) > 1e-7 || math.Abs(l.BiasAmperes-m.BiasMA[i]*1e-3) > 2e-6 || math.Abs(l.TxPowerWatts-m.TxPowerMW[i]*1e-3) > 1e-7 {
				t.Errorf("lane %d: %+v", i+1, l)
			}
		}
		if tr.TempThresholds == nil || tr.TempThresholds.HighWarning != 70 || tr.RxPowerThresholds == nil || math.Abs(tr.RxPowerThresholds.LowAlarm-0.1288e-3) > 1e-9 {
			t.Errorf("thresholds %+v %+v", tr.TempThresholds, tr.RxPowerThresholds)
		}
		if tr.BiasThresholds == nil {
			t.Error("no bias thresholds")
		}
	}
	if ModuleType := node.ModuleType(QSFP112Module(0).Identifier); ModuleType != "QSFP+ CMIS" {
		t.Errorf("QSFP112 type %q", ModuleType)
	}
}
