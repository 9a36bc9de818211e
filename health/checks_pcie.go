package health

import (
	"fmt"
	"slices"
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

// demand is the port rate, in bits/s, that the PCIe link of one card must carry.
type demand struct {
	total float64
	// largest is the fastest single port: when it alone fits the link, the card
	// can run any one port at line rate.
	largest float64
	// ports is how many ports total counts.
	ports int
	what  string
}

// linkDemand is the port rate that the PCIe link of dev must carry: every active
// port of every physical function on the same card. An SR-IOV virtual function's
// port is its physical function's port, so its rate is not more traffic on the
// link. When no port is up, the planned rate stands in, so a downtrained slot is
// still caught while the cable is out.
func (e *env) linkDemand(dev *node.Device) (demand, bool) {
	slot := pciSlot(dev.PCIAddress)
	var dm demand
	var names []string
	var planned int
	for _, d := range e.snap.Devices {
		if d.PCIAddress == "" || pciSlot(d.PCIAddress) != slot || e.physFn(d) != "" {
			continue
		}
		names = append(names, d.Name)
		for _, p := range d.Ports {
			planned++
			if p.Up() && p.RateBitsPerSecond > 0 {
				dm.total += p.RateBitsPerSecond
				dm.largest = max(dm.largest, p.RateBitsPerSecond)
				dm.ports++
			}
		}
	}
	dm.what = "port rate"
	switch {
	case len(names) > 1:
		dm.what = "combined port rate of " + joinNatural(names)
	case dm.ports > 1:
		dm.what = fmt.Sprintf("combined port rate of %s's %d ports", dev.Name, dm.ports)
	}
	if dm.total > 0 {
		return dm, true
	}
	if exp, ok := e.expectations(); ok && exp.LinkRateGbps > 0 && planned > 0 {
		rate := exp.LinkRateGbps * 1e9
		return demand{total: rate * float64(planned), largest: rate, ports: planned, what: "planned link rate"}, true
	}
	return demand{}, false
}

// physFn is the physical function of dev's PCI function when that is an SR-IOV
// virtual function, "" otherwise.
func (e *env) physFn(d *node.Device) string {
	if f := e.snap.PCI[d.PCIAddress]; f != nil {
		return f.PhysFn
	}
	return ""
}

// vfReason is why a VF's PCIe link is not judged, "" for any other function.
// A VF has no link of its own: the kernel reads its reserved link registers as
// "Unknown" and width 0 (and a VM shows an emulated link), and its traffic
// crosses its physical function's port and link, which are judged on the PF.
func (e *env) vfReason(d *node.Device) string {
	pf := e.physFn(d)
	if pf == "" {
		return ""
	}
	lspci := fmt.Sprintf("`lspci -vv -s %s | grep -E 'LnkCap|LnkSta'` shows it", pf)
	where := fmt.Sprintf("this node has no RDMA device on %s, so that link is not judged here (%s)", pf, lspci)
	var pfDevs []string
	judged := false
	for _, o := range e.snap.Devices {
		if o.PCIAddress == pf {
			pfDevs = append(pfDevs, o.Name)
			judged = judged || slices.Contains(e.devices, o)
		}
	}
	switch {
	case judged:
		where = "judged on " + joinNatural(pfDevs)
	case len(pfDevs) > 0:
		where = fmt.Sprintf("those of %s, which is not a compute port of the plan, so that link is not judged here (%s)", joinNatural(pfDevs), lspci)
	}
	return fmt.Sprintf("%s is an SR-IOV virtual function of %s: it has no PCIe link of its own, and its traffic crosses the physical function's port and link, %s", d.Name, pf, where)
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

// linkAtMax reports whether the card's PCIe path gives all its own link can: it
// trained at its maximum speed and width and nothing upstream is narrower.
func linkAtMax(f *node.PCIFunction, avail float64) bool {
	return f.MaxBandwidth > 0 && f.CurrentSpeedGTs >= f.MaxSpeedGTs && f.CurrentWidth >= f.MaxWidth && avail >= f.MaxBandwidth
}

func checkPCIeBandwidth(e *env, r *results) {
	for _, d := range e.devices {
		if why := e.vfReason(d); why != "" {
			r.skip(d.Name, why)
			continue
		}
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
		dm, ok := e.linkDemand(d)
		if !ok {
			r.skip(d.Name, "port rate unknown (port down and no expectations.link_rate_gbps in the plan)")
			continue
		}
		needBits := dm.total
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
		msg := fmt.Sprintf("PCIe gives %s Gb/s usable%s for %s Gb/s of %s", gbps(availBits), paren, gbps(needBits), dm.what)
		// A dual-port card whose link carries either port at line rate but not
		// both at once (a ConnectX-3 on Gen3 x8) is built that way: with the
		// link at its maximum there is nothing to repair, so it warns at most.
		byDesign := dm.ports > 1 && dm.largest <= availBits && linkAtMax(f, avail)
		switch {
		case availBits < needBits && byDesign:
			all := "both ports"
			if dm.ports > 2 {
				all = fmt.Sprintf("all %d ports", dm.ports)
			}
			r.warn(d.Name, fmt.Sprintf("%s: each port alone fits, but %s cannot run at line rate at once; the link trained at the card's maximum, so this is the card's design limit, not a fault", msg, all),
				fmt.Sprintf("nothing on this node needs repair: jobs that need line rate on every port at once need a card whose PCIe link carries %s Gb/s (a wider or newer-generation link); `lspci -vv -s %s | grep -E 'LnkCap|LnkSta'` shows the link", gbps(needBits), f.Address))
		case availBits < needBits:
			r.fail(d.Name, msg+": the NIC cannot reach line rate", slotFix(f, needBits))
		case availBits < 1.1*needBits && byDesign:
			r.ok(d.Name, msg+": less than 10% headroom with every port at line rate at once, the card's design limit with its link at its maximum")
		case availBits < 1.1*needBits:
			r.warn(d.Name, msg+": less than 10% headroom, and PCIe packet overhead takes 5-15%", slotFix(f, needBits))
		default:
			r.ok(d.Name, msg)
		}
	}
}

func checkPCIeDegraded(e *env, r *results) {
	for _, d := range e.devices {
		if why := e.vfReason(d); why != "" {
			r.skip(d.Name, why)
			continue
		}
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
		dm, ok := e.linkDemand(d)
		if ok && f.CurrentBandwidth > 0 && f.CurrentBandwidth*8 < dm.total {
			r.fail(d.Name, msg+fmt.Sprintf(": too little for %s Gb/s of %s", gbps(dm.total), dm.what), slotFix(f, dm.total))
			continue
		}
		r.warn(d.Name, msg+": a downtrained link usually means a seating, riser or BIOS problem and does not recover by itself", slotFix(f, dm.total))
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
