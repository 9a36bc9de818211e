package node

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// PCIFunction is the PCIe function behind one or more RDMA devices.
type PCIFunction struct {
	Address         string
	RDMADevices     []string
	VendorID        string
	DeviceID        string
	CurrentSpeedGTs float64 // 0 when unknown
	MaxSpeedGTs     float64
	CurrentWidth    int // 0 when unknown
	MaxWidth        int
	// Bandwidths are usable bytes/s after line encoding, 0 when unknown.
	// Available is the minimum over the function and every upstream port,
	// like the kernel's pcie_bandwidth_available(); LimitedBy names the
	// bottleneck.
	CurrentBandwidth   float64
	MaxBandwidth       float64
	AvailableBandwidth float64
	LimitedBy          string
	// AER holds the TOTAL_ERR_* lines of aer_dev_*, keyed by AERSeverities.
	AER map[string]uint64
	// PhysFn is the address of the physical function when this one is an
	// SR-IOV virtual function (its physfn link), "" otherwise. A VF shares
	// its PF's port and link: its port rate is not more traffic on the bus,
	// and its own link attributes are reserved ("Unknown", width 0).
	PhysFn string
	// Upstream is the other end of the function's link; nil when the
	// function sits on a root bus with no bridge above it (an integrated
	// function, most VMs).
	Upstream *PCIPort
}

// PCIPort is the port at the upstream end of a function's link: the root
// port or PCIe switch downstream port the function hangs off, its parent
// directory in sysfs. Its max_link_speed and max_link_width are the slot's
// side of what the link can train to, and its AER counters the errors it
// saw on that link, which the function's own counters do not hold.
type PCIPort struct {
	Address     string
	MaxSpeedGTs float64 // 0 when unknown
	MaxWidth    int     // 0 when unknown
	// AER is keyed by AERSeverities, like PCIFunction.AER; nil when the port
	// has no AER capability.
	AER map[string]uint64
}

// LinkCapability is the fastest the function's link can train to: the lower
// of the function's own maximum and its upstream port's, end by end, as the
// link trains to the best both ends support. NCCL reads a device's link the
// same way (src/graph/xml.cc: link_speed and link_width are the minimum of
// max_link_speed/max_link_width and ../max_link_speed/../max_link_width).
// A side that is unknown (0) leaves the other; 0 when neither is known.
func (f *PCIFunction) LinkCapability() (speedGTs float64, width int) {
	speedGTs, width = f.MaxSpeedGTs, f.MaxWidth
	if u := f.Upstream; u != nil {
		speedGTs, width = lowerKnown(speedGTs, u.MaxSpeedGTs), int(lowerKnown(float64(width), float64(u.MaxWidth)))
	}
	return speedGTs, width
}

// LinkCapabilityBandwidth is the usable bytes/s of the link at its
// capability; 0 when unknown.
func (f *PCIFunction) LinkCapabilityBandwidth() float64 {
	s, w := f.LinkCapability()
	if s <= 0 || w <= 0 {
		return 0
	}
	return PCIeBandwidth(s, w)
}

// UpstreamLimits reports whether the upstream port supports less speed or
// fewer lanes than the function: a Gen5 card in a Gen4 slot, an x16 card in
// an x8 (or bifurcated) slot, behind a riser or switch of an older
// generation. The link can then never reach the card's own maximum, and
// that is the platform, not a fault of the link.
func (f *PCIFunction) UpstreamLimits() bool {
	u := f.Upstream
	if u == nil {
		return false
	}
	return u.MaxSpeedGTs > 0 && f.MaxSpeedGTs > 0 && u.MaxSpeedGTs < f.MaxSpeedGTs ||
		u.MaxWidth > 0 && f.MaxWidth > 0 && u.MaxWidth < f.MaxWidth
}

// lowerKnown is the smaller of two values of which 0 means unknown.
func lowerKnown(a, b float64) float64 {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}

// AERSeverities are the keys of PCIFunction.AER, in report order.
var AERSeverities = []string{"correctable", "nonfatal", "fatal"}

// NIC is a network function of a vendor that makes RDMA NICs.
type NIC struct {
	Address  string
	VendorID string
	DeviceID string
	Class    string
	Driver   string // "" when no driver is bound
}

// BDF matches a PCI address as sysfs names it: domain:bus:device.function.
var BDF = regexp.MustCompile(`^[0-9a-f]{4,}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

// PCI vendor ids of the makers of RDMA NICs.
const (
	VendorMellanox = "0x15b3"
	VendorBroadcom = "0x14e4"
	VendorIntel    = "0x8086"
	VendorPensando = "0x1dd8"
	VendorAmazon   = "0x1d0f"
)

// rdmaVendors names the PCI vendors of RDMA NICs.
var rdmaVendors = map[string]string{
	VendorMellanox: "Mellanox/NVIDIA",
	VendorBroadcom: "Broadcom",
	VendorIntel:    "Intel",
	VendorPensando: "AMD Pensando",
	VendorAmazon:   "Amazon",
}

// VendorName names an RDMA NIC vendor, "" for any other vendor.
func VendorName(vendorID string) string { return rdmaVendors[vendorID] }

// mlx5Models names NVIDIA PCI device ids (kernel mlx5 id table).
var mlx5Models = map[string]string{
	"0x1013": "ConnectX-4", "0x1015": "ConnectX-4 Lx", "0x1017": "ConnectX-5",
	"0x1019": "ConnectX-5 Ex", "0x101b": "ConnectX-6", "0x101d": "ConnectX-6 Dx",
	"0x101f": "ConnectX-6 Lx", "0x1021": "ConnectX-7", "0x1023": "ConnectX-8",
	"0xa2d6": "BlueField-2", "0xa2dc": "BlueField-3",
}

// NICName describes a NIC the way an operator knows it: "Mellanox/NVIDIA
// ConnectX-7 (15b3:1021)", or vendor and ids.
func NICName(n NIC) string {
	vendor := VendorName(n.VendorID)
	if vendor == "" {
		vendor = "vendor " + n.VendorID
	}
	ids := strings.TrimPrefix(n.VendorID, "0x") + ":" + strings.TrimPrefix(n.DeviceID, "0x")
	if n.VendorID == VendorMellanox {
		if m := mlx5Models[n.DeviceID]; m != "" {
			return fmt.Sprintf("%s %s (%s)", vendor, m, ids)
		}
	}
	return fmt.Sprintf("%s NIC (%s)", vendor, ids)
}

// RDMACapable keeps the NIC functions that can do RDMA: every function of
// the NIC-only vendors, and of Intel and Broadcom only the RoCE parts (E810,
// X722, NetXtreme-E), not their plain Ethernet ones (igb, tg3).
func RDMACapable(n NIC) bool {
	if VendorName(n.VendorID) == "" {
		return false
	}
	dev, _ := strconv.ParseUint(strings.TrimPrefix(n.DeviceID, "0x"), 16, 16)
	switch n.VendorID {
	case VendorIntel:
		if n.Driver != "" {
			return n.Driver == "ice" || n.Driver == "i40e" || n.Driver == "irdma"
		}
		return dev >= 0x1591 && dev <= 0x159b || dev >= 0x188a && dev <= 0x1890 || dev >= 0x37ce && dev <= 0x37d3
	case VendorBroadcom:
		if n.Driver != "" {
			return n.Driver == "bnxt_en"
		}
		return dev >= 0x16c0 && dev <= 0x16ff || dev >= 0x1750 && dev <= 0x17ff
	}
	return true
}

// DriverFamily is the pair of kernel modules an RDMA NIC needs: the
// Ethernet/PCI driver that binds the function and the RDMA driver that
// registers the RDMA device.
type DriverFamily struct {
	Name   string
	Core   string
	RDMA   string
	Vendor string
}

var driverFamilies = []DriverFamily{
	{Name: "mlx5", Core: "mlx5_core", RDMA: "mlx5_ib", Vendor: VendorMellanox},
	{Name: "mlx4", Core: "mlx4_core", RDMA: "mlx4_ib"},
	{Name: "bnxt", Core: "bnxt_en", RDMA: "bnxt_re", Vendor: VendorBroadcom},
	{Name: "irdma", Core: "ice", RDMA: "irdma", Vendor: VendorIntel},
	{Name: "ionic", Core: "ionic", RDMA: "ionic_rdma", Vendor: VendorPensando},
	{Name: "efa", Core: "efa", RDMA: "efa", Vendor: VendorAmazon},
}

// DriverFamilyOf maps a PCI driver name to its family; i40e (X722) shares
// irdma.
func DriverFamilyOf(driver string) (DriverFamily, bool) {
	if driver == "i40e" {
		return DriverFamily{Name: "irdma", Core: "i40e", RDMA: "irdma"}, true
	}
	for _, f := range driverFamilies {
		if f.Core == driver {
			return f, true
		}
	}
	return DriverFamily{}, false
}

// i40iwFamily drove the X722's iWARP (i40e) until Linux 5.14, which removed
// it for irdma (and gave irdma its module alias).
var i40iwFamily = DriverFamily{Name: "i40iw", Core: "i40e", RDMA: "i40iw"}

// DriverFamilyOfDevice is DriverFamilyOf for a registered RDMA device, which
// tells apart the RDMA drivers one PCI driver has had: an X722 (i40e) device
// is i40iw's on kernels before 5.14 and irdma's since. Only i40iw has a
// hca_type ("I40IW") and names its devices i40iw<n>.
func DriverFamilyOfDevice(d *Device) (DriverFamily, bool) {
	if d.Driver == "i40e" && (d.HCAType == "I40IW" || strings.HasPrefix(d.Name, "i40iw")) {
		return i40iwFamily, true
	}
	return DriverFamilyOf(d.Driver)
}

// DriverFamilyOfVendor returns the family a vendor's NICs usually need.
func DriverFamilyOfVendor(vendor string) (DriverFamily, bool) {
	for _, f := range driverFamilies {
		if f.Vendor != "" && f.Vendor == vendor {
			return f, true
		}
	}
	return DriverFamily{}, false
}

// KernelModules are the modules whose presence the doctor reasons about.
var KernelModules = []string{
	"ib_core", "ib_uverbs", "rdma_cm", "rdma_ucm",
	"mlx5_core", "mlx5_ib", "mlx4_core", "mlx4_ib",
	"bnxt_en", "bnxt_re", "ice", "i40e", "irdma", "i40iw", "ionic", "ionic_rdma", "efa",
}

// pcieLaneMbps is the usable Mb/s per lane after line encoding, as the
// kernel's PCIE_SPEED2MBS_ENC: 8b/10b for Gen1-2, 128b/130b for Gen3-5, and
// Gen6+ FLIT mode counted 1:1.
var pcieLaneMbps = map[float64]float64{
	2.5: 2000, 5: 4000, 8: 7876, 16: 15753, 32: 31507, 64: 64000, 128: 128000,
}

// ParsePCIeSpeed parses a link speed file, "32.0 GT/s PCIe" (new kernels) or
// "8 GT/s" (old), into GT/s.
func ParsePCIeSpeed(s string) (float64, error) {
	num, rest, ok := strings.Cut(strings.TrimSpace(s), " ")
	if !ok || !strings.HasPrefix(rest, "GT/s") {
		return 0, fmt.Errorf("PCIe speed %q: want \"<n> GT/s\"", truncate(s, 40))
	}
	gt, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("PCIe speed %q: %w", truncate(s, 40), err)
	}
	if _, ok := pcieLaneMbps[gt]; !ok {
		return 0, fmt.Errorf("PCIe speed %q: unknown generation", truncate(s, 40))
	}
	return gt, nil
}

// PCIeBandwidth returns the usable bytes/s of a link of a speed ParsePCIeSpeed
// accepted.
func PCIeBandwidth(gts float64, width int) float64 {
	return pcieLaneMbps[gts] * float64(width) * 1e6 / 8
}

// MaxPCIeWidth is the widest link PCIe defines.
const MaxPCIeWidth = 32

// ParseAERTotal finds the TOTAL_ERR_* line of an aer_dev_* file; false when
// there is none.
func ParseAERTotal(text string) (uint64, bool, error) {
	for len(text) > 0 {
		var line string
		line, text, _ = strings.Cut(text, "\n")
		name, val, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || !strings.HasPrefix(name, "TOTAL_ERR_") {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(val), 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("AER %s: %q is not a number", name, truncate(val, 40))
		}
		return v, true, nil
	}
	return 0, false, nil
}
