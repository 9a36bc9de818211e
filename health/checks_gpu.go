package health

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/roce-exporter/roce_exporter/node"
)

// ReasonNoGPU is the skip reason of every GPU check on a node without
// NVIDIA GPUs.
const ReasonNoGPU = "no NVIDIA GPU on this node: GPU↔NIC checks do not apply"

// gpuState returns the node's GPU side, or records why the GPU checks
// cannot judge it.
func gpuState(e *env, r *results) (*node.GPUState, bool) {
	st := e.snap.Sources[node.SourceGPU]
	switch {
	case st == "":
		r.skip(SubjectNode, Textf("the gpu collector is disabled (--no-collector.gpu)"))
	case st == node.SourceAbsent || st == node.SourceOK && (e.snap.GPU == nil || len(e.snap.GPU.GPUs) == 0):
		r.skip(SubjectNode, Textf(ReasonNoGPU))
	case e.snap.GPU == nil:
		r.skip(SubjectNode, Textf("the GPUs could not be read (see roce_scrape_collector_success{collector=\"gpu\"})"))
	default:
		return e.snap.GPU, true
	}
	return nil, false
}

func gpuSubject(g *node.GPU) string { return fmt.Sprintf("gpu%d", g.Index) }

func gpuName(g *node.GPU) string {
	numa := ""
	if g.Place.NUMANode >= 0 {
		numa = fmt.Sprintf(", NUMA node %d", g.Place.NUMANode)
	}
	return fmt.Sprintf("GPU %d (%s%s)", g.Index, g.Place.Address(), numa)
}

// pathType names a GPU↔NIC relation in NCCL's words (node.Relate), and
// says nvidia-smi's where NCCL has one word for two.
func pathType(r node.PCIeRelation) Text {
	if r == node.RelationPHB {
		return Textf("PHB (NCCL's path type; nvidia-smi topo -m shows PHB or NODE)")
	}
	return Textf("%s (NCCL's path type)", r.String())
}

func nicNames(pairs []node.Pair) string {
	names := make([]string, len(pairs))
	for i, p := range pairs {
		names[i] = p.NIC.Device
	}
	return strings.Join(names, ", ")
}

const peermemFix = "load the peer-memory module of the NVIDIA driver: `modprobe nvidia-peermem` (permanent: `echo nvidia-peermem > /etc/modules-load.d/nvidia-peermem.conf`; with the GPU Operator: driver.rdma.enabled=true). It needs the RDMA stack loaded first (ib_core, mlx5_ib). Or use DMA-BUF instead: install NVIDIA's open GPU kernel modules (R515 or newer, e.g. `apt install nvidia-driver-535-open`) on Linux 5.12 or newer; NCCL then registers GPU memory without a peer-memory module. Check with `lsmod | grep peermem` and, in an NCCL_DEBUG=INFO log, GDRDMA on the NET/IB channels"

func checkGPUDirect(e *env, r *results) {
	st, ok := gpuState(e, r)
	if !ok {
		return
	}
	g := st.GPUDirect
	switch {
	case g.PeerMem != "":
		r.ok(SubjectNode, Textf("%s loaded: NICs can read and write GPU memory directly", g.PeerMem))
	case g.DMABUF():
		r.ok(SubjectNode, Textf("DMA-BUF path: NVIDIA open kernel module %s on Linux %s (no peer-memory module needed)", g.DriverVersion, g.KernelRelease))
	case !g.NvidiaLoaded:
		r.fail(SubjectNode, Textf("the nvidia kernel module is not loaded: no GPU memory can be registered with the NICs"),
			Textf("install and load the NVIDIA driver (`nvidia-smi` must list the GPUs), then: %s", Textf(peermemFix)))
	case g.OpenKernelModule == nil:
		r.warn(SubjectNode, Textf("neither nvidia_peermem nor nv_peer_mem is loaded, and whether DMA-BUF can work is unknown (/proc/driver/nvidia/version not read; driver %s)", orUnknown(g.DriverVersion)),
			Textf("if the exporter runs in a container, mount the host's /proc and pass --path.proc; otherwise %s", Textf(peermemFix)))
	default:
		why := Textf("the proprietary kernel module does not export GPU memory as DMA-BUF")
		if *g.OpenKernelModule {
			why = Textf("DMA-BUF needs driver R515+ on Linux 5.12+ (driver %s, Linux %s)", orUnknown(g.DriverVersion), orUnknown(g.KernelRelease))
		}
		r.fail(SubjectNode, Textf("GPUDirect RDMA unavailable: neither nvidia_peermem nor nv_peer_mem is loaded, and %s; NCCL stages every transfer through host memory", why),
			Textf(peermemFix))
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func checkACSOnPath(e *env, r *results) {
	st, ok := gpuState(e, r)
	if !ok {
		return
	}
	if len(st.NICs) == 0 {
		r.skip(SubjectNode, Textf("no RDMA NIC to pair the GPUs with"))
		return
	}
	for _, g := range st.GPUs {
		closest := st.Closest(g)
		if len(closest) == 0 {
			r.skip(gpuSubject(g), Textf("no RDMA NIC with a known PCIe place"))
			continue
		}
		p := closest[0]
		if !p.Relation.Direct() {
			r.skip(gpuSubject(g), Textf("%s's closest NIC (%s) is at %s: the path crosses the root complex, so ACS does not decide its route (see gpu_nic_affinity)", gpuName(g), nicNames(closest), pathType(p.Relation)))
			continue
		}
		bridges, known := node.PathACSRedirects(st, p)
		if !known {
			r.skip(gpuSubject(g), Textf("ACS of the switch ports between %s and %s unknown: their configuration space is readable only by root (run the exporter or doctor as root)", gpuName(g), p.NIC.Device))
			continue
		}
		if len(bridges) > 0 {
			r.fail(gpuSubject(g), Textf("ACS redirects peer-to-peer traffic on %s between %s and %s (%s): GPUDirect RDMA goes up to the root complex and back, at a fraction of the switch's bandwidth (or hangs with the IOMMU on)",
				strings.Join(bridges, ", "), gpuName(g), p.NIC.Device, p.Relation), acsFix(st, bridges))
			continue
		}
		r.ok(gpuSubject(g), Textf("ACS off on the switch ports between %s and %s (%s)", gpuName(g), p.NIC.Device, p.Relation))
	}
}

// acsNote says why ACS is on although the IOMMU is in passthrough, and so
// why fixing iommu_passthrough_or_off brings this finding.
const acsNote = "Linux turns ACS on at every boot whenever an IOMMU driver is active, in passthrough (iommu=pt) too, so it comes back after each reboot"

// acsFix turns ACS redirect off only where that is safe. ACS is what keeps
// peer-to-peer DMA under the IOMMU: with a translating IOMMU, redirect off
// lets a device's DMA reach a peer by its untranslated address (misrouted
// or corrupt transfers); with functions passed to virtual machines through
// vfio-pci, it breaks the isolation between them. So the setpci lines are
// given only when the IOMMU is off or in passthrough and nothing is bound
// to vfio-pci.
func acsFix(st *node.GPUState, bridges []string) Text {
	mode := st.IOMMU.Mode()
	switch {
	case mode != node.IOMMUOff && mode != node.IOMMUPassthrough:
		return Textf("do not turn ACS off while the IOMMU is %s: ACS keeps peer-to-peer DMA under the IOMMU's translation, and without it transfers between the GPU and the NIC go to untranslated addresses; first put the IOMMU in passthrough (see iommu_passthrough_or_off), then run the doctor again for the ACS commands", mode)
	case st.VFIOUnreadable != "":
		return Textf("whether functions are passed to virtual machines is unknown (%s): ACS isolates them, so check `ls /sys/bus/pci/drivers/vfio-pci` is empty (or has no such directory) before turning ACS off, then run the doctor again for the commands", st.VFIOUnreadable)
	case len(st.VFIO) > 0:
		return Textf("%s are bound to vfio-pci (passed to virtual machines or user-space drivers), and ACS is what isolates them: leave ACS on on this host, or move those functions off it first; then run the doctor again for the commands", strings.Join(st.VFIO, ", "))
	}
	cmds := make([]string, len(bridges))
	for i, b := range bridges {
		cmds[i] = "setpci -s " + b + " ECAP_ACS+0x6.w=0000"
	}
	return Textf("the IOMMU is %s and nothing is bound to vfio-pci, so turning ACS redirect off on those switch ports is safe: %s (as root, takes effect now; check with `lspci -vvv -s <port> | grep ACSCtl`, every flag must read '-'). %s: make it permanent with the kernel parameter `pci=disable_acs_redir=%s` in GRUB_CMDLINE_LINUX (Linux 5.1 or newer; then `update-grub` and a reboot), or turn ACS off in the BIOS (PCIe ACS / 'ACS Control: Disable')",
		mode, strings.Join(cmds, "; "), Textf(acsNote), strings.Join(bridges, ";"))
}

func checkIOMMU(e *env, r *results) {
	st, ok := gpuState(e, r)
	if !ok {
		return
	}
	m := st.IOMMU
	cmd := "none"
	if len(m.Cmdline) > 0 {
		cmd = strings.Join(m.Cmdline, " ")
	}
	const fix = "boot with the IOMMU in passthrough: add `iommu=pt` (Intel: `intel_iommu=on iommu=pt`, AMD: `amd_iommu=on iommu=pt`) to GRUB_CMDLINE_LINUX in /etc/default/grub, run `update-grub` (RHEL: `grub2-mkconfig -o /boot/grub2/grub.cfg`), reboot; check `cat /sys/kernel/iommu_groups/*/type` reads identity. ACS stays on in passthrough (" + acsNote + "): pcie_acs_off_on_gpu_nic_path then says how to turn it off"
	switch mode := m.Mode(); {
	case mode == node.IOMMUUnknown && len(m.Unreadable) > 0:
		// Unreadable is not "off": passing here would hide a translating
		// IOMMU behind a permission problem.
		r.warn(SubjectNode, Textf("cannot read the IOMMU state (%s): whether GPU↔NIC DMA is translated is unknown; kernel parameters: %s", strings.Join(m.Unreadable, "; "), cmd),
			Textf("let the exporter read /sys/class/iommu, /sys/bus/pci/devices/*/iommu_group and /sys/kernel/iommu_groups/*/type (in a container, mount the host's /sys), or check by hand: `ls /sys/class/iommu; cat /sys/kernel/iommu_groups/*/type` should read identity for every GPU and NIC"))
	case mode == node.IOMMUOff:
		r.ok(SubjectNode, Textf("no IOMMU active: GPU↔NIC DMA is not translated"))
	case mode == node.IOMMUPassthrough:
		r.ok(SubjectNode, Textf("IOMMU in passthrough for every GPU and NIC (kernel parameters: %s)", cmd))
	case mode == node.IOMMUTranslated:
		var which []string
		for _, a := range slices.Sorted(maps.Keys(m.GroupTypes)) {
			if t := m.GroupTypes[a]; t != "identity" {
				which = append(which, a+" ("+t+")")
			}
		}
		r.fail(SubjectNode, Textf("the IOMMU translates DMA of %s (kernel parameters: %s): every GPUDirect transfer is translated and peer-to-peer traffic is sent through the root complex", strings.Join(which, ", "), cmd), Textf(fix))
	default:
		r.warn(SubjectNode, Textf("an IOMMU is active (%s) but its domain type could not be read (kernels before 4.19 have no iommu_groups/*/type); kernel parameters: %s", strings.Join(m.Units, ", "), cmd),
			Textf("make sure the IOMMU runs in passthrough: %s", Textf(fix)))
	}
}

func checkGPUNICAffinity(e *env, r *results) {
	st, ok := gpuState(e, r)
	if !ok {
		return
	}
	if len(st.NICs) == 0 {
		r.skip(SubjectNode, Textf("no RDMA NIC to pair the GPUs with"))
		return
	}
	best := st.BestPossible()
	// NICs with no GPU at the best relation: the odd one out is usually
	// in the wrong slot.
	var lonely []string
	for _, n := range st.NICs {
		has := false
		for _, g := range st.GPUs {
			if node.Relate(g.Place, n.Place) == best {
				has = true
				break
			}
		}
		if !has {
			s := n.Device
			if n.Place.NUMANode >= 0 {
				s += fmt.Sprintf(" (NUMA node %d)", n.Place.NUMANode)
			}
			lonely = append(lonely, s)
		}
	}
	for _, g := range st.GPUs {
		closest := st.Closest(g)
		if len(closest) == 0 {
			r.skip(gpuSubject(g), Textf("no RDMA NIC with a known PCIe place"))
			continue
		}
		rel := closest[0].Relation
		switch {
		case rel.Direct():
			r.ok(gpuSubject(g), Textf("%s: closest NIC %s at %s", gpuName(g), nicNames(closest), pathType(rel)))
		case rel == best:
			r.ok(gpuSubject(g), Textf("%s: closest NIC %s at %s, the best this board's topology allows (no GPU shares a PCIe switch with a NIC)", gpuName(g), nicNames(closest), pathType(rel)))
		default:
			msg := Textf("%s: closest NIC %s at %s, while this board pairs GPUs with NICs at %s", gpuName(g), nicNames(closest), pathType(rel), best)
			if rel == node.RelationSYS {
				msg = Textf("%s; every transfer crosses the socket interconnect", msg)
			}
			if len(lonely) > 0 {
				msg = Textf("%s; NICs without a GPU at %s: %s", msg, best.String(), strings.Join(lonely, ", "))
			}
			r.fail(gpuSubject(g), msg,
				Textf("put the NIC back into the slot that shares a PCIe switch with this GPU (server's PCIe slot map; `nvidia-smi topo -m` must show PIX or PXB), or, until then, give jobs on this GPU that NIC explicitly: NCCL_IB_HCA and NCCL_CROSS_NIC follow the topology NCCL detects, so check its 'NET/IB' lines in an NCCL_DEBUG=INFO log"))
		}
	}
}

// gpuIdleSpeedGTs is the speed an idle NVIDIA GPU lowers its link to (Gen1),
// whatever its generation; under load it raises it to the top speed both
// ends support.
const gpuIdleSpeedGTs = 2.5

// nicLineRate is the line rate, in bits/s, of the fastest of the NICs: the
// sum of each device's active ports, else the plan's rate per port. It is
// what a GPU's link must carry for GPUDirect RDMA (or NCCL's staging through
// host memory) to keep that NIC at line rate.
func (e *env) nicLineRate(pairs []node.Pair) (float64, string) {
	var best float64
	var name string
	for _, p := range pairs {
		for _, d := range e.snap.Devices {
			if d.Name != p.NIC.Device {
				continue
			}
			var rate float64
			for _, pt := range d.Ports {
				if pt.Up() && pt.RateBitsPerSecond > 0 {
					rate += pt.RateBitsPerSecond
				}
			}
			if exp, ok := e.expectations(); rate == 0 && ok && exp.LinkRateGbps > 0 {
				rate = exp.LinkRateGbps * 1e9 * float64(len(d.Ports))
			}
			if rate > best {
				best, name = rate, d.Name
			}
		}
	}
	return best, name
}

// checkGPULink judges a GPU's link against what both its ends support. Its
// width is judged always: GPUs keep their lanes when idle. Its speed is not
// what it seems: an idle NVIDIA GPU drops to 2.5 GT/s and a busy one runs
// at the top speed both ends support, and sysfs does not say whether a GPU
// is busy. So speed is judged only where sysfs proves something: a port
// above the GPU that supports less than the GPU (a permanent cap, which
// fails when it cannot carry the closest NIC's line rate), and a link held
// between 2.5 GT/s and its top speed in two samples in a row (what a riser
// or retimer that fails equalisation at the top speed leaves, which warns).
// A GPU stuck at 2.5 GT/s cannot be told from an idle one.
func checkGPULink(e *env, r *results) {
	st, ok := gpuState(e, r)
	if !ok {
		return
	}
	for _, g := range st.GPUs {
		f := g.PCI
		if f == nil || f.CurrentWidth == 0 || f.MaxWidth == 0 {
			r.skip(gpuSubject(g), Textf("PCIe link width not readable"))
			continue
		}
		capS, capW := f.LinkCapability()
		if f.CurrentWidth < capW {
			r.fail(gpuSubject(g), Textf("%s trained at x%d of the x%d both its ends support: host↔GPU and GPUDirect RDMA bandwidth is cut to %d/%d", gpuName(g), f.CurrentWidth, capW, f.CurrentWidth, capW),
				Textf("reseat the GPU (or its baseboard / riser cable) and check the slot in the BIOS is not bifurcated; `lspci -vv -s %s | grep LnkSta` must show Width x%s; AER errors on the link (pcie_no_aer_errors, dmesg 'AER') point to a bad connector", g.Place.Address(), fmt.Sprint(capW)))
			continue
		}
		capNote := ""
		if f.UpstreamLimits() && capS > 0 {
			var judged bool
			if capNote, judged = judgeGPUCap(e, r, st, g, capS, capW); judged {
				continue
			}
		}
		msg := fmt.Sprintf("%s at x%d", gpuName(g), f.CurrentWidth)
		switch {
		case f.CurrentSpeedGTs <= 0 || capS <= 0:
		case f.CurrentSpeedGTs >= capS:
			msg += fmt.Sprintf(" %s GT/s, the top speed of both ends", num(f.CurrentSpeedGTs))
		case f.CurrentSpeedGTs <= gpuIdleSpeedGTs:
			msg += fmt.Sprintf(", %s of %s GT/s now (an idle GPU lowers its link speed to save power; sysfs cannot tell an idle GPU from one stuck at this speed, `nvidia-smi -q -d PCIE` under load can)", num(f.CurrentSpeedGTs), num(capS))
		default:
			prev := e.prevGPU(f.Address)
			if prev != nil && prev.CurrentSpeedGTs == f.CurrentSpeedGTs {
				r.warn(gpuSubject(g), Textf("%s held at %s GT/s in two samples in a row, below the %s GT/s both its ends support: an idle GPU drops to %s GT/s and a busy one runs at its top speed, so a link that stays in between failed to train higher", gpuName(g), num(f.CurrentSpeedGTs), num(capS), num(gpuIdleSpeedGTs)),
					Textf("confirm under load: `nvidia-smi -q -d PCIE -i %s` (Link Generation Current against Max) while a job runs; a link held low is a riser, retimer or cable that fails equalisation at the top speed, or a slot the BIOS set to a lower generation: reseat the GPU and its riser or cable, set the slot's link speed to Auto; AER errors on the link (pcie_no_aer_errors) point to the same connector", g.Place.Address()))
				continue
			}
			msg += fmt.Sprintf(", %s of %s GT/s now, between the idle and the top speed (a GPU changing speed, or a link held low: a second sample tells)", num(f.CurrentSpeedGTs), num(capS))
		}
		r.ok(gpuSubject(g), Textf("%s%s", msg, capNote))
	}
}

// judgeGPUCap judges a GPU whose port above supports less than the GPU: the
// link can never be faster than that port, whatever the load. That is the
// platform (an older server, a switch or riser of an older generation),
// and it matters where the capped link cannot carry the line rate of the
// NIC the GPU's network traffic goes through. It records a finding and
// says so (judged) when the cap is a problem; otherwise it returns the note
// the GPU's passing finding carries.
func judgeGPUCap(e *env, r *results, st *node.GPUState, g *node.GPU, capS float64, capW int) (note string, judged bool) {
	f := g.PCI
	capBits := node.PCIeBandwidth(capS, capW) * 8
	what := Textf("%s is capped at %s (%s Gb/s) by %s: the GPU supports %s", gpuName(g), linkText(capS, capW), gbps(capBits), upstreamText(f.Upstream), linkText(f.MaxSpeedGTs, f.MaxWidth))
	fix := Textf("the port above the GPU (a slot of an older PCIe generation, or a riser, retimer card or PCIe switch between them) supports less than the GPU: `lspci -vv -s %s | grep LnkCap` shows it; move the GPU to a slot, riser or switch of its own generation", f.Upstream.Address)
	need, nic := e.nicLineRate(st.Closest(g))
	switch {
	case need <= 0:
		r.warn(gpuSubject(g), Textf("%s; with no RDMA NIC rate to compare, whether it slows the network cannot be told", what), fix)
		return "", true
	case capBits < need:
		r.fail(gpuSubject(g), Textf("%s; less than the %s Gb/s of its closest NIC %s, so GPUDirect RDMA (and NCCL's staging through host memory) through this GPU cannot reach line rate", what, gbps(need), nic), fix)
		return "", true
	}
	return fmt.Sprintf("; capped at %s (%s Gb/s) by %s, where the GPU supports %s: enough for the %s Gb/s of its closest NIC %s", linkText(capS, capW), gbps(capBits), upstreamText(f.Upstream), linkText(f.MaxSpeedGTs, f.MaxWidth), gbps(need), nic), false
}
