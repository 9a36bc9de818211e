package collector

import (
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/pipeline"
)

func init() { registerSource(node.SourceTransceiver, newTransceiverCollector) }

var (
	transceiverInfoDesc = newGaugeDesc(namespace+"_transceiver_info",
		"The pluggable module in the interface's cage; value is always 1.",
		"interface", "type", "spec", "media", "vendor", "part_number", "revision", "serial")
	transceiverTempDesc = newGaugeDesc(namespace+"_transceiver_temperature_celsius",
		"Module temperature as the module measures it.", "interface")
	transceiverVccDesc = newGaugeDesc(namespace+"_transceiver_supply_voltage_volts",
		"Module supply voltage (3.3 V nominal).", "interface")
	transceiverRxDesc = newGaugeDesc(namespace+"_transceiver_rx_power_watts",
		"Received optical power per lane (average; OMA on old SFF-8636 modules that say so).", "interface", "lane")
	transceiverTxDesc = newGaugeDesc(namespace+"_transceiver_tx_power_watts",
		"Transmitted optical power per lane.", "interface", "lane")
	transceiverBiasDesc = newGaugeDesc(namespace+"_transceiver_tx_bias_amperes",
		"Laser bias current per lane.", "interface", "lane")
	transceiverThresholdDesc = newGaugeDesc(namespace+"_transceiver_threshold",
		"The module's own alarm and warning thresholds (SFF-8636 page 03h, CMIS page 02h) for temperature (celsius) and Rx/Tx optical power (watts); threshold is high_alarm, high_warning, low_warning or low_alarm.",
		"interface", "monitor", "threshold")
)

// transceiverCollector exports the decoded modules. Per lane it exports
// the received power (what a dirty connector lowers, and the alerts
// watch); Tx power and bias per lane double that again and are behind
// --collector.transceiver.lane-monitors (the doctor judges them anyway).
type transceiverCollector struct{ laneMonitors bool }

func newTransceiverCollector(o *Options, _ *slog.Logger) Collector {
	return transceiverCollector{laneMonitors: o != nil && o.TransceiverLaneMonitors}
}

func emitFinite(out *Sink, d *Desc, v float64, labels ...string) {
	if !math.IsNaN(v) && !math.IsInf(v, 0) {
		out.emit(d, v, labels...)
	}
}

func (c transceiverCollector) Update(col *pipeline.Collection, out *Sink) error {
	snap := col.Snapshot
	for _, iface := range slices.Sorted(maps.Keys(snap.Transceivers)) {
		t := snap.Transceivers[iface]
		out.emit(transceiverInfoDesc, 1, iface, t.Type, t.Spec, t.Media, t.Vendor, t.PartNumber, t.Revision, t.SN)
		emitFinite(out, transceiverTempDesc, t.TemperatureCelsius, iface)
		emitFinite(out, transceiverVccDesc, t.SupplyVolts, iface)
		for i, l := range t.Lanes {
			lane := strconv.Itoa(i + 1)
			emitFinite(out, transceiverRxDesc, l.RxPowerWatts, iface, lane)
			if c.laneMonitors {
				emitFinite(out, transceiverTxDesc, l.TxPowerWatts, iface, lane)
				emitFinite(out, transceiverBiasDesc, l.BiasAmperes, iface, lane)
			}
		}
		// Supply voltage and bias thresholds are left to the doctor: a
		// bias or Vcc excursion shows in temperature and power first, and
		// four constants per monitor per port are not free on a fleet.
		// By default only the limits the alerts and the optics panel compare
		// with: a hot module (temperature high) and a dim lane (Rx power
		// low), 4 series per port instead of 12; every limit with
		// --collector.transceiver.lane-monitors.
		for _, m := range []struct {
			name      string
			l         *node.Limits
			high, low bool
		}{{"temperature", t.TempThresholds, true, c.laneMonitors}, {"rx_power", t.RxPowerThresholds, c.laneMonitors, true}, {"tx_power", t.TxPowerThresholds, c.laneMonitors, c.laneMonitors}} {
			if m.l == nil || *m.l == (node.Limits{}) {
				continue
			}
			if m.high {
				out.emit(transceiverThresholdDesc, m.l.HighAlarm, iface, m.name, "high_alarm")
				out.emit(transceiverThresholdDesc, m.l.HighWarning, iface, m.name, "high_warning")
			}
			if m.low {
				out.emit(transceiverThresholdDesc, m.l.LowWarning, iface, m.name, "low_warning")
				out.emit(transceiverThresholdDesc, m.l.LowAlarm, iface, m.name, "low_alarm")
			}
		}
	}
	return nil
}
