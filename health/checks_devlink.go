package health

import (
	"strings"

	"github.com/roce-exporter/roce_exporter/node"
)

// checkDevlinkHealth judges each RDMA device by the devlink health reporters
// of its PCI function (device reporters and those of its ports). A reporter
// in error fails: the driver saw a fault it has not recovered from (mlx5
// tx: a send queue stuck after a timeout or an error completion; fw_fatal:
// the firmware crashed). Errors that increased between the two samples warn
// even when recovered, since each recovery resets a queue under traffic;
// errors since the driver loaded, all recovered, warn as history.
func checkDevlinkHealth(e *env, r *results) {
	if why := e.sourceReason(node.SourceDevlink, Textf("devlink health reporters")); !why.Empty() {
		for _, d := range e.devices {
			r.skip(d.Name, why)
		}
		return
	}
	prev := map[string]*node.HealthReporter{}
	if e.prev != nil {
		for _, hr := range e.prev.HealthReporters {
			prev[hr.Handle+" "+hr.Name] = hr
		}
	}
	for _, d := range e.devices {
		if d.PCIAddress == "" {
			r.skip(d.Name, Textf("%s has no PCI function, so no devlink instance", d.Name))
			continue
		}
		var reps []*node.HealthReporter
		for _, hr := range e.snap.HealthReporters {
			if hr.PCIAddress == d.PCIAddress {
				reps = append(reps, hr)
			}
		}
		if len(reps) == 0 {
			r.skip(d.Name, Textf("no devlink health reporter on pci/%s (its driver registers none)", d.PCIAddress))
			continue
		}
		var inError []Text
		var rising []Text
		var history []Text
		var names []string
		var fixHandle, fixName string // the first reporter with a fault, for the fix
		compared := false
		for _, hr := range reps {
			names = append(names, hr.Name)
			if fixHandle == "" && (!hr.Healthy || hr.Errors > 0) {
				fixHandle, fixName = hr.Handle, hr.Name
			}
			counts := Textf("%d error(s), %d recovery(ies)", hr.Errors, hr.Recoveries)
			if !hr.Healthy {
				inError = append(inError, Textf("%s (%s) is in error: %s", hr.Name, hr.Handle, counts))
				continue
			}
			p := prev[hr.Handle+" "+hr.Name]
			var w window
			if p != nil {
				w = e.window(hr.Errors, p.Errors, true)
			}
			compared = compared || w.compared
			switch {
			case w.rising():
				rising = append(rising, Textf("%s (%s): %d new error(s)%s, recovered (%s since the driver loaded)", hr.Name, hr.Handle, w.inc, w.last(), counts))
			case hr.Errors > 0:
				history = append(history, Textf("%s (%s): %s since the driver loaded%s", hr.Name, hr.Handle, counts, w.historyNote()))
			}
		}
		fix := devlinkFix(fixHandle, fixName)
		switch {
		case len(inError) > 0:
			r.fail(d.Name, Textf("%s: the driver reported a fault it has not recovered from", JoinTexts(append(append(inError, rising...), history...), "; ")), fix)
		case len(rising) > 0:
			r.warn(d.Name, Textf("%s: each recovery resets a queue or the function under traffic", JoinTexts(append(rising, history...), "; ")), fix)
		case len(history) > 0:
			r.warn(d.Name, JoinTexts(history, "; "), fix)
		default:
			msg := Textf("%d devlink health reporter(s) healthy, no errors (%s)", len(reps), strings.Join(names, ", "))
			if compared {
				msg = Textf("%s in either sample", msg)
			}
			r.ok(d.Name, msg)
		}
	}
}

// devlinkFix is what to run for a reporter that saw errors.
func devlinkFix(handle, name string) Text {
	lines := []Text{
		Textf("see what the driver saw: `devlink health diagnose %s reporter %s` and `devlink health dump show %s reporter %s`; `dmesg | grep -iE 'mlx5|health|timeout'` has the kernel's side", handle, name, handle, name),
	}
	switch name {
	case "fw_fatal", "fw":
		lines = append(lines, Textf("firmware errors: save that dump and `mlxfwmanager --query` output for the NIC vendor, update the NIC firmware; a fatal error that recurs means replacing the card"))
	case "tx", "rx":
		lines = append(lines, Textf("queue errors (TX timeouts, error completions) usually follow PFC pause storms or a flapping link: check no_pfc_storm and no_link_flaps for this port"))
	}
	lines = append(lines, Textf("if it stays in error, `devlink health recover %s reporter %s` retries the recovery; a driver reload or reboot clears it for good", handle, name))
	return JoinTexts(lines, "; ")
}
