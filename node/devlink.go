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
