package health

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/roce-exporter/roce_exporter/node"
)

func checkNICPresent(e *env, r *results) {
	snap := e.snap
	if e.rdmaUnknown {
		r.skip(SubjectNode, Textf("cannot tell: %s", Textf(SkipRDMAUnreadable)))
		return
	}
	if len(snap.Devices) > 0 {
		var hw, sw, noParent []string
		drivers := map[string]bool{}
		for _, d := range snap.Devices {
			switch {
			case softwareRDMA(d):
				sw = append(sw, d.Name)
			case d.Driver == "":
				noParent = append(noParent, d.Name)
			default:
				hw = append(hw, d.Name)
				drivers[d.Driver] = true
			}
		}
		hwText := Textf("")
		if len(hw) > 0 {
			hwText = Textf("%d RDMA device(s) with a NIC driver bound: %s (%s)", len(hw), joinNatural(hw), strings.Join(slices.Sorted(maps.Keys(drivers)), ", "))
		}
		switch {
		case len(noParent) > 0:
			// A hardware device's PCI parent is missing from this view of sysfs
			// (a partial copy, a container without the host's /sys): the NIC is
			// there, since its RDMA driver registered the device, but which one
			// and with which driver cannot be seen.
			msg := Textf("RDMA device(s) whose PCI parent could not be read: %s (no readable `device` link under /sys/class/infiniband/<device>), so the NIC behind each, its driver and its PCIe link are unknown", joinNatural(noParent))
			if !hwText.Empty() {
				msg = Textf("%s; %s", hwText, msg)
			}
			r.warn(SubjectNode, msg,
				Textf("`ls -l /sys/class/infiniband/%s/device` must point at a PCI function (../../../0000:xx:00.0); when the exporter runs in a container, mount the host's /sys (read-only) and point --path.sysfs at it; `rdma dev show` and `lspci -nn -D | grep -iE 'mellanox|broadcom|ethernet'` on the host show the device and the NIC", noParent[0]))
		case len(hw) == 0:
			// rxe/siw devices run over any netdev; they prove the RDMA stack works,
			// not that an RDMA NIC is there.
			r.fail(SubjectNode, Textf("only software RDMA devices (%s, rxe/siw over an ordinary netdev), no RDMA NIC with a bound driver", joinNatural(sw)),
				Textf("check that the RDMA NIC is seated and seen on the PCI bus: lspci -nn | grep -iE 'mellanox|broadcom|ethernet'; a VM needs the NIC (or an SR-IOV VF) passed through"))
		default:
			r.ok(SubjectNode, hwText)
		}
		return
	}
	if len(snap.NICs) == 0 {
		if !sourceRan(snap, "pcie") {
			r.fail(SubjectNode, Textf("no RDMA device; the PCI bus was not scanned for NICs because the pcie collector is disabled"),
				Textf("enable the pcie collector (--collector.pcie) to tell a missing NIC from a missing driver, or check by hand: `lspci -nn | grep -iE 'mellanox|broadcom|ethernet'` and `lsmod | grep -E 'mlx5|bnxt|irdma|ib_uverbs'`"))
			return
		}
		r.fail(SubjectNode, Textf("no RDMA device and no Mellanox/NVIDIA, Broadcom or Intel RDMA-capable NIC on the PCI bus"),
			Textf("check that the NIC is seated and powered and shows up in `lspci -nn | grep -iE 'mellanox|broadcom|ethernet'`; a VM needs the NIC (or an SR-IOV VF) passed through; a container must see the host's /sys (run the exporter with --path.sysfs pointing at it)"))
		return
	}
	var unbound []string
	var bound []Text
	var fixes []Text
	seenFix := map[string]bool{}
	for _, n := range snap.NICs {
		if n.Driver == "" {
			unbound = append(unbound, fmt.Sprintf("%s at %s", node.NICName(n), n.Address))
			if fam, ok := node.DriverFamilyOfVendor(n.VendorID); ok && !seenFix[fam.Name] {
				seenFix[fam.Name] = true
				fixes = append(fixes, loadDriverFix(fam))
			}
			continue
		}
		bound = append(bound, Textf("%s at %s (driver %s)", node.NICName(n), n.Address, n.Driver))
	}
	if len(unbound) > 0 {
		if len(fixes) == 0 {
			fixes = append(fixes, Textf("install and load the NIC vendor's driver, then check `dmesg` for probe errors"))
		}
		r.fail(SubjectNode, Textf("no RDMA driver: %s has no driver bound", strings.Join(unbound, "; ")), JoinTexts(fixes, "; "))
		return
	}
	r.ok(SubjectNode, Textf("RDMA-capable NIC present with a driver bound: %s; but no RDMA device was registered (see rdma_driver_loaded)", JoinTexts(bound, "; ")))
}

// softwareRDMA reports whether a device is Soft-RoCE (rxe) or Soft-iWARP (siw),
// which run over any netdev. The kernel names them rxe*/siw* unless `rdma link
// add` was given another name; their `device` link, when there is one, points
// at the netdev's parent, so the driver seen there can be the ordinary NIC's.
func softwareRDMA(d *node.Device) bool {
	switch d.Driver {
	case "rdma_rxe", "siw":
		return true
	}
	return strings.HasPrefix(d.Name, "rxe") || strings.HasPrefix(d.Name, "siw")
}

func checkDevicesReadable(e *env, r *results) {
	st, ran := e.snap.Sources[node.SourceRDMA]
	switch {
	case !ran:
		r.skip(SubjectNode, Textf("the rdma collector is disabled (--collector.rdma)"))
		return
	case len(e.unreadable) == 0 && st == node.SourceFailed:
		r.fail(SubjectNode, Textf("the RDMA devices could not be listed: the rdma collector failed, so nothing is known about them (see the exporter log)"),
			Textf("`ls -l /sys/class/infiniband/` as the exporter's user shows whether it can read the directory: run the exporter as root, or in a container with the host's /sys mounted read-only and no AppArmor/SELinux rule hiding it; `dmesg` shows a driver that hangs"))
		return
	case len(e.unreadable) == 0 && e.noRDMA:
		r.skip(SubjectNode, Textf(SkipNoRDMADevice))
		return
	}
	for _, d := range e.unreadable {
		fix := Textf("the exporter must be able to read /sys/class/infiniband/%s (`ls -lR /sys/class/infiniband/%s/ports | head` as its user): run it as root or in a privileged container with the host's /sys", d.Name, d.Name)
		if strings.Contains(d.Unreadable, "did not return") || strings.Contains(d.Unreadable, "stuck") {
			fix = Textf("reads of %s hang in the kernel, which means its firmware stopped answering commands: `dmesg | grep -iE 'mlx5|cmd|timeout|syndrome'` shows the stuck command, `devlink health show` the fw reporters; the device stays unreadable until the driver is reloaded (`devlink dev reload pci/<bdf>`) or the node rebooted, and its traffic may be stuck too", d.Name)
		}
		r.fail(d.Name, Textf("%s is in /sys/class/infiniband but could not be read: %s; none of its state is known", d.Name, d.Unreadable), fix)
	}
	if len(e.unreadable) == 0 {
		r.ok(SubjectNode, Textf("all %d RDMA devices were read", len(e.snap.Devices)))
	}
}

func sourceRan(snap *node.Snapshot, source string) bool {
	_, ran := snap.Sources[source]
	return ran
}

func loadDriverFix(f node.DriverFamily) Text {
	mods := dedupe(f.Core, f.RDMA, "ib_uverbs")
	list := strings.Join(mods, " ")
	vendor := ""
	if f.Name == "mlx5" {
		vendor = ", or NVIDIA DOCA-OFED / MLNX_OFED"
	}
	return Textf("load the driver: `modprobe -a %[1]s`; if modprobe finds no such module, install it first (Ubuntu: `apt install linux-modules-extra-$(uname -r) rdma-core`; RHEL: `dnf install rdma-core`%[2]s); make it permanent with `printf '%%s\\n' %[1]s > /etc/modules-load.d/rdma.conf`; if the NIC still has no driver, `dmesg | grep -i %[3]s` shows why the probe failed",
		list, vendor, f.Core)
}

func checkDriverLoaded(e *env, r *results) {
	snap := e.snap
	type fam struct {
		node.DriverFamily
		haveDevices bool
	}
	families := map[string]*fam{}
	for _, d := range snap.Devices {
		if f, ok := node.DriverFamilyOfDevice(d); ok {
			families[f.Name] = &fam{DriverFamily: f, haveDevices: true}
		}
	}
	if len(snap.Devices) == 0 {
		for _, n := range snap.NICs {
			if f, ok := node.DriverFamilyOfVendor(n.VendorID); ok {
				if n.Driver != "" {
					if bf, ok := node.DriverFamilyOf(n.Driver); ok {
						f = bf
					}
				}
				if families[f.Name] == nil {
					families[f.Name] = &fam{DriverFamily: f}
				}
			}
		}
	}
	if len(families) == 0 {
		if len(snap.Devices) > 0 {
			r.skip(SubjectNode, Textf("no RDMA device with a known NIC driver: the devices are software RDMA (rxe, siw), of a driver this check does not know, or their PCI parent could not be read (see rdma_nic_present)"))
		} else {
			r.skip(SubjectNode, Textf("no RDMA-capable NIC found, so no driver to load (see rdma_nic_present)"))
		}
		return
	}
	if snap.Modules == nil {
		r.skip(SubjectNode, Textf("kernel module list not read (the rdma collector did not run)"))
		return
	}
	names := slices.Sorted(maps.Keys(families))
	uverbsSeen := false
	for _, d := range snap.Devices {
		if len(d.VerbsDevices) > 0 {
			uverbsSeen = true
		}
	}
	var missing, loaded, builtin []string
	var fixFams []node.DriverFamily
	for _, name := range names {
		f := families[name]
		famMissing := false
		for _, m := range dedupe(f.Core, f.RDMA) {
			switch {
			case snap.Modules[m]:
				loaded = append(loaded, m)
			case f.haveDevices:
				// An RDMA device of this driver exists, so the code is there: a
				// built-in driver has no /sys/module entry without parameters.
				builtin = append(builtin, m)
			default:
				missing = append(missing, m)
				famMissing = true
			}
		}
		if famMissing {
			fixFams = append(fixFams, f.DriverFamily)
		}
	}
	switch {
	case snap.Modules["ib_uverbs"]:
		loaded = append(loaded, "ib_uverbs")
	case uverbsSeen:
		builtin = append(builtin, "ib_uverbs")
	default:
		missing = append(missing, "ib_uverbs")
	}
	desc := Textf("")
	if len(loaded) > 0 {
		desc = Textf("loaded: %s", strings.Join(loaded, ", "))
	}
	if len(builtin) > 0 {
		b := Textf("built in (no /sys/module entry, but working): %s", strings.Join(builtin, ", "))
		if desc.Empty() {
			desc = b
		} else {
			desc = Textf("%s; %s", desc, b)
		}
	}
	if len(missing) > 0 {
		msg := Textf("no RDMA driver: %s not loaded", strings.Join(missing, ", "))
		if !desc.Empty() {
			msg = Textf("%s%s", msg, Textf(" (%s)", desc))
		}
		// A NIC of the family without a driver fails rdma_nic_present with
		// the same fix: one fix, told once, above.
		unbound := map[string]bool{}
		for _, n := range snap.NICs {
			if fam, ok := node.DriverFamilyOfVendor(n.VendorID); ok && n.Driver == "" {
				unbound[fam.Name] = true
			}
		}
		var fixes []Text
		var told []string
		for _, f := range fixFams {
			if unbound[f.Name] {
				told = append(told, f.Name)
				continue
			}
			fixes = append(fixes, loadDriverFix(f))
		}
		if len(told) > 0 {
			fixes = append(fixes, Textf("rdma_nic_present's fix above loads %s with its RDMA modules and ib_uverbs: apply it, and this check passes with it", strings.Join(told, ", ")))
		}
		if len(fixes) == 0 {
			fixes = append(fixes, Textf("modprobe ib_uverbs; make it permanent with `echo ib_uverbs > /etc/modules-load.d/rdma.conf`"))
		}
		r.fail(SubjectNode, msg, JoinTexts(fixes, "; "))
		return
	}
	if len(snap.Devices) == 0 {
		r.fail(SubjectNode, Textf("the RDMA modules are loaded (%s) but no RDMA device was registered", desc),
			Textf("`dmesg | grep -iE 'mlx5|bnxt|irdma|infiniband'` shows why the RDMA driver did not attach; check that RoCE is enabled on the NIC: `devlink dev param show pci/<bdf> name enable_roce` (enable with `devlink dev param set pci/<bdf> name enable_roce value true cmode driverinit && devlink dev reload pci/<bdf>`); very old firmware can also be the cause (`ethtool -i <netdev>`)"))
		return
	}
	r.ok(SubjectNode, desc)
}

func dedupe(s ...string) []string {
	var out []string
	seen := map[string]bool{}
	for _, v := range s {
		if v != "" && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

func checkPlanNodeKnown(e *env, r *results) {
	switch {
	case e.plan == nil:
		r.skip(SubjectNode, Textf(SkipNoPlan))
	case e.node != nil:
		r.ok(SubjectNode, Textf("node %q is in the plan with %d compute interface(s)", e.node.Name, len(e.node.Interfaces)))
	default:
		names := e.plan.NodeNames()
		shown := names
		if len(shown) > 10 {
			shown = append(append([]string(nil), shown[:10]...), fmt.Sprintf("… %d more", len(names)-10))
		}
		who := Textf("node %q", e.nodeName)
		if e.nodeName == "" {
			who = Textf("this node (no name given and no hostname)")
		}
		r.fail(SubjectNode, Textf("%s is not in the cluster plan (plan nodes: %s), so no plan check can run", who, strings.Join(shown, ", ")),
			Textf("give the exporter and the doctor --node.name=<the name this node has in the plan> (both default to the short hostname, `hostname -s`), or add the node to `nodes:` in the plan file"))
	}
}

func checkPlannedInterfacePresent(e *env, r *results) {
	var rdmaNetdevs []string
	for _, p := range e.snap.Ports() {
		if p.Interface != "" {
			rdmaNetdevs = append(rdmaNetdevs, p.Interface)
		}
	}
	have := "none"
	if len(rdmaNetdevs) > 0 {
		have = joinNatural(rdmaNetdevs)
	}
	for _, t := range e.targets {
		pi := t.planned
		rail := Textf("rail %d", pi.Rail)
		switch {
		case t.absent():
			hint := Textf("")
			if d := e.snap.Device(pi.RDMADevice); d != nil && len(d.Ports) > 0 && d.Ports[0].Interface != "" {
				hint = Textf("; the planned %s exists and backs %s, so the netdev name in the plan may be wrong", d.Name, d.Ports[0].Interface)
			}
			r.fail(t.subject(), Textf("planned interface %s (%s) is not on this node; netdevs backing RDMA ports here: %s%s", pi.Netdev, rail, have, hint),
				Textf("`ip -br link` and `rdma link show` list the real names; correct the netdev in the plan, or if the NIC is missing check rdma_nic_present / rdma_driver_loaded and `dmesg`"))
		case t.port == nil:
			r.fail(t.subject(), Textf("%s (%s) exists but no RDMA port is bound to it", pi.Netdev, rail),
				Textf("`rdma link show` lists which netdev each RDMA device uses; if %s is not there, its NIC has no RDMA driver (load it, see rdma_driver_loaded) or RoCE is disabled on it (`devlink dev param show pci/%s name enable_roce`)", pi.Netdev, orPlaceholder(t.pciAddress(), "<pci address>")))
		case pi.RDMADevice != "" && pi.RDMADevice != t.dev.Name:
			r.fail(t.subject(), Textf("plan pairs %s with %s, but %s is backed by %s", pi.Netdev, pi.RDMADevice, pi.Netdev, t.dev.Name),
				Textf("`rdma link show` (or ibdev2netdev) prints the pairs; set rdma_device of %s in the plan to %s, or leave rdma_device out to let the exporter find it", pi.Netdev, t.dev.Name))
		default:
			r.ok(t.subject(), Textf("%s (%s) is backed by %s port %d", pi.Netdev, rail, t.dev.Name, t.port.Number))
		}
	}
}

func checkVerbsDevice(e *env, r *results) {
	for _, d := range e.devices {
		if len(d.VerbsDevices) == 0 {
			r.fail(d.Name, Textf("sysfs lists no uverbs device for %s: user-space verbs (NCCL, perftest, UCX) cannot open it", d.Name),
				Textf("load the verbs module: modprobe ib_uverbs (permanent: `echo ib_uverbs > /etc/modules-load.d/rdma.conf`); it creates /dev/infiniband/uverbsN for each device"))
			continue
		}
		present := map[string]bool{}
		for _, p := range d.VerbsPresent {
			present[p] = true
		}
		var missing []string
		for _, v := range d.VerbsDevices {
			if !present[v] {
				missing = append(missing, v)
			}
		}
		if len(missing) > 0 {
			r.fail(d.Name, Textf("%s does not exist although sysfs lists it for %s: programs here cannot open the device", strings.Join(missing, ", "), d.Name),
				Textf("in a container, give it the device nodes: `docker run --device=/dev/infiniband --cap-add=IPC_LOCK --ulimit memlock=-1 …` (or -v /dev/infiniband:/dev/infiniband); in Kubernetes request an RDMA resource from the RDMA shared device plugin or SR-IOV device plugin, or mount hostPath /dev/infiniband into the pod; on the host itself the rdma-core udev rules create them (`apt install rdma-core && udevadm trigger`)"))
			continue
		}
		r.ok(d.Name, Textf("%s present", strings.Join(d.VerbsPresent, ", ")))
	}
}

func checkRailsTestable(e *env, r *results) {
	p := e.plan.Probes
	if !p.Enabled || (!p.IBWriteBW.Enabled && !p.IBWriteLat.Enabled) {
		r.skip(SubjectNode, Textf("the pair probes (ib_write_bw, ib_write_lat) are off in the plan"))
		return
	}
	untestable := e.plan.UntestableRails(e.node.Name)
	if len(e.plan.Nodes) < 2 {
		r.skip(SubjectNode, Textf("the plan has no other node to pair with"))
		return
	}
	if len(untestable) == 0 {
		r.ok(SubjectNode, Textf("each of the %d rails has a partner rail on another node of the plan", len(e.node.Interfaces)))
		return
	}
	widest := untestable[0] // every other node has at most this many rails
	for _, rail := range untestable {
		i := e.node.Interfaces[rail]
		subject := i.Netdev
		if subject == "" {
			subject = i.RDMADevice
		}
		what := i.Netdev
		if i.RDMADevice != "" {
			what += " (" + i.RDMADevice + ")"
		}
		r.warn(subject, Textf("rail %d, %s, has no partner: every other node in the plan has at most %d compute interfaces, and the pair probes pair rail i with rail i, so no probe tests this NIC (roce_probe_untestable_rails)", rail, what, widest),
			Textf("if other nodes have this NIC too, list it in their plan entries at the same place (rail order); if none has, the probes cannot test it: test it by hand against a node cabled to the same fabric (`ib_write_bw -d %s` on both, the client given the server's compute IP)", i.RDMADevice))
	}
}
