package node

import "strings"

// SourceDevlink reads the devlink health reporters of the node's NICs.
const SourceDevlink = "devlink"

// HealthReporter is one devlink health reporter: a driver's watch over one
// kind of fault (mlx5: fw, fw_fatal on the device, tx and rx on the uplink
// port), with the kernel's count of the faults it saw and of the
// recoveries that followed.
type HealthReporter struct {
	// Handle is the reporter's owner as devlink prints it:
	// "pci/0000:18:00.0", or "pci/0000:18:00.0/65535" for a port reporter.
	Handle string
	// PCIAddress is the function of a pci/ handle, "" on other buses.
	PCIAddress string
	Name       string
	// Healthy is false while the reporter is in the error state: the
	// driver reported a fault and recovery has not (yet) succeeded.
	Healthy bool
	// Errors counts the faults reported, Recoveries the recoveries that
	// succeeded (counters, since the driver was loaded).
	Errors, Recoveries uint64
}

// PCIOfHandle returns the PCI address of a "pci/ADDR[/PORT]" devlink
// handle, "" for another bus.
func PCIOfHandle(handle string) string {
	rest, ok := strings.CutPrefix(handle, "pci/")
	if !ok {
		return ""
	}
	addr, _, _ := strings.Cut(rest, "/")
	return addr
}

// DeviceOfPCI returns the RDMA device on PCI function addr, nil when none.
func (s *Snapshot) DeviceOfPCI(addr string) *Device {
	if addr == "" {
		return nil
	}
	for _, d := range s.Devices {
		if d.PCIAddress == addr {
			return d
		}
	}
	return nil
}

// DevlinkInfo is `devlink dev info` of one devlink instance (a NIC's PCI
// function): the versions of its components. Fixed versions belong to the
// hardware (fw.psid, board.id), running ones run now, stored ones were
// flashed and run after the next firmware reset or activation.
type DevlinkInfo struct {
	// Handle is the instance as devlink prints it: "pci/0000:18:00.0".
	Handle string
	// PCIAddress is the function of a pci/ handle, "" on other buses.
	PCIAddress string
	Driver     string
	// Fixed, Running and Stored map a component to its version; nil where
	// the driver reports none of that kind.
	Fixed, Running, Stored map[string]string
}

// firmwareComponents are the names under which drivers report the version
// of their firmware as a whole, in the order they are looked for: devlink's
// generic "fw" (mlx5, bnxt_en, mlxsw), mlx5's older "fw.version" (before the
// generic name), ice's management firmware "fw.mgmt". A component of one
// part only (bnxt_en's fw.roce) never stands for the whole.
var firmwareComponents = []string{"fw", "fw.version", "fw.mgmt"}

// Firmware returns the component that stands for the firmware as a whole
// and its running version; "" when the driver reports none of them.
func (i *DevlinkInfo) Firmware() (component, running string) {
	for _, c := range firmwareComponents {
		if v := i.Running[c]; v != "" {
			return c, v
		}
	}
	return "", ""
}

// StoredFirmware returns the stored version of the Firmware component,
// false when the driver reports none or one it could not read: mlx5 prints
// a failed query of its pending image as 255.255.65535 (Linux commit
// 10dc35f6a443) or zeros.
func (i *DevlinkInfo) StoredFirmware() (string, bool) {
	c, _ := i.Firmware()
	v := i.Stored[c]
	if c == "" || v == "" || v == "255.255.65535" || strings.Trim(v, "0.") == "" {
		return "", false
	}
	return v, true
}

// DevlinkInfoOfPCI returns the devlink info of a PCI function, nil when
// there is none.
func (s *Snapshot) DevlinkInfoOfPCI(addr string) *DevlinkInfo {
	if addr == "" {
		return nil
	}
	for _, i := range s.DevlinkInfo {
		if i.PCIAddress == addr {
			return i
		}
	}
	return nil
}
