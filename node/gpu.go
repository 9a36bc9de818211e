package node

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// SourceGPU is the source (and collector) of the GPU side of the RDMA path:
// NVIDIA GPUs on the PCI bus, their PCIe relation to the RDMA NICs, ACS on
// the bridges between them, the IOMMU mode and GPUDirect RDMA support.
const SourceGPU = "gpu"

// VendorNVIDIA is NVIDIA's PCI vendor id (GPUs; its NICs keep Mellanox's).
const VendorNVIDIA = "0x10de"

// IsNVIDIAGPU reports a PCI function that is an NVIDIA GPU: vendor 0x10de
// and base class 0x03 with sub-class 0x00 (VGA, workstation boards) or 0x02
// (3D controller: every data-center part, H100 is 0x030200).
func IsNVIDIAGPU(vendor, class string) bool {
	return vendor == VendorNVIDIA && (strings.HasPrefix(class, "0x0300") || strings.HasPrefix(class, "0x0302"))
}

// PCIPlace is where a function sits in the PCI device tree, as its
// directory under /sys/devices says: pci<domain>:<bus> (the host bridge),
// then the bridges from the root port down, then the function itself.
type PCIPlace struct {
	// Host is the host bridge directory name, "pci0000:17".
	Host string
	// Path is every PCI address from the root port down to the function,
	// the function last.
	Path []string
	// NUMANode is the function's numa_node; -1 when the firmware gives none.
	NUMANode int
	// IDs holds the ids of the bridges on Path, by address, where they were
	// read: NCCL tells a Broadcom PEX switch by them (see Relate).
	IDs map[string]PCIID
}

// PCIID is what a PCI function says it is: its vendor, device and
// subsystem (board) ids, the sysfs files vendor, device, subsystem_vendor
// and subsystem_device.
type PCIID struct {
	Vendor, Device, SubsystemVendor, SubsystemDevice uint16
}

// ParsePCIID parses the four id files ("0x1000"); an error names the first
// that is not a 16-bit hexadecimal number.
func ParsePCIID(vendor, device, subsystemVendor, subsystemDevice string) (PCIID, error) {
	var v [4]uint16
	for i, s := range []string{vendor, device, subsystemVendor, subsystemDevice} {
		n, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(s), "0x"), 16, 16)
		if err != nil || !strings.HasPrefix(strings.TrimSpace(s), "0x") {
			return PCIID{}, fmt.Errorf("PCI id %q: want 0x and four hexadecimal digits", truncate(s, 40))
		}
		v[i] = uint16(n)
	}
	return PCIID{v[0], v[1], v[2], v[3]}, nil
}

// ncclDevice is the id the way NCCL packs a PCI node's pci.device
// (src/graph/topo.cc): vendor, device, subsystem vendor, subsystem device,
// 16 bits each, from the top.
func (id PCIID) ncclDevice() uint64 {
	return uint64(id.Vendor)<<48 | uint64(id.Device)<<32 | uint64(id.SubsystemVendor)<<16 | uint64(id.SubsystemDevice)
}

// bcmGen is NCCL's getBcmGen (src/graph/topo.cc, ncclTopoFlattenBcmSwitches):
// 4 for a Broadcom PEX88xxx (1000:c010, subsystem 1000:axxx, at any level),
// 5 for a PEX89xxx (1000:c030, subsystem 1000:0xxx at the top level, 1000:1xxx
// below it), 0 for any other switch.
func bcmGen(device uint64, level int) int {
	switch device & 0xfffffffffffff000 {
	case 0x1000c0101000a000:
		return 4
	case 0x1000c03010000000 | uint64(level)*0x1000:
		return 5
	}
	return 0
}

// ParsePCIPlace reads a place from a function's resolved sysfs directory,
// "/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:00.0/0000:1a:00.0".
func ParsePCIPlace(dir string, numa int) (PCIPlace, error) {
	parts := strings.Split(strings.Trim(dir, "/"), "/")
	for i, p := range parts {
		if !strings.HasPrefix(p, "pci") || !strings.Contains(p, ":") {
			continue
		}
		pl := PCIPlace{Host: p, NUMANode: numa}
		for _, q := range parts[i+1:] {
			if !BDF.MatchString(q) {
				return PCIPlace{}, fmt.Errorf("%s: %q is not a PCI address", dir, truncate(q, 40))
			}
			pl.Path = append(pl.Path, q)
		}
		if len(pl.Path) == 0 {
			return PCIPlace{}, fmt.Errorf("%s: no PCI function below the host bridge", dir)
		}
		return pl, nil
	}
	return PCIPlace{}, fmt.Errorf("%s: not under a PCI host bridge (pci<domain>:<bus>)", dir)
}

// Address is the function's own PCI address.
func (p PCIPlace) Address() string {
	if len(p.Path) == 0 {
		return ""
	}
	return p.Path[len(p.Path)-1]
}

// switches lists the PCI switches NCCL puts above the function, nearest
// first, each named by its upstream port. It follows NCCL's reading of
// sysfs (src/graph/xml.cc, ncclTopoGetXmlFromSys: "Go up one level in the
// PCI tree. Rewind two '/' and follow the upper PCI switch, or stop if we
// reach a CPU root complex"): a node's parent is the directory two levels
// up, as long as both levels are PCI addresses, so every second directory up
// is one switch and a function whose grandparent is the host bridge hangs
// off the CPU.
func (p PCIPlace) switches() []string {
	var out []string
	// The function is Path[n-1], its downstream port Path[n-2] and that
	// switch's upstream port Path[n-3]; Path[0] is the root port, a switch to
	// NCCL only when the chain below it has an odd length.
	for i := len(p.Path) - 3; i >= 0; i -= 2 {
		out = append(out, p.Path[i])
	}
	return out
}

// PCIeRelation is the path between two PCI functions as NCCL classifies it
// (src/graph/paths.cc, ncclTopoSetPaths), nearest first. NCCL's words are
// nvidia-smi topo -m's but for one: NCCL has no NODE; a path through the CPU
// within one NUMA node, nvidia-smi's PHB and NODE alike, is PHB to NCCL.
type PCIeRelation int

// The relations, ordered by distance. Their numeric value is what the
// exporter's level gauge reports (lower is closer); 4 was NODE, which
// NCCL does not have, and SYS keeps the number it was published with.
const (
	RelationUnknown PCIeRelation = 0
	// RelationPIX: through one PCIe switch (NCCL: at most a single bridge).
	RelationPIX PCIeRelation = 1
	// RelationPXB: through several PCIe switches, not the CPU.
	RelationPXB PCIeRelation = 2
	// RelationPHB: through the CPU's PCIe host bridge, within one NUMA node.
	RelationPHB PCIeRelation = 3
	// RelationSYS: across the interconnect between NUMA nodes (UPI, xGMI).
	RelationSYS PCIeRelation = 5
)

var relationNames = map[PCIeRelation]string{RelationPIX: "PIX", RelationPXB: "PXB", RelationPHB: "PHB", RelationSYS: "SYS"}

func (r PCIeRelation) String() string {
	if n, ok := relationNames[r]; ok {
		return n
	}
	return "unknown"
}

// Direct reports a relation whose traffic stays below the root complex
// (PIX, PXB): the only ones where GPUDirect RDMA runs at full speed, and
// the only ones NCCL uses GPUDirect RDMA for by default
// (NCCL_NET_GDR_LEVEL defaults to PXB).
func (r PCIeRelation) Direct() bool { return r == RelationPIX || r == RelationPXB }

// Relate computes the relation of two functions from their places as NCCL
// does: each function hangs off the switch above it (switches) or the CPU;
// a path that meets in one switch with no switch-to-switch hop is PIX, one
// with such a hop PXB, one through the CPU PHB, and one across two NUMA
// nodes SYS (a CPU in NCCL is a NUMA node: two host bridges of one socket
// are one CPU). Broadcom PEX switches are flattened first, as
// ncclTopoFlattenBcmSwitches does (NCCL 2.9.6+ for Gen4, 2.20.3+ for Gen5):
// their second level is an artefact of the chip, so a GPU and a NIC on two
// of its sub-switches are PIX to NCCL where nvidia-smi says PXB. An unknown
// NUMA node (-1, a single-socket machine's firmware) counts as the same
// node: it cannot be told apart. Not modelled: NCCL's extra links between
// Broadcom switches (pci_switch_link) and paths through NVLink (PXN).
func Relate(a, b PCIPlace) PCIeRelation {
	if a.Host == "" || b.Host == "" || len(a.Path) == 0 || len(b.Path) == 0 {
		return RelationUnknown
	}
	sa, sb := flattenBcmSwitches(a, b)
	for i, s := range sa {
		if j := slices.Index(sb, s); j >= 0 {
			if i == 0 && j == 0 {
				return RelationPIX
			}
			return RelationPXB
		}
	}
	if a.NUMANode >= 0 && b.NUMANode >= 0 && a.NUMANode != b.NUMANode {
		return RelationSYS
	}
	return RelationPHB
}

// SameHostBridge reports two functions below one PCI host bridge. NCCL
// does not tell that apart from two host bridges of one NUMA node (both are
// PHB), but a GPU and a NIC on one root complex are nearer than two across
// the CPU's internal fabric: a tie-break among equal relations where the
// exporter picks one GPU for a NIC (perftest's use_cuda).
func SameHostBridge(a, b PCIPlace) bool { return a.Host != "" && a.Host == b.Host }

// bcmSwitch is a switch of NCCL's graph while it is flattened.
type bcmSwitch struct {
	addr   string
	device uint64
	depth  int
	links  []*bcmSwitch
	into   *bcmSwitch // the switch it was merged into
}

// flattenBcmSwitches returns the switches above a and b, nearest first, with
// each Broadcom sub-switch replaced by the switch NCCL merges it into. It
// runs ncclTopoFlattenBcmSwitches on the part of the tree the two paths
// span, in NCCL's order (parents before children, siblings by address):
// a Gen4/Gen5 switch at level 0 takes every linked switch with the level-1
// signature of its generation (their links become its own), then is marked
// (device |= 0xffff) so that it neither takes nor is taken again.
func flattenBcmSwitches(a, b PCIPlace) (sa, sb []string) {
	nodes := map[string]*bcmSwitch{}
	for _, p := range []PCIPlace{a, b} {
		sw := p.switches()
		var parent *bcmSwitch
		for k := len(sw) - 1; k >= 0; k-- {
			n := nodes[sw[k]]
			if n == nil {
				n = &bcmSwitch{addr: sw[k], depth: len(sw) - 1 - k}
				if id, ok := p.IDs[sw[k]]; ok {
					n.device = id.ncclDevice()
				}
				nodes[sw[k]] = n
			}
			if parent != nil && !slices.Contains(n.links, parent) {
				n.links = append(n.links, parent)
				parent.links = append(parent.links, n)
			}
			parent = n
		}
	}
	order := slices.SortedFunc(maps.Values(nodes), func(x, y *bcmSwitch) int {
		if x.depth != y.depth {
			return x.depth - y.depth
		}
		return strings.Compare(x.addr, y.addr)
	})
	for _, s := range order {
		gen := bcmGen(s.device, 0)
		if s.into != nil || gen == 0 {
			continue
		}
		var subs []*bcmSwitch
		s.links = slices.DeleteFunc(s.links, func(l *bcmSwitch) bool {
			if bcmGen(l.device, 1) != gen {
				return false
			}
			subs = append(subs, l)
			return true
		})
		for _, sub := range subs {
			for _, l := range sub.links {
				if l == s {
					continue
				}
				s.links = append(s.links, l)
				l.links[slices.Index(l.links, sub)] = s
			}
			sub.into = s
		}
		s.device |= 0xffff
	}
	chain := func(p PCIPlace) []string {
		var out []string
		for _, addr := range p.switches() {
			n := nodes[addr]
			if n.into != nil {
				n = n.into
			}
			if len(out) == 0 || out[len(out)-1] != n.addr {
				out = append(out, n.addr)
			}
		}
		return out
	}
	return chain(a), chain(b)
}

// Bridges lists the PCI bridges traffic between a and b crosses below the
// host bridge: the ports where ACS can redirect it. Both functions
// themselves are left out; when they meet only at the host bridge, their
// root ports are the bridges.
func Bridges(a, b PCIPlace) []string {
	if a.Host != b.Host {
		return append(slices.Clone(a.Path[:len(a.Path)-1]), b.Path[:len(b.Path)-1]...)
	}
	n := 0
	for n < len(a.Path)-1 && n < len(b.Path)-1 && a.Path[n] == b.Path[n] {
		n++
	}
	var out []string
	if n > 0 {
		out = append(out, a.Path[n-1]) // the deepest common bridge
	}
	out = append(out, a.Path[n:len(a.Path)-1]...)
	out = append(out, b.Path[n:len(b.Path)-1]...)
	return out
}

// ACS is the Access Control Services state of one PCI bridge, from the ACS
// extended capability in its configuration space.
type ACS struct {
	// Readable: the extended configuration space (4096 bytes) could be read.
	// sysfs gives only the first 64 bytes to a reader without
	// CAP_SYS_ADMIN, so without privilege nothing is known.
	Readable bool
	// Present: the bridge has an ACS capability.
	Present bool
	// Capability and Control are the ACS capability and control registers.
	Capability, Control uint16
}

// ACS control bits (PCIe Base Specification, ACS Extended Capability;
// linux/include/uapi/linux/pci_regs.h PCI_ACS_*).
const (
	ACSSourceValidation   = 0x0001 // PCI_ACS_SV
	ACSTranslationBlock   = 0x0002 // PCI_ACS_TB
	ACSRequestRedirect    = 0x0004 // PCI_ACS_RR
	ACSCompletionRedirect = 0x0008 // PCI_ACS_CR
	ACSUpstreamForwarding = 0x0010 // PCI_ACS_UF
	ACSEgressControl      = 0x0020 // PCI_ACS_EC
	ACSDirectTranslated   = 0x0040 // PCI_ACS_DT
)

// PCIExtCapACS is the ACS extended capability id (PCI_EXT_CAP_ID_ACS).
const PCIExtCapACS = 0x000d

// Redirects reports ACS settings that send peer-to-peer traffic up to the
// root complex instead of across the switch: P2P Request Redirect,
// Completion Redirect or Egress Control. NVIDIA's and NCCL's guidance is
// to disable ACS on the switches between GPUs and NICs for exactly this.
func (a ACS) Redirects() bool {
	return a.Present && a.Control&(ACSRequestRedirect|ACSCompletionRedirect|ACSEgressControl) != 0
}

// ParseACS finds the ACS capability in a function's config file. A file of
// less than 4096 bytes (an unprivileged read, or a conventional PCI
// function) gives an ACS that is not Readable; a corrupt capability list is
// an error.
func ParseACS(config []byte) (ACS, error) {
	if len(config) < 4096 {
		return ACS{}, nil
	}
	acs := ACS{Readable: true}
	// Extended capabilities start at 0x100; each header is a 32-bit
	// little-endian word: id [15:0], version [19:16], next [31:20].
	seen := map[int]bool{}
	for off := 0x100; off != 0; {
		if off < 0x100 || off+8 > len(config) || off&3 != 0 {
			return ACS{}, fmt.Errorf("PCI extended capability at %#x: outside the configuration space", off)
		}
		if seen[off] {
			return ACS{}, fmt.Errorf("PCI extended capability list loops at %#x", off)
		}
		seen[off] = true
		hdr := binary.LittleEndian.Uint32(config[off:])
		if hdr == 0 || hdr == 0xffffffff {
			return acs, nil // no extended capabilities (or the device is gone)
		}
		if hdr&0xffff == PCIExtCapACS {
			acs.Present = true
			acs.Capability = binary.LittleEndian.Uint16(config[off+4:])
			acs.Control = binary.LittleEndian.Uint16(config[off+6:])
			return acs, nil
		}
		off = int(hdr >> 20)
	}
	return acs, nil
}

// IOMMUMode is how the IOMMU treats DMA from the GPUs and NICs.
type IOMMUMode string

// The modes.
const (
	// IOMMUOff: no IOMMU is active (/sys/class/iommu is empty).
	IOMMUOff IOMMUMode = "off"
	// IOMMUPassthrough: the devices' groups use the identity domain
	// (iommu=pt, iommu.passthrough=1): DMA is not translated.
	IOMMUPassthrough IOMMUMode = "passthrough"
	// IOMMUTranslated: DMA through a translated domain (DMA, DMA-FQ):
	// every GPU↔NIC transfer is translated, and peer-to-peer traffic goes
	// through the root complex.
	IOMMUTranslated IOMMUMode = "translated"
	// IOMMUUnknown: active but the group types could not be read, or
	// whether it is active could not be read at all.
	IOMMUUnknown IOMMUMode = "unknown"
)

// IOMMU is the IOMMU state of the node.
type IOMMU struct {
	// Units are the entries of /sys/class/iommu (dmar0, ivhd0, …).
	Units []string
	// GroupTypes maps the PCI address of each GPU and RDMA NIC to its IOMMU
	// group's type (/sys/kernel/iommu_groups/<n>/type: identity, DMA,
	// DMA-FQ, unmanaged, blocked); absent when it has no group.
	GroupTypes map[string]string
	// Cmdline holds the IOMMU parameters of the kernel command line
	// (iommu=, intel_iommu=, amd_iommu=, iommu.passthrough=), in order;
	// nil when /proc/cmdline was not read.
	Cmdline []string
	// Unreadable names what exists but could not be read ("path: error"):
	// /sys/class/iommu, a device's iommu_group link, a group's type. Units
	// and GroupTypes are then incomplete, and an empty Units says nothing.
	Unreadable []string
}

// Mode says how DMA of the GPUs and NICs is treated: translated when any of
// their groups translates; unknown when part of the state could not be
// read (an unreadable /sys/class/iommu is no proof that no IOMMU is active);
// off without IOMMU units or groups, passthrough when every group is
// identity.
func (m IOMMU) Mode() IOMMUMode {
	for _, t := range m.GroupTypes {
		if t != "identity" {
			return IOMMUTranslated
		}
	}
	switch {
	case len(m.Unreadable) > 0:
		return IOMMUUnknown
	case len(m.GroupTypes) > 0:
		return IOMMUPassthrough
	case len(m.Units) == 0:
		return IOMMUOff
	}
	return IOMMUUnknown
}

// IOMMUCmdline picks the IOMMU parameters out of /proc/cmdline.
func IOMMUCmdline(cmdline string) []string {
	out := []string{}
	for _, f := range strings.Fields(cmdline) {
		k, _, _ := strings.Cut(f, "=")
		switch k {
		case "iommu", "intel_iommu", "amd_iommu", "iommu.passthrough", "iommu.strict":
			out = append(out, f)
		}
	}
	return out
}

// GPUDirect is what the node offers for GPUDirect RDMA (a NIC reading and
// writing GPU memory directly).
type GPUDirect struct {
	// PeerMem names the loaded peer-memory module: nvidia_peermem (driver
	// R470+) or the legacy nv_peer_mem; "" when neither is loaded.
	PeerMem string
	// NvidiaLoaded: the nvidia kernel module is loaded.
	NvidiaLoaded bool
	// DriverVersion is /sys/module/nvidia/version, "" when unknown.
	DriverVersion string
	// OpenKernelModule: /proc/driver/nvidia/version names the "Open Kernel
	// Module"; nil when the file was not read.
	OpenKernelModule *bool
	// KernelRelease is /proc/sys/kernel/osrelease, "" when unknown.
	KernelRelease string
}

// DMABUF reports whether the node meets the documented conditions of the
// DMA-BUF path: NVIDIA's open GPU kernel modules (the proprietary ones do
// not export GPU memory as dma-buf; GPU Operator docs, "GPUDirect RDMA and
// GPUDirect Storage"), driver R515 or newer, and Linux 5.12 or newer
// (ib_umem_dmabuf, ibv_reg_dmabuf_mr). NCCL still asks CUDA at run time
// (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED); this is what the files prove.
func (g GPUDirect) DMABUF() bool {
	if !g.NvidiaLoaded || g.OpenKernelModule == nil || !*g.OpenKernelModule {
		return false
	}
	major, _, _ := strings.Cut(g.DriverVersion, ".")
	if v, err := strconv.Atoi(major); err != nil || v < 515 {
		return false
	}
	return KernelAtLeast(g.KernelRelease, 5, 12)
}

// Available reports GPUDirect RDMA through either path.
func (g GPUDirect) Available() bool { return g.PeerMem != "" || g.DMABUF() }

// KernelAtLeast compares a kernel release ("5.15.0-105-generic") with
// major.minor; false when it cannot be parsed.
func KernelAtLeast(release string, major, minor int) bool {
	a, rest, ok := strings.Cut(release, ".")
	if !ok {
		return false
	}
	b := rest
	if i := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		b = rest[:i]
	}
	ma, err1 := strconv.Atoi(a)
	mi, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// GPU is one NVIDIA GPU.
type GPU struct {
	// Index is the GPU's rank in PCI address order, the order nvidia-smi and
	// CUDA_DEVICE_ORDER=PCI_BUS_ID number them.
	Index int
	Class string
	// PCI is the function read by the same code as the NICs' (link speed and
	// width, usable bandwidth, AER).
	PCI   *PCIFunction
	Place PCIPlace
}

// RDMANIC is the PCI place of one RDMA device, for its relation to GPUs.
type RDMANIC struct {
	Device string
	Place  PCIPlace
}

// GPUState is the GPU side of the node.
type GPUState struct {
	GPUs []*GPU
	NICs []*RDMANIC
	// ACS maps each bridge between a GPU and a NIC to its ACS state.
	ACS       map[string]ACS
	IOMMU     IOMMU
	GPUDirect GPUDirect
	// VFIO are the PCI functions bound to vfio-pci (passed to virtual
	// machines or user-space drivers), whose isolation ACS provides;
	// VFIOUnreadable says why that list is unknown, "" when it was read
	// (no vfio-pci driver directory means none is bound).
	VFIO           []string
	VFIOUnreadable string
}

// Pair is a GPU with one NIC and their relation.
type Pair struct {
	GPU      *GPU
	NIC      *RDMANIC
	Relation PCIeRelation
}

// Closest returns, for each GPU, its nearest NICs (every NIC at the best
// relation, in NIC order); nil for a GPU when the node has no NIC.
func (s *GPUState) Closest(g *GPU) []Pair {
	var best []Pair
	for _, n := range s.NICs {
		r := Relate(g.Place, n.Place)
		if r == RelationUnknown {
			continue
		}
		switch {
		case len(best) == 0 || r < best[0].Relation:
			best = []Pair{{g, n, r}}
		case r == best[0].Relation:
			best = append(best, Pair{g, n, r})
		}
	}
	return best
}

// BestPossible is the nearest relation any GPU has to any NIC on the
// node: what the board allows.
func (s *GPUState) BestPossible() PCIeRelation {
	best := RelationUnknown
	for _, g := range s.GPUs {
		if c := s.Closest(g); len(c) > 0 && (best == RelationUnknown || c[0].Relation < best) {
			best = c[0].Relation
		}
	}
	return best
}

// PathACSRedirects lists the bridges on a GPU↔NIC path below the root
// complex (PIX, PXB) whose ACS redirects peer-to-peer traffic; false when
// the path crosses the root complex (ACS does not decide its route) or a
// bridge on it had no readable configuration space.
func PathACSRedirects(st *GPUState, p Pair) ([]string, bool) {
	if !p.Relation.Direct() {
		return nil, false
	}
	out := []string{}
	for _, b := range Bridges(p.GPU.Place, p.NIC.Place) {
		a, ok := st.ACS[b]
		if !ok {
			return nil, false
		}
		if a.Redirects() {
			out = append(out, b)
		}
	}
	return out, true
}
