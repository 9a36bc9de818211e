package health

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/roce-exporter/roce_exporter/node"
)

// pciSlot is a function's address without the function number: the functions of one
// multi-port card share one PCIe link, so their ports share its bandwidth.
func pciSlot(addr string) string {
	if i := strings.LastIndexByte(addr, '.'); i > 0 {
		return addr[:i]
	}
	return addr
}

// linkDemand is the port rate, in bits/s, that the PCIe link of dev must carry: every
// active port of every function on the same card. When no port is up, the planned
// rate stands in, so a downtrained slot is still caught while the cable is out.
func (e *env) linkDemand(dev *node.Device) (float64, string, bool) {
	slot := pciSlot(dev.PCIAddress)
	var sum float64
	var ports int
	var names []string
	for _, d := range e.snap.Devices {
		if d.PCIAddress == "" || pciSlot(d.PCIAddress) != slot {
			continue
		}
		names = append(names, d.Name)
		for _, p := range d.Ports {
			ports++
			if p.Up() && p.RateBitsPerSecond > 0 {
				sum += p.RateBitsPerSecond
			}
		}
	}
	what := "port rate"
	if len(names) > 1 {
		what = "combined port rate of " + joinNatural(names)
	}
	if sum > 0 {
		return sum, what, true
	}
	if exp, ok := e.expectations(); ok && exp.LinkRateGbps > 0 && ports > 0 {
		return exp.LinkRateGbps * 1e9 * float64(ports), "planned link rate", true
	}
	return 0, "", false
}

func (e *env) pciFor(d *node.Device) (*node.PCIFunction, string) {
	if d.PCIAddress == "" {
		return nil, fmt.Sprintf("%s has no PCI function (software or auxiliary device)", d.Name)
	}
	if f := e.snap.PCI[d.PCIAddress]; f != nil {
		return f, ""
	}
	if why := e.sourceReason("pcie", "PCIe link state"); why != "" {
		return nil, why
	}
	return nil, fmt.Sprintf("no PCIe link information for %s (%s)", d.Name, d.PCIAddress)
}

// upstreamLimited reports whether a port above the NIC is narrower than the NIC's own
// link; on a tie the collector may name either, and blaming the slot would mislead.
func upstreamLimited(f *node.PCIFunction) bool {
	return f.LimitedBy != "" && f.LimitedBy != f.Address && f.AvailableBandwidth > 0 && f.AvailableBandwidth < f.CurrentBandwidth
}

func linkText(speedGTs float64, width int) string {
	return fmt.Sprintf("%s GT/s x%d", num(speedGTs), width)
}

// slotFix is what to do about a PCIe link that is narrower or slower than it should be.
func slotFix(f *node.PCIFunction, needBits float64) string {
	need := ""
	switch {
	case needBits > 400e9:
		need = "a Gen6 x16 slot"
	case needBits > 200e9:
		need = "a Gen5 x16 slot"
	case needBits > 100e9:
		need = "a Gen4 x16 slot"
	case needBits > 0:
		need = "a Gen3 x16 slot"
	}
	where := "the card's own PCIe link"
	if upstreamLimited(f) {
		where = fmt.Sprintf("the upstream port %s (slot, riser or PCIe switch), not the card itself,", f.LimitedBy)
	}
	fix := fmt.Sprintf("the bottleneck is %s: power the node off and reseat the card and its riser or cable", where)
	if need != "" {
		fix += fmt.Sprintf(", and make sure it sits in %s", need)
	}
	return fix + fmt.Sprintf("; in the BIOS set the slot's link speed and width to Auto and check its bifurcation (x16, not x8x8); `lspci -vv -s %s | grep -E 'LnkCap|LnkSta'` shows capability against the trained link", f.Address)
}

func checkPCIeBandwidth(e *env, r *results) {
	for _, d := range e.devices {
		f, why := e.pciFor(d)
		if f == nil {
			r.skip(d.Name, why)
			continue
		}
		avail := f.AvailableBandwidth
		if avail <= 0 {
			avail = f.CurrentBandwidth
		}
		if avail <= 0 {
			r.skip(d.Name, fmt.Sprintf("PCIe bandwidth of %s unknown", f.Address))
			continue
		}
		needBits, what, ok := e.linkDemand(d)
		if !ok {
			r.skip(d.Name, "port rate unknown (port down and no expectations.link_rate_gbps in the plan)")
			continue
		}
		availBits := avail * 8
		var detail []string
		if f.CurrentWidth > 0 {
			detail = append(detail, linkText(f.CurrentSpeedGTs, f.CurrentWidth))
		}
		if upstreamLimited(f) {
			detail = append(detail, "limited by upstream port "+f.LimitedBy)
		}
		paren := ""
		if len(detail) > 0 {
			paren = " (" + strings.Join(detail, ", ") + ")"
		}
		msg := fmt.Sprintf("PCIe gives %s Gb/s usable%s for %s Gb/s of %s", gbps(availBits), paren, gbps(needBits), what)
		switch {
		case availBits < needBits:
			r.fail(d.Name, msg+": the NIC cannot reach line rate", slotFix(f, needBits))
		case availBits < 1.1*needBits:
			r.warn(d.Name, msg+": less than 10% headroom, and PCIe packet overhead takes 5-15%", slotFix(f, needBits))
		default:
			r.ok(d.Name, msg)
		}
	}
}

func checkPCIeDegraded(e *env, r *results) {
	for _, d := range e.devices {
		f, why := e.pciFor(d)
		if f == nil {
			r.skip(d.Name, why)
			continue
		}
		if f.CurrentSpeedGTs <= 0 || f.MaxSpeedGTs <= 0 || f.CurrentWidth <= 0 || f.MaxWidth <= 0 {
			r.skip(d.Name, fmt.Sprintf("PCIe link speed or width of %s could not be read", f.Address))
			continue
		}
		cur, max := linkText(f.CurrentSpeedGTs, f.CurrentWidth), linkText(f.MaxSpeedGTs, f.MaxWidth)
		if f.CurrentSpeedGTs >= f.MaxSpeedGTs && f.CurrentWidth >= f.MaxWidth {
			r.ok(d.Name, fmt.Sprintf("PCIe link at %s, the card's maximum", cur))
			continue
		}
		msg := fmt.Sprintf("PCIe link trained at %s, the card can do %s", cur, max)
		if f.CurrentBandwidth > 0 && f.MaxBandwidth > 0 {
			msg += fmt.Sprintf(" (%s of %s Gb/s usable)", gbps(f.CurrentBandwidth*8), gbps(f.MaxBandwidth*8))
		}
		needBits, what, ok := e.linkDemand(d)
		if ok && f.CurrentBandwidth > 0 && f.CurrentBandwidth*8 < needBits {
			r.fail(d.Name, msg+fmt.Sprintf(": too little for %s Gb/s of %s", gbps(needBits), what), slotFix(f, needBits))
			continue
		}
		r.warn(d.Name, msg+": a downtrained link usually means a seating, riser or BIOS problem and does not recover by itself", slotFix(f, needBits))
	}
}

func checkPCIeAER(e *env, r *results) {
	for _, d := range e.devices {
		f, why := e.pciFor(d)
		if f == nil {
			r.skip(d.Name, why)
			continue
		}
		if f.AER == nil {
			r.skip(d.Name, fmt.Sprintf("%s reports no AER counters", f.Address))
			continue
		}
		var prev map[string]uint64
		if pf := e.prevPCI(f.Address); pf != nil {
			prev = pf.AER
		}
		fix := fmt.Sprintf("`dmesg | grep -i aer` shows the errors and the reporting device; reseat the card and its riser, check the slot and cabling, and update the BIOS and NIC firmware; `lspci -vvv -s %s` shows the AER status registers", f.Address)
		// Uncorrectable errors happening now fail: they lose or corrupt
		// transfers. New correctable ones are only retransmissions and warn,
		// as do totals since boot of any severity, which may be long over.
		var now, fails, history []string
		var anyCompared bool
		var last string
		for _, sev := range []string{"fatal", "nonfatal", "correctable"} {
			v, ok := f.AER[sev]
			if !ok {
				continue
			}
			pv, havePrev := prev[sev]
			w := e.window(v, pv, havePrev)
			if w.compared {
				anyCompared, last = true, w.last()
			}
			switch {
			case w.rising():
				line := fmt.Sprintf("%d new %s error(s)%s (%d since boot)", w.inc, sev, w.last(), v)
				if sev == "correctable" {
					now = append(now, line)
				} else {
					fails = append(fails, line)
				}
			case v > 0:
				history = append(history, fmt.Sprintf("%d %s since boot", v, sev))
			}
		}
		const causes = "PCIe errors come from a marginal slot, riser or card seating; uncorrectable ones lose or corrupt transfers and can reset the NIC, correctable ones cost retransmissions"
		switch {
		case len(fails) > 0:
			r.fail(d.Name, "PCIe AER on "+f.Address+": "+strings.Join(slices.Concat(fails, now, history), ", ")+": "+causes, fix)
		case len(now) > 0:
			r.warn(d.Name, "PCIe AER on "+f.Address+": "+strings.Join(slices.Concat(now, history), ", ")+": "+causes, fix)
		case len(history) > 0:
			note := "; a second sample tells whether they still happen"
			if anyCompared {
				note = ", none new" + last
			}
			r.warn(d.Name, "PCIe AER on "+f.Address+": "+strings.Join(history, ", ")+note+"; "+causes, fix)
		case anyCompared:
			r.ok(d.Name, "no PCIe AER errors since boot, none"+last)
		default:
			r.ok(d.Name, "no PCIe AER errors since boot")
		}
	}
}

func firmwareFix(d *node.Device, version string) string {
	addr := orPlaceholder(d.PCIAddress, "<pci address>")
	switch d.Driver {
	case "mlx5_core", "mlx4_core":
		return fmt.Sprintf("bring %[1]s (%[2]s) to %[3]s like its siblings: `mlxfwmanager --query` lists the versions, `mlxfwmanager -u -d %[2]s` (or `flint -d %[2]s -i <firmware %[3]s image for PSID %[4]s> burn`) flashes it, then `mlxfwreset -d %[2]s reset` or a reboot activates it", d.Name, addr, version, orPlaceholder(d.BoardID, "<PSID>"))
	case "bnxt_en":
		return fmt.Sprintf("flash %s (%s) with the same Broadcom firmware package (%s) as its siblings using Broadcom's niccli or bnxtnvm tool, then reboot", d.Name, addr, version)
	case "ice", "i40e":
		return fmt.Sprintf("update %s (%s) to NVM %s like its siblings with Intel's nvmupdate64e tool, then reboot", d.Name, addr, version)
	}
	return fmt.Sprintf("flash %s (%s) with firmware %s like its siblings using the NIC vendor's tool, then reboot", d.Name, addr, version)
}

func checkFirmware(e *env, r *results) {
	if exp, ok := e.expectations(); ok && !exp.FirmwareConsistent {
		r.skip(SubjectNode, "the plan sets firmware_consistent: false")
		return
	}
	groups := map[string][]*node.Device{}
	for _, d := range e.snap.Devices {
		if d.FirmwareVersion == "" {
			r.skip(d.Name, "firmware version could not be read")
			continue
		}
		key := modelKey(e, d)
		groups[key] = append(groups[key], d)
	}
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		devs := groups[key]
		byVersion := map[string][]string{}
		for _, d := range devs {
			byVersion[d.FirmwareVersion] = append(byVersion[d.FirmwareVersion], d.Name)
		}
		if len(byVersion) == 1 {
			for _, d := range devs {
				if len(devs) == 1 {
					r.ok(d.Name, fmt.Sprintf("firmware %s (only %s device on this node)", d.FirmwareVersion, key))
				} else {
					r.ok(d.Name, fmt.Sprintf("firmware %s, same as the other %d %s device(s)", d.FirmwareVersion, len(devs)-1, key))
				}
			}
			continue
		}
		versions := slices.Sorted(maps.Keys(byVersion))
		sort.SliceStable(versions, func(i, j int) bool { return len(byVersion[versions[i]]) > len(byVersion[versions[j]]) })
		majority := versions[0]
		tie := len(byVersion[versions[1]]) == len(byVersion[majority])
		var summary []string
		for _, v := range versions {
			summary = append(summary, fmt.Sprintf("%s on %s", v, joinNatural(byVersion[v])))
		}
		for _, d := range devs {
			switch {
			case tie:
				// The highest dotted version, compared numerically.
				newest := slices.MaxFunc(versions, naturalCompare)
				r.warn(d.Name, fmt.Sprintf("%s devices run different firmware with no majority (%s)", key, strings.Join(summary, "; ")), firmwareFix(d, newest))
			case d.FirmwareVersion == majority:
				r.ok(d.Name, fmt.Sprintf("firmware %s, the majority version of %s devices", majority, key))
			default:
				r.warn(d.Name, fmt.Sprintf("firmware %s differs from the %d other %s device(s) on %s (%s)", d.FirmwareVersion, len(byVersion[majority]), key, majority, strings.Join(summary, "; ")), firmwareFix(d, majority))
			}
		}
	}
}

// modelKey groups devices that should share firmware: same chip and same board
// (PSID), because different boards of one chip legitimately run different images.
func modelKey(e *env, d *node.Device) string {
	if d.HCAType != "" || d.BoardID != "" {
		return strings.Trim(d.HCAType+" "+d.BoardID, " ")
	}
	if f := e.snap.PCI[d.PCIAddress]; f != nil && f.DeviceID != "" {
		return d.Driver + " " + f.VendorID + ":" + f.DeviceID
	}
	return orPlaceholder(d.Driver, "unknown")
}
