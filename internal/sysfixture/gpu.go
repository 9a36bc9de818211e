package sysfixture

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// GPUSide is what a GPU node adds to the tree: the GPUs, the PCI bridges
// above GPUs and NICs (with their configuration space), the IOMMU, the
// NVIDIA modules' files and the /proc files the exporter reads.
type GPUSide struct {
	GPUs    []GPUFunction
	Bridges []Bridge
	// NUMA is the numa_node of PCI functions (GPUs, NICs, bridges) by
	// address; 0 when unlisted.
	NUMA map[string]int
	// IOMMUUnits are the entries of /sys/class/iommu ("dmar0"); none
	// means the IOMMU is off.
	IOMMUUnits []string
	// GroupType is the type of every GPU's and NIC's IOMMU group
	// (identity, DMA, DMA-FQ); "" writes no groups.
	GroupType string
	// Cmdline is /proc/cmdline.
	Cmdline string
	// DriverVersion is /sys/module/nvidia/version and the version in
	// /proc/driver/nvidia/version; OpenModule picks that file's wording.
	DriverVersion string
	OpenModule    bool
	KernelRelease string
}

// GPUFunction is one GPU.
type GPUFunction struct {
	Address, DeviceID, Class string
	// Chain is the bridges above it, root port first, joined by "/".
	Chain                  string
	CurSpeed, MaxSpeed     string
	CurWidth, MaxWidth     int
	SubsystemID, Driver    string
	AERCorrectable         int
	NoLinkAttrs, NoAERAttr bool
}

// Bridge is a PCI-to-PCI bridge: a root port or a switch port.
type Bridge struct {
	// Chain is its own directory's chain: the bridges above it and itself,
	// root port first, joined by "/".
	Chain          string
	Vendor, Device string
	// SubsystemVendor and SubsystemDevice are written when set: NCCL tells
	// a Broadcom PEX switch's levels by them.
	SubsystemVendor, SubsystemDevice string
	Speed                            string
	Width                            int
	AERCorrectable                   int
	// ACSControl is the ACS control register; NoACS leaves the capability
	// out (upstream ports have none).
	ACSControl uint16
	NoACS      bool
}

func (b Bridge) address() string { return b.Chain[strings.LastIndexByte(b.Chain, '/')+1:] }

// gpuSide writes the GPU side after the RDMA devices, whose functions
// already exist.
func (w *writer) gpuSide(g *GPUSide, nics []string) {
	for _, b := range g.Bridges {
		addr := b.address()
		dir := "sys/devices/pci" + b.Chain[:7] + "/" + b.Chain
		w.file(dir+"/vendor", b.Vendor)
		w.file(dir+"/device", b.Device)
		w.file(dir+"/class", "0x060400")
		w.file(dir+"/numa_node", fmt.Sprint(g.NUMA[addr]))
		w.file(dir+"/current_link_speed", b.Speed)
		w.file(dir+"/max_link_speed", b.Speed)
		w.file(dir+"/current_link_width", fmt.Sprint(b.Width))
		w.file(dir+"/max_link_width", fmt.Sprint(b.Width))
		if b.SubsystemVendor != "" {
			w.file(dir+"/subsystem_vendor", b.SubsystemVendor)
			w.file(dir+"/subsystem_device", b.SubsystemDevice)
		}
		w.aer(dir, b.AERCorrectable)
		w.raw(dir+"/config", string(bridgeConfig(b)))
		w.link("sys/bus/pci/devices/"+addr, dir)
		w.link(dir+"/driver", "sys/bus/pci/drivers/pcieport")
	}
	for _, gpu := range g.GPUs {
		fdir := w.pciFunction(gpu.Address, gpu.Chain, "0x10de", gpu.DeviceID, gpu.Class, gpu.Driver)
		w.file(fdir+"/subsystem_vendor", "0x10de")
		w.file(fdir+"/subsystem_device", gpu.SubsystemID)
		if !gpu.NoLinkAttrs {
			w.file(fdir+"/current_link_speed", gpu.CurSpeed)
			w.file(fdir+"/max_link_speed", gpu.MaxSpeed)
			w.file(fdir+"/current_link_width", fmt.Sprint(gpu.CurWidth))
			w.file(fdir+"/max_link_width", fmt.Sprint(gpu.MaxWidth))
		}
		if !gpu.NoAERAttr {
			w.aer(fdir, gpu.AERCorrectable)
		}
	}
	// /sys/class/iommu/<unit> links into /sys/devices/virtual/iommu
	// (drivers/iommu/iommu-sysfs.c); intel-iommu adds intel-iommu/.
	for _, u := range g.IOMMUUnits {
		dir := "sys/devices/virtual/iommu/" + u
		if strings.HasPrefix(u, "dmar") {
			w.file(dir+"/intel-iommu/version", "1:0")
		} else {
			w.file(dir+"/amd-iommu/cap", "0x00190000")
		}
		w.link("sys/class/iommu/"+u, dir)
	}
	if g.GroupType != "" && len(g.IOMMUUnits) > 0 {
		// One group per GPU and per NIC function, as behind ACS-capable
		// switch ports; group numbers in address order.
		var addrs []string
		for _, gpu := range g.GPUs {
			addrs = append(addrs, gpu.Address)
		}
		addrs = append(addrs, nics...)
		slices.Sort(addrs)
		for i, a := range addrs {
			grp := fmt.Sprintf("sys/kernel/iommu_groups/%d", i+20)
			w.file(grp+"/type", g.GroupType)
			w.link(grp+"/devices/"+a, "sys/bus/pci/devices/"+a)
			w.link(w.pciDirs[a]+"/iommu_group", grp)
		}
	}
	if g.DriverVersion != "" {
		w.file("sys/module/nvidia/version", g.DriverVersion)
		text := fmt.Sprintf("NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Tue Mar  5 22:42:15 UTC 2024\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04) \n", g.DriverVersion)
		if g.OpenModule {
			text = fmt.Sprintf("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  %s  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Mar  5 22:45:28 UTC 2024\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04) \n", g.DriverVersion)
		}
		w.raw("proc/driver/nvidia/version", text)
	}
	if g.Cmdline != "" {
		w.file("proc/cmdline", g.Cmdline)
	}
	if g.KernelRelease != "" {
		w.file("proc/sys/kernel/osrelease", g.KernelRelease)
	}
}

// bridgeConfig is the 4096-byte configuration space root reads from a
// bridge's config file: a type 1 header, then the extended capabilities
// from 0x100: AER, and ACS unless the bridge has none.
func bridgeConfig(b Bridge) []byte {
	c := make([]byte, 4096)
	var vendor, device uint16
	fmt.Sscanf(b.Vendor, "0x%x", &vendor)
	fmt.Sscanf(b.Device, "0x%x", &device)
	binary.LittleEndian.PutUint16(c[0x00:], vendor)
	binary.LittleEndian.PutUint16(c[0x02:], device)
	binary.LittleEndian.PutUint32(c[0x08:], 0x06040000) // class code, revision 0
	c[0x0e] = 0x01                                      // header type 1 (bridge)
	next := uint32(0)
	if !b.NoACS {
		next = 0x148
	}
	binary.LittleEndian.PutUint32(c[0x100:], 0x0001|2<<16|next<<20) // AER v2
	if !b.NoACS {
		binary.LittleEndian.PutUint32(c[0x148:], 0x000d|1<<16) // ACS v1, last
		binary.LittleEndian.PutUint16(c[0x14c:], 0x005f)       // SV TB RR CR UF EC
		binary.LittleEndian.PutUint16(c[0x14e:], b.ACSControl)
	}
	return c
}

// DGX H100 layout. The NICs' buses are those of the DGX H100's eight
// compute ConnectX-7 ports (netdevs ibp24s0, ibp64s0, ibp79s0, ibp94s0,
// ibp154s0, ibp192s0, ibp206s0, ibp220s0: buses 0x18, 0x40, 0x4f, 0x5e,
// 0x9a, 0xc0, 0xce, 0xdc); each GPU sits three buses after its NIC (0x1b,
// 0x43, 0x52, 0x61, 0x9d, 0xc3, 0xd1, 0xdf). See testdata provenance in
// collector/testdata/dgx-h100-8gpu-8nic/PROVENANCE.md.
var dgxNICBuses = []int{0x18, 0x40, 0x4f, 0x5e, 0x9a, 0xc0, 0xce, 0xdc}

const (
	acsOn  = 0x001d // SV RR CR UF: what Linux enables on ports with an IOMMU
	gen4   = "16.0 GT/s PCIe"
	gen5   = "32.0 GT/s PCIe"
	h100ID = "0x2330" // H100 80GB HBM3 (SXM5)
	// Broadcom PEX89144 (the DGX H100's PCIe switches) and the Sapphire
	// Rapids root port.
	pexVendor, pexDevice = "0x1000", "0xc030"
	rpVendor, rpDevice   = "0x8086", "0x352a"
)

// pairChain is the PCI tree of GPU/NIC pair i: host bridge pci0000:<r>,
// root port r:01.0, switch upstream port r+1:00.0, downstream ports
// r+2:00.0 (to the NIC on r+3) and r+2:01.0 (to a second switch level
// r+4/r+5 above the GPU on r+6). Two switch levels between them is what
// makes nvidia-smi report the DGX H100's GPU↔NIC pairs as PXB.
type pairChain struct {
	rp, usp, dspNIC, dspGPU, usp2, dsp2 string
	nic, gpu                            string
}

func dgxPair(nicBus int) pairChain {
	r := nicBus - 3
	a := func(bus, dev int) string { return fmt.Sprintf("0000:%02x:%02x.0", bus, dev) }
	return pairChain{
		rp: a(r, 1), usp: a(r+1, 0), dspNIC: a(r+2, 0), dspGPU: a(r+2, 1),
		usp2: a(r+4, 0), dsp2: a(r+5, 0), nic: a(r+3, 0), gpu: a(r+6, 0),
	}
}

func (p pairChain) nicChain() string { return strings.Join([]string{p.rp, p.usp, p.dspNIC}, "/") }
func (p pairChain) gpuChain() string {
	return strings.Join([]string{p.rp, p.usp, p.dspGPU, p.usp2, p.dsp2}, "/")
}

func (p pairChain) bridges(acs uint16) []Bridge {
	br := func(chain, vendor, device string, acs uint16, noACS bool) Bridge {
		return Bridge{Chain: chain, Vendor: vendor, Device: device, Speed: gen5, Width: 16, ACSControl: acs, NoACS: noACS}
	}
	return []Bridge{
		// Linux enables ACS on root ports whenever an IOMMU is present;
		// traffic between a GPU and a NIC under one switch never crosses it.
		br(p.rp, rpVendor, rpDevice, acsOn, false),
		br(p.rp+"/"+p.usp, pexVendor, pexDevice, 0, true),
		br(p.nicChain(), pexVendor, pexDevice, acs, false),
		br(p.rp+"/"+p.usp+"/"+p.dspGPU, pexVendor, pexDevice, acs, false),
		br(p.rp+"/"+p.usp+"/"+p.dspGPU+"/"+p.usp2, pexVendor, pexDevice, 0, true),
		br(p.gpuChain(), pexVendor, pexDevice, acs, false),
	}
}

var gpuModules = []string{"nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_peermem"}

// DGXH100 is a DGX H100: eight H100 SXM5 GPUs and eight ConnectX-7 (here
// in Ethernet mode, RoCE), each GPU paired with one NIC under a PCIe
// switch partition of its own, four pairs per socket; IOMMU in
// passthrough, nvidia_peermem loaded, ACS off on the switch ports.
func DGXH100() Node {
	n := HealthyCX7(8)
	WithGPUs(&n)
	return n
}

// WithGPUs gives a node of up to eight RDMA devices the DGX H100's GPU
// side: device i moves into the DGX slot of pair i, with an H100 in the
// same switch partition.
func WithGPUs(n *Node) {
	n.Modules = append(slices.Clone(n.Modules), gpuModules...)
	g := &GPUSide{
		NUMA:       map[string]int{},
		IOMMUUnits: []string{"dmar0", "dmar1", "dmar2", "dmar3", "dmar4", "dmar5", "dmar6", "dmar7"},
		GroupType:  "identity",
		Cmdline:    "BOOT_IMAGE=/boot/vmlinuz-5.15.0-1042-nvidia root=UUID=6f1a3c52-0d1e-4c39-9f7e-2b7d6c1e8a90 ro intel_iommu=on iommu=pt console=tty0 console=ttyS0,115200n8",
		// DGX OS 6 ships the proprietary R535 driver with nvidia_peermem.
		DriverVersion: "535.161.08", KernelRelease: "5.15.0-1042-nvidia",
	}
	for i := range min(len(n.Devices), len(dgxNICBuses)) {
		p := dgxPair(dgxNICBuses[i])
		socket := i / 4
		n.Devices[i].PCIAddress, n.Devices[i].RootPort = p.nic, p.nicChain()
		g.GPUs = append(g.GPUs, GPUFunction{
			Address: p.gpu, Chain: p.gpuChain(), DeviceID: h100ID, Class: "0x030200", SubsystemID: "0x16c1", Driver: "nvidia",
			CurSpeed: gen5, MaxSpeed: gen5, CurWidth: 16, MaxWidth: 16,
		})
		g.Bridges = append(g.Bridges, p.bridges(0)...)
		for _, a := range []string{p.rp, p.usp, p.dspNIC, p.dspGPU, p.usp2, p.dsp2, p.nic, p.gpu} {
			g.NUMA[a] = socket
		}
	}
	n.GPU = g
}

// DGXH100Degraded is the DGX H100 with the GPU-side faults that make NCCL
// slow without touching the fabric: ACS turned back on at GPU 2's switch
// (a BIOS update reset it), nvidia_peermem not loaded (and the proprietary
// driver, so no DMA-BUF either), GPU 5 trained at x8, and the NIC meant
// for GPU 3 moved to a slot of the other socket.
func DGXH100Degraded() Node {
	n := DGXH100()
	g := n.GPU
	n.Modules = slices.DeleteFunc(n.Modules, func(m string) bool { return m == "nvidia_peermem" })
	p2 := dgxPair(dgxNICBuses[2])
	for i, b := range g.Bridges {
		if strings.HasPrefix(b.Chain, p2.rp+"/") && !b.NoACS {
			g.Bridges[i].ACSControl = acsOn
		}
	}
	g.GPUs[5].CurWidth = 8
	g.GPUs[5].AERCorrectable = 412
	// mlx5_3 in a slot of socket 1: its own root port on host bridge e4.
	p3 := dgxPair(dgxNICBuses[3])
	g.Bridges = slices.DeleteFunc(g.Bridges, func(b Bridge) bool { return b.Chain == p3.nicChain() })
	delete(g.NUMA, p3.nic)
	n.Devices[3].PCIAddress, n.Devices[3].RootPort = "0000:e5:00.0", "0000:e4:01.0"
	g.Bridges = append(g.Bridges, Bridge{Chain: "0000:e4:01.0", Vendor: rpVendor, Device: rpDevice, Speed: gen5, Width: 16, ACSControl: acsOn})
	g.NUMA["0000:e4:01.0"], g.NUMA["0000:e5:00.0"] = 1, 1
	return n
}

// nicAddresses lists the PCI addresses of the node's RDMA devices.
func nicAddresses(devs []Device) []string {
	m := map[string]bool{}
	for _, d := range devs {
		m[d.PCIAddress] = true
	}
	return slices.Sorted(maps.Keys(m))
}
