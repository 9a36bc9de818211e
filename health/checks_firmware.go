package health

import (
	"cmp"

	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/roce-exporter/roce_exporter/node"
)

// checkFirmware compares, per model, the firmware the node's RDMA devices
// run, and names a device whose flashed firmware does not run yet. The
// fleet-wide comparison is RoCEFirmwareMismatch's, on roce_device_info: a
// node sees only its own NICs.
//
// The running version is the device's fw_ver, else devlink dev info's
// (bnxt_re and others whose fw_ver is empty); the stored one is only in
// devlink dev info: after mlxfwmanager or flint the new image waits for a
// firmware reset, and until then the node runs the old one while every tool
// that reads the flash says otherwise.
func checkFirmware(e *env, r *results) {
	if exp, ok := e.expectations(); ok && !exp.FirmwareConsistent {
		r.skip(SubjectNode, Textf("the plan sets firmware_consistent: false"))
		return
	}
	groups := map[string][]*node.Device{}
	running := map[*node.Device]string{}
	for _, d := range e.snap.Devices {
		fw := runningFirmware(e, d)
		if fw == "" {
			r.skip(d.Name, Textf("firmware version could not be read (no fw_ver, no devlink dev info)"))
			continue
		}
		running[d] = fw
		key := modelKey(e, d)
		groups[key] = append(groups[key], d)
	}
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		devs := groups[key]
		byVersion := map[string][]string{}
		for _, d := range devs {
			byVersion[running[d]] = append(byVersion[running[d]], d.Name)
		}
		if len(byVersion) == 1 {
			for _, d := range devs {
				msg := Textf("firmware %s, same as the other %d %s device(s)", running[d], len(devs)-1, key)
				if len(devs) == 1 {
					msg = Textf("firmware %s (only %s device on this node)", running[d], key)
				}
				firmwareVerdict(e, r, d, StatusOK, msg, Textf(""), "")
			}
			continue
		}
		versions := slices.Sorted(maps.Keys(byVersion))
		sort.SliceStable(versions, func(i, j int) bool { return len(byVersion[versions[i]]) > len(byVersion[versions[j]]) })
		majority := versions[0]
		tie := len(byVersion[versions[1]]) == len(byVersion[majority])
		var summary []Text
		for _, v := range versions {
			summary = append(summary, Textf("%s on %s", v, joinNatural(byVersion[v])))
		}
		for _, d := range devs {
			switch {
			case tie:
				// The highest dotted version, compared numerically.
				newest := slices.MaxFunc(versions, naturalCompare)
				firmwareVerdict(e, r, d, StatusWarn, Textf("%s devices run different firmware with no majority (%s)", key, JoinTexts(summary, "; ")), firmwareFix(d, newest), newest)
			case running[d] == majority:
				firmwareVerdict(e, r, d, StatusOK, Textf("firmware %s, the majority version of %s devices", majority, key), Textf(""), "")
			default:
				firmwareVerdict(e, r, d, StatusWarn, Textf("firmware %s differs from the %d other %s device(s) on %s (%s)", running[d], len(byVersion[majority]), key, majority, JoinTexts(summary, "; ")), firmwareFix(d, majority), majority)
			}
		}
	}
}

// firmwareVerdict reports a device's comparison with its siblings, and
// what devlink says was flashed on it: an image that does not run yet
// warns, and where it is the version the device should run, activating it
// is the fix instead of flashing.
func firmwareVerdict(e *env, r *results, d *node.Device, status Status, msg Text, fix Text, want string) {
	if info := e.snap.DevlinkInfoOfPCI(d.PCIAddress); info != nil {
		_, run := info.Firmware()
		if stored, ok := info.StoredFirmware(); ok && stored != run {
			pending := Textf("firmware %s is flashed but %s still runs: the new image waits for a firmware reset", stored, run)
			switch {
			case status == StatusOK:
				status, msg, fix = StatusWarn, Textf("%s; %s", msg, pending), activateFix(d, stored)
			case stored == want:
				msg, fix = Textf("%s; %s", msg, pending), activateFix(d, stored)
			default:
				msg = Textf("%s; %s", msg, pending)
			}
		}
	}
	if status == StatusOK {
		r.ok(d.Name, msg)
	} else {
		r.warn(d.Name, msg, fix)
	}
}

// runningFirmware is the firmware version a device runs: its fw_ver, else
// devlink dev info's running firmware of its PCI function.
func runningFirmware(e *env, d *node.Device) string {
	if d.FirmwareVersion != "" {
		return d.FirmwareVersion
	}
	if info := e.snap.DevlinkInfoOfPCI(d.PCIAddress); info != nil {
		_, v := info.Firmware()
		return v
	}
	return ""
}

func firmwareFix(d *node.Device, version string) Text {
	addr := orPlaceholder(d.PCIAddress, "<pci address>")
	switch d.Driver {
	case "mlx5_core", "mlx4_core":
		return Textf("bring %[1]s (%[2]s) to %[3]s like its siblings: `mlxfwmanager --query` lists the versions, `mlxfwmanager -u -d %[2]s` (or `flint -d %[2]s -i <firmware %[3]s image for PSID %[4]s> burn`) flashes it, then drain the node (no jobs on it: the reset takes the NIC off the PCIe bus and its links down for seconds) and activate it with `mlxfwreset -d %[2]s reset` or a reboot", d.Name, addr, version, orPlaceholder(d.BoardID, "<PSID>"))
	case "bnxt_en":
		return Textf("flash %s (%s) with the same Broadcom firmware package (%s) as its siblings using Broadcom's niccli or bnxtnvm tool, then reboot", d.Name, addr, version)
	case "ice", "i40e":
		return Textf("update %s (%s) to NVM %s like its siblings with Intel's nvmupdate64e tool, then reboot", d.Name, addr, version)
	}
	return Textf("flash %s (%s) with firmware %s like its siblings using the NIC vendor's tool, then reboot", d.Name, addr, version)
}

// activateFix runs a firmware that is already flashed.
func activateFix(d *node.Device, version string) Text {
	addr := orPlaceholder(d.PCIAddress, "<pci address>")
	switch d.Driver {
	case "mlx5_core":
		return Textf("run the flashed %[3]s on %[1]s: `mlxfwreset -d %[2]s reset` (or `devlink dev reload pci/%[2]s action fw_activate`, Linux 5.10+), or reboot, after draining the node: the reset takes the NIC off the PCIe bus and its links down for seconds, which kills every job using it", d.Name, addr, version)
	case "mlx4_core":
		return Textf("drain the node (the reset takes the NIC off the PCIe bus and its links down for seconds), then run the flashed %[3]s on %[1]s: `mlxfwreset -d %[2]s reset` or reboot", d.Name, addr, version)
	}
	return Textf("reboot (or reset %s's firmware with the NIC vendor's tool) to run the flashed %s", d.Name, version)
}

// modelKey groups devices that should share firmware: same chip and same board
// (PSID), because different boards of one chip legitimately run different images.
func modelKey(e *env, d *node.Device) string {
	if d.HCAType != "" || d.BoardID != "" {
		return strings.Trim(d.HCAType+" "+d.BoardID, " ")
	}
	if info := e.snap.DevlinkInfoOfPCI(d.PCIAddress); info != nil {
		if board := cmp.Or(info.Fixed["fw.psid"], info.Fixed["board.id"]); board != "" {
			return d.Driver + " " + board
		}
	}
	if f := e.snap.PCI[d.PCIAddress]; f != nil && f.DeviceID != "" {
		return d.Driver + " " + f.VendorID + ":" + f.DeviceID
	}
	return orPlaceholder(d.Driver, "unknown")
}
