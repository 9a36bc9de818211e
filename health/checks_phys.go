package health

import (
	"fmt"
	"math"
	"strings"

	"github.com/roce-exporter/roce_exporter/node"
)

// dBm renders an optical power in watts as engineers read it.
func dBm(w float64) string {
	if w <= 0 {
		return "-inf dBm"
	}
	return fmt.Sprintf("%.2f dBm", 10*math.Log10(w/1e-3))
}

// excursion is one monitor past one of the module's thresholds.
type excursion struct {
	alarm bool
	text  Text
	// kind picks the fix: "rx", "temp", "tx" (laser, bias), "vcc".
	kind string
}

// judgeModule compares every monitor of a module with the module's own
// thresholds (SFF-8636 page 03h, CMIS page 02h): the vendor's limits for
// that optic, not a guess of ours.
func judgeModule(t *node.Transceiver) (ex []excursion, lanesDark int) {
	check := func(kind string, what Text, v float64, l *node.Limits, format func(float64) string) {
		lv, dir := l.Level(v)
		if lv == node.LevelOK {
			return
		}
		var limit, other float64
		switch {
		case dir == "high" && lv == node.LevelAlarm:
			limit, other = l.HighAlarm, l.HighWarning
		case dir == "high":
			limit, other = l.HighWarning, l.HighAlarm
		case lv == node.LevelAlarm:
			limit, other = l.LowAlarm, l.LowWarning
		default:
			limit, other = l.LowWarning, l.LowAlarm
		}
		// One whole sentence per side and level, so that each translates
		// as one.
		var text Text
		switch {
		case dir == "high" && lv == node.LevelAlarm:
			text = Textf("%s %s above the module's high alarm %s (warning %s)", what, format(v), format(limit), format(other))
		case dir == "high":
			text = Textf("%s %s above the module's high warning %s (alarm %s)", what, format(v), format(limit), format(other))
		case lv == node.LevelAlarm:
			text = Textf("%s %s below the module's low alarm %s (warning %s)", what, format(v), format(limit), format(other))
		default:
			text = Textf("%s %s below the module's low warning %s (alarm %s)", what, format(v), format(limit), format(other))
		}
		ex = append(ex, excursion{alarm: lv == node.LevelAlarm, kind: kind, text: text})
	}
	celsius := func(v float64) string { return fmt.Sprintf("%.1f °C", v) }
	volts := func(v float64) string { return fmt.Sprintf("%.3f V", v) }
	milliamps := func(v float64) string { return fmt.Sprintf("%.2f mA", v*1e3) }
	check("temp", Textf("temperature"), t.TemperatureCelsius, t.TempThresholds, celsius)
	check("vcc", Textf("supply voltage"), t.SupplyVolts, t.VccThresholds, volts)
	for i, l := range t.Lanes {
		lane := i + 1
		// No light at all is a dark fibre or a silent peer, said once for
		// the module, not as one alarm per lane.
		if !math.IsNaN(l.RxPowerWatts) && l.RxPowerWatts <= 1e-7 {
			lanesDark++
			continue
		}
		check("rx", Textf("lane %d Rx power", lane), l.RxPowerWatts, t.RxPowerThresholds, dBm)
		check("tx", Textf("lane %d Tx power", lane), l.TxPowerWatts, t.TxPowerThresholds, dBm)
		check("tx", Textf("lane %d laser bias", lane), l.BiasAmperes, t.BiasThresholds, milliamps)
	}
	return ex, lanesDark
}

func moduleName(t *node.Transceiver) string {
	s := strings.TrimSpace(strings.Join([]string{t.Type, t.Vendor, t.PartNumber}, " "))
	if t.SN != "" {
		s += " SN " + t.SN
	}
	return s
}

func checkTransceiver(e *env, r *results) {
	for _, t := range e.targets {
		subj := t.subject()
		if t.ib() {
			r.skip(subj, Textf("InfiniBand port: its module is read with `mlxlink -m`, not ethtool"))
			continue
		}
		if t.absent() {
			r.skip(subj, t.missingReason("netdev"))
			continue
		}
		tr := e.snap.Transceivers[t.netdev]
		if tr == nil {
			if why := e.sourceReason(node.SourceTransceiver, Textf("module EEPROM")); !why.Empty() {
				r.skip(subj, why)
			} else {
				r.skip(subj, Textf("no readable module in %s (an empty cage, a cable without monitors, or a driver without module access)", t.netdev))
			}
			continue
		}
		name := moduleName(tr)
		if tr.TempThresholds == nil && tr.RxPowerThresholds == nil {
			r.ok(subj, Textf("%s publishes no thresholds to judge it by%s", name, moduleReading(tr)))
			continue
		}
		ex, dark := judgeModule(tr)
		if dark > 0 && dark == len(tr.Lanes) {
			r.fail(subj, Textf("%s receives no light on any of its %d lanes%s", name, dark, moduleReading(tr)),
				Textf("the fibre is unplugged or broken, or the far end is not transmitting: check the cable is seated at both ends, the switch port is enabled (and its optic lit), and the fibre run; `ethtool -m %s` shows the per-lane Rx power", t.netdev))
			continue
		}
		if dark > 0 {
			ex = append(ex, excursion{alarm: true, kind: "rx", text: Textf("%d of %d lanes receive no light", dark, len(tr.Lanes))})
		}
		if len(ex) == 0 {
			r.ok(subj, Textf("%s within its own thresholds%s", name, moduleReading(tr)))
			continue
		}
		var texts []Text
		alarm := false
		kinds := map[string]bool{}
		for _, x := range ex {
			texts = append(texts, x.text)
			alarm = alarm || x.alarm
			kinds[x.kind] = true
		}
		msg := Textf("%s: %s", name, JoinTexts(texts, "; "))
		fix := moduleFix(t.netdev, kinds)
		if alarm {
			r.fail(subj, msg, fix)
		} else {
			r.warn(subj, msg, fix)
		}
	}
}

// moduleReading summarises the module's readings for a message.
func moduleReading(t *node.Transceiver) Text {
	var parts []Text
	if !math.IsNaN(t.TemperatureCelsius) {
		parts = append(parts, Textf("%.1f °C", t.TemperatureCelsius))
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, l := range t.Lanes {
		if !math.IsNaN(l.RxPowerWatts) {
			lo, hi = math.Min(lo, l.RxPowerWatts), math.Max(hi, l.RxPowerWatts)
		}
	}
	if !math.IsInf(lo, 0) {
		parts = append(parts, Textf("Rx %s to %s on %d lanes", dBm(lo), dBm(hi), len(t.Lanes)))
	}
	if len(parts) == 0 {
		return Textf("")
	}
	return Textf(" (%s)", JoinTexts(parts, ", "))
}

func moduleFix(netdev string, kinds map[string]bool) Text {
	var steps []Text
	if kinds["rx"] {
		steps = append(steps, Textf("low Rx power is light lost between the far-end laser and this module: clean both fibre ends and the module's receptacle (a one-click cleaner for MPO/LC), reseat the optic and the cable, check the patch panel; if the far end's Tx power is normal and cleaning does not help, replace the cable, then the optic"))
	}
	if kinds["temp"] {
		steps = append(steps, Textf("a hot module is an airflow problem first: check the server's fans and fan speed, blanking panels and anything blocking the NIC's cage; reseat the optic, and replace it if it stays hot while its neighbours are cool"))
	}
	if kinds["tx"] {
		steps = append(steps, Textf("a laser outside its power or bias limits is wearing out: replace the optic"))
	}
	if kinds["vcc"] {
		steps = append(steps, Textf("a supply voltage outside limits comes from the NIC or the module: reseat the module, then try it in another port"))
	}
	return Textf("%s. `ethtool -m %s` shows every reading and threshold", JoinTexts(steps, "; "), netdev)
}

// linkDownReason is the driver's own reason for a link that is down
// (ethtool's extended link state), as a message suffix; "" when it gives
// none.
func linkDownReason(p *node.PHY) Text {
	if p == nil || !p.LinkKnown || p.Link || p.ExtState == "" {
		return Textf("")
	}
	r := strings.ReplaceAll(p.ExtState, "_", " ")
	if p.ExtSubstate != "" {
		r += ", " + strings.ReplaceAll(p.ExtSubstate, "_", " ")
	}
	return Textf("; the driver says: %s", r)
}
