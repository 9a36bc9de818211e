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
	what  Text
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
	dm.what = Textf("port rate")
	switch {
	case len(names) > 1:
		dm.what = Textf("combined port rate of %s", joinNatural(names))
	case dm.ports > 1:
		dm.what = Textf("combined port rate of %s's %d ports", dev.Name, dm.ports)
	}
	if dm.total > 0 {
		return dm, true
	}
	if exp, ok := e.expectations(); ok && exp.LinkRateGbps > 0 && planned > 0 {
		rate := exp.LinkRateGbps * 1e9
		return demand{total: rate * float64(planned), largest: rate, ports: planned, what: Textf("planned link rate")}, true
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
func (e *env) vfReason(d *node.Device) Text {
	pf := e.physFn(d)
	if pf == "" {
		return Textf("")
	}
	lspci := Textf("`lspci -vv -s %s | grep -E 'LnkCap|LnkSta'` shows it", pf)
	where := Textf("this node has no RDMA device on %s, so that link is not judged here (%s)", pf, lspci)
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
		where = Textf("judged on %s", joinNatural(pfDevs))
	case len(pfDevs) > 0:
		where = Textf("those of %s, which is not a compute port of the plan, so that link is not judged here (%s)", joinNatural(pfDevs), lspci)
	}
	return Textf("%s is an SR-IOV virtual function of %s: it has no PCIe link of its own, and its traffic crosses the physical function's port and link, %s", d.Name, pf, where)
}

func (e *env) pciFor(d *node.Device) (*node.PCIFunction, Text) {
	if d.PCIAddress == "" {
		return nil, Textf("%s has no PCI function (software or auxiliary device)", d.Name)
	}
	if f := e.snap.PCI[d.PCIAddress]; f != nil {
		return f, Textf("")
	}
	if why := e.sourceReason("pcie", Textf("PCIe link state")); !why.Empty() {
		return nil, why
	}
	return nil, Textf("no PCIe link information for %s (%s)", d.Name, d.PCIAddress)
}

// upstreamLimited reports whether a link above the function's own is the
// narrowest of the path; on a tie the reader may name either, and blaming a
// link above would mislead.
func upstreamLimited(f *node.PCIFunction) bool {
	return f.LimitedBy != "" && f.LimitedBy != f.Address && f.AvailableBandwidth > 0 && f.AvailableBandwidth < f.CurrentBandwidth
}

func linkText(speedGTs float64, width int) string {
	return fmt.Sprintf("%s GT/s x%d", num(speedGTs), width)
}

// belowCapability reports whether the function's link trained below what
// both its ends support: a link that can be repaired.
func belowCapability(f *node.PCIFunction) bool {
	s, w := f.LinkCapability()
	return s > 0 && w > 0 && (f.CurrentSpeedGTs < s || f.CurrentWidth < w)
}

// upstreamText names the port above a function with its capability:
// "the port above it, 0000:17:01.0 (16 GT/s x16)".
func upstreamText(u *node.PCIPort) Text {
	if u.MaxSpeedGTs > 0 && u.MaxWidth > 0 {
		return Textf("the port above it, %s (%s)", u.Address, linkText(u.MaxSpeedGTs, u.MaxWidth))
	}
	return Textf("the port above it, %s", u.Address)
}

// capabilityText says how far the function's link can train and which end
// decides it: the card, its slot (the port above it), or both alike.
func capabilityText(f *node.PCIFunction) Text {
	switch u := f.Upstream; {
	case u == nil:
		return Textf("the card's maximum")
	case f.UpstreamLimits():
		return Textf("the most its slot allows: the card supports %s, %s", linkText(f.MaxSpeedGTs, f.MaxWidth), upstreamText(u))
	}
	return Textf("the maximum of both the card and the port above it, %s", f.Upstream.Address)
}

// neededSlot is the PCIe generation of x16 slot that carries needBits.
func neededSlot(needBits float64) Text {
	switch {
	case needBits > 400e9:
		return Textf("a Gen6 x16 slot")
	case needBits > 200e9:
		return Textf("a Gen5 x16 slot")
	case needBits > 100e9:
		return Textf("a Gen4 x16 slot")
	}
	return Textf("a Gen3 x16 slot")
}

// lspciLink is the command that shows a link's capability against its state,
// at the function and at the port above it.
func lspciLink(f *node.PCIFunction) Text {
	cmd := Textf("`lspci -vv -s %s | grep -E 'LnkCap|LnkSta'` shows the card's capability against the trained link", f.Address)
	if f.Upstream != nil {
		cmd = Textf("%s, `lspci -vv -s %s | grep LnkCap` the port's", cmd, f.Upstream.Address)
	}
	return Textf("%s, and `dmesg | grep 'limited by'` the link the kernel found narrowest at boot", cmd)
}

// downtrainedFix is what to do about a link that trained below what both its
// ends support: the card and its slot can do better, so something between
// them (seating, riser, retimer, cable) or the BIOS holds it back.
func downtrainedFix(f *node.PCIFunction) Text {
	return Textf("the link trained below what both the card and its slot support: power the node off and reseat the card and its riser or cable (a marginal contact, or a retimer that fails equalisation at the top speed, trains lower); in the BIOS set the slot's link speed to Auto and check its bifurcation (x16, not x8x8); %s", lspciLink(f))
}

// bandwidthFix is what to do about a PCIe path that cannot carry needBits,
// by where it is narrowest: a link trained below its capability is
// repaired; a link at its capability is the hardware, and only another slot,
// platform or card lifts it.
func bandwidthFix(f *node.PCIFunction, needBits float64) Text {
	switch {
	case belowCapability(f):
		return downtrainedFix(f)
	case upstreamLimited(f):
		return Textf("the narrowest link is above the card, at %s (a PCIe switch's uplink or a riser): `lspci -vv -s %s | grep -E 'LnkCap|LnkSta'` tells whether it trained below its capability (reseat the switch board or riser, set the slot's link speed to Auto in the BIOS) or is built that narrow (then this slot cannot feed the NIC at line rate: use one with a wider path to the CPU)", f.LimitedBy, f.LimitedBy)
	case f.UpstreamLimits():
		return Textf("the link is at the most its slot allows (%s supports less than the card's %s): nothing to reseat; move the card to %s, or, if the slot should be wider, check its bifurcation in the BIOS (x16, not x8x8); a server of an older PCIe generation cannot carry this port at line rate", upstreamText(f.Upstream), linkText(f.MaxSpeedGTs, f.MaxWidth), neededSlot(needBits))
	}
	return Textf("the link is at the card's own maximum (%s): nothing to reseat; this card cannot carry %s Gb/s over PCIe, so its ports cannot all run at line rate; `lspci -vv -s %s | grep -E 'LnkCap|LnkSta'` shows the link", linkText(f.MaxSpeedGTs, f.MaxWidth), gbps(needBits), f.Address)
}

// linkAtCapability reports whether the card's PCIe path gives all its link
// can: it trained at what both its ends support and nothing above is
// narrower.
func linkAtCapability(f *node.PCIFunction, avail float64) bool {
	capBW := f.LinkCapabilityBandwidth()
	return capBW > 0 && !belowCapability(f) && avail >= capBW
}

func checkPCIeBandwidth(e *env, r *results) {
	for _, d := range e.devices {
		if why := e.vfReason(d); !why.Empty() {
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
			r.skip(d.Name, Textf("PCIe bandwidth of %s unknown", f.Address))
			continue
		}
		dm, ok := e.linkDemand(d)
		if !ok {
			r.skip(d.Name, Textf("port rate unknown (port down and no expectations.link_rate_gbps in the plan)"))
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
		} else if f.UpstreamLimits() && !belowCapability(f) {
			detail = append(detail, "the most its slot allows")
		}
		paren := ""
		if len(detail) > 0 {
			paren = " (" + strings.Join(detail, ", ") + ")"
		}
		msg := Textf("PCIe gives %s Gb/s usable%s for %s Gb/s of %s", gbps(availBits), paren, gbps(needBits), dm.what)
		// A dual-port card whose link carries either port at line rate but not
		// both at once (a ConnectX-3 on Gen3 x8) is built that way: with the
		// link at all its two ends support there is nothing to repair, so it
		// warns at most.
		byDesign := dm.ports > 1 && dm.largest <= availBits && linkAtCapability(f, avail)
		design, whose := Textf("the card's"), Textf("the card's maximum")
		if f.UpstreamLimits() {
			design, whose = Textf("the platform's"), Textf("the most the card and its slot support")
		}
		switch {
		case availBits < needBits && byDesign:
			all := Textf("both ports")
			if dm.ports > 2 {
				all = Textf("all %d ports", dm.ports)
			}
			r.warn(d.Name, Textf("%s: each port alone fits, but %s cannot run at line rate at once; the link trained at %s, so this is %s design limit, not a fault", msg, all, whose, design),
				Textf("the card is built this way, no setting or reseat changes it: where jobs need line rate on every port at once, replace it with a card in a slot whose PCIe link carries %s Gb/s (a wider or newer-generation link), or run such jobs on one port of it; `lspci -vv -s %s | grep -E 'LnkCap|LnkSta'` shows the link", gbps(needBits), f.Address))
		case availBits < needBits:
			r.fail(d.Name, Textf("%s: the NIC cannot reach line rate", msg), bandwidthFix(f, needBits))
		case availBits < 1.1*needBits && byDesign:
			r.ok(d.Name, Textf("%s: less than 10%% headroom with every port at line rate at once, %s design limit with its link at %s", msg, design, whose))
		case availBits < 1.1*needBits:
			r.warn(d.Name, Textf("%s: less than 10%% headroom, and PCIe packet overhead takes 5-15%%", msg), bandwidthFix(f, needBits))
		default:
			r.ok(d.Name, msg)
		}
	}
}

// checkPCIeDegraded judges the link against what both its ends support, not
// the card's own maximum: a Gen5 card in a Gen4 slot trains at 16 GT/s by
// design, and only a link below the lower of the two ends has something to
// repair.
func checkPCIeDegraded(e *env, r *results) {
	for _, d := range e.devices {
		if why := e.vfReason(d); !why.Empty() {
			r.skip(d.Name, why)
			continue
		}
		f, why := e.pciFor(d)
		if f == nil {
			r.skip(d.Name, why)
			continue
		}
		if f.CurrentSpeedGTs <= 0 || f.MaxSpeedGTs <= 0 || f.CurrentWidth <= 0 || f.MaxWidth <= 0 {
			r.skip(d.Name, Textf("PCIe link speed or width of %s could not be read", f.Address))
			continue
		}
		cur := linkText(f.CurrentSpeedGTs, f.CurrentWidth)
		if !belowCapability(f) {
			r.ok(d.Name, Textf("PCIe link at %s, %s", cur, capabilityText(f)))
			continue
		}
		s, w := f.LinkCapability()
		usable := Textf("")
		if capBW := f.LinkCapabilityBandwidth(); f.CurrentBandwidth > 0 && capBW > 0 {
			usable = Textf(" (%s of %s Gb/s usable)", gbps(f.CurrentBandwidth*8), gbps(capBW*8))
		}
		msg := Textf("PCIe link trained at %s%s, the card can do %s", cur, usable, linkText(f.MaxSpeedGTs, f.MaxWidth))
		if u := f.Upstream; u != nil {
			msg = Textf("PCIe link trained at %s%s, below the %s that both the card (%s) and %s, support", cur, usable, linkText(s, w), linkText(f.MaxSpeedGTs, f.MaxWidth), upstreamText(u))
		}
		dm, ok := e.linkDemand(d)
		if ok && f.CurrentBandwidth > 0 && f.CurrentBandwidth*8 < dm.total {
			r.fail(d.Name, Textf("%s: too little for %s Gb/s of %s", msg, gbps(dm.total), dm.what), downtrainedFix(f))
			continue
		}
		r.warn(d.Name, Textf("%s: a downtrained link usually means a seating, riser or BIOS problem and does not recover by itself", msg), downtrainedFix(f))
	}
}

// aerEnd is one end of a PCIe link whose AER counters are judged: the
// function, or the port above it, which sees the other direction's errors.
type aerEnd struct {
	name Text
	cur  map[string]uint64
	prev map[string]uint64
}

// linkAEREnds are the ends of f's link that count AER errors, the function
// first; prev is f in the previous sample (nil without one).
func linkAEREnds(f, prev *node.PCIFunction) []aerEnd {
	var ends []aerEnd
	if f.AER != nil {
		end := aerEnd{name: Textf("%s", f.Address), cur: f.AER}
		if prev != nil {
			end.prev = prev.AER
		}
		ends = append(ends, end)
	}
	if u := f.Upstream; u != nil && u.AER != nil {
		end := aerEnd{name: Textf("the port above it, %s", u.Address), cur: u.AER}
		if prev != nil && prev.Upstream != nil && prev.Upstream.Address == u.Address {
			end.prev = prev.Upstream.AER
		}
		ends = append(ends, end)
	}
	return ends
}

// aerSeverity names an AER severity as the message prints it: the kernel's
// own word (aer_dev_fatal, aer_dev_nonfatal, aer_dev_correctable), in the
// reader's language.
func aerSeverity(sev string) Text {
	switch sev {
	case "fatal":
		return Textf("fatal")
	case "nonfatal":
		return Textf("nonfatal")
	}
	return Textf("correctable")
}

// judgeAER records one finding for the ends of one link. Uncorrectable
// errors happening now fail: they lose or corrupt transfers. New
// correctable ones are only retransmissions and warn, as do totals since
// boot of any severity, which may be long over.
func judgeAER(e *env, r *results, subject string, ends []aerEnd, fix Text) {
	var clauses []Text
	var failing, rising, old, anyCompared bool
	last := Textf("")
	for _, end := range ends {
		var fails, now, history []Text
		for _, sev := range []string{"fatal", "nonfatal", "correctable"} {
			v, ok := end.cur[sev]
			if !ok {
				continue
			}
			pv, havePrev := end.prev[sev]
			w := e.window(v, pv, havePrev)
			if w.compared {
				anyCompared, last = true, w.last()
			}
			switch {
			case w.rising():
				line := Textf("%d new %s error(s)%s (%d since boot)", w.inc, aerSeverity(sev), w.last(), v)
				if sev == "correctable" {
					now = append(now, line)
				} else {
					fails = append(fails, line)
				}
			case v > 0:
				history = append(history, Textf("%d %s since boot", v, aerSeverity(sev)))
			}
		}
		if items := slices.Concat(fails, now, history); len(items) > 0 {
			clauses = append(clauses, Textf("on %s: %s", end.name, JoinTexts(items, ", ")))
		}
		failing, rising, old = failing || len(fails) > 0, rising || len(now) > 0, old || len(history) > 0
	}
	const causes = "PCIe errors come from a marginal slot, riser or card seating; uncorrectable ones lose or corrupt transfers and can reset the device, correctable ones cost retransmissions"
	msg := Textf("PCIe AER %s", JoinTexts(clauses, "; "))
	clean := Textf("no PCIe AER errors since boot")
	where := Textf("")
	if len(ends) > 1 {
		where = Textf(" at either end of the link (%s and %s)", ends[0].name, ends[1].name)
	}
	switch {
	case failing:
		r.fail(subject, Textf("%s: %s", msg, Textf(causes)), fix)
	case rising:
		r.warn(subject, Textf("%s: %s", msg, Textf(causes)), fix)
	case old:
		note := Textf("; a second sample tells whether they still happen")
		if anyCompared {
			note = Textf(", none new%s", last)
		}
		r.warn(subject, Textf("%s%s; %s", msg, note, Textf(causes)), fix)
	case anyCompared:
		r.ok(subject, Textf("%s, none%s%s", clean, last, where))
	default:
		r.ok(subject, Textf("%s%s", clean, where))
	}
}

// aerFix is what to do about AER errors on the link of f, a card or GPU
// (what) with its firmware.
func aerFix(f *node.PCIFunction, what, firmware Text) Text {
	regs := Textf("`lspci -vvv -s %s` shows the AER status registers", f.Address)
	if f.Upstream != nil {
		regs = Textf("`lspci -vvv -s %s` and `lspci -vvv -s %s` show the AER status registers at both ends", f.Address, f.Upstream.Address)
	}
	return Textf("`dmesg | grep -i aer` shows the errors and the reporting device; reseat the %s and its riser, check the slot and cabling, and update the BIOS and the %s firmware; %s", what, firmware, regs)
}

func checkPCIeAER(e *env, r *results) {
	for _, d := range e.devices {
		f, why := e.pciFor(d)
		if f == nil {
			r.skip(d.Name, why)
			continue
		}
		ends := linkAEREnds(f, e.prevPCI(f.Address))
		if len(ends) == 0 {
			r.skip(d.Name, Textf("%s reports no AER counters", f.Address))
			continue
		}
		judgeAER(e, r, d.Name, ends, aerFix(f, Textf("card"), Textf("NIC")))
	}
	// A GPU's link carries GPUDirect RDMA and NCCL's staging through host
	// memory: its errors slow the network's traffic as much as the NIC's.
	if e.snap.GPU == nil {
		return
	}
	for _, g := range e.snap.GPU.GPUs {
		f := g.PCI
		if f == nil {
			continue
		}
		ends := linkAEREnds(f, e.prevGPU(f.Address))
		if len(ends) == 0 {
			r.skip(gpuSubject(g), Textf("%s reports no AER counters", f.Address))
			continue
		}
		judgeAER(e, r, gpuSubject(g), ends, aerFix(f, Textf("GPU"), Textf("GPU (VBIOS)")))
	}
}
