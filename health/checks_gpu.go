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
		r.skip(SubjectNode, "the gpu collector is disabled (--no-collector.gpu)")
	case st == node.SourceAbsent || st == node.SourceOK && (e.snap.GPU == nil || len(e.snap.GPU.GPUs) == 0):
		r.skip(SubjectNode, ReasonNoGPU)
	case e.snap.GPU == nil:
		r.skip(SubjectNode, "the GPUs could not be read (see roce_scrape_collector_success{collector=\"gpu\"})")
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
		r.ok(SubjectNode, fmt.Sprintf("%s loaded: NICs can read and write GPU memory directly", g.PeerMem))
	case g.DMABUF():
		r.ok(SubjectNode, fmt.Sprintf("DMA-BUF path: NVIDIA open kernel module %s on Linux %s (no peer-memory module needed)", g.DriverVersion, g.KernelRelease))
	case !g.NvidiaLoaded:
		r.fail(SubjectNode, "the nvidia kernel module is not loaded: no GPU memory can be registered with the NICs",
			"install and load the NVIDIA driver (`nvidia-smi` must list the GPUs), then: "+peermemFix)
	case g.OpenKernelModule == nil:
		r.warn(SubjectNode, fmt.Sprintf("neither nvidia_peermem nor nv_peer_mem is loaded, and whether DMA-BUF can work is unknown (/proc/driver/nvidia/version not read; driver %s)", orUnknown(g.DriverVersion)),
			"if the exporter runs in a container, mount the host's /proc and pass --path.proc; otherwise "+peermemFix)
	default:
		why := "the proprietary kernel module does not export GPU memory as DMA-BUF"
		if *g.OpenKernelModule {
			why = fmt.Sprintf("DMA-BUF needs driver R515+ on Linux 5.12+ (driver %s, Linux %s)", orUnknown(g.DriverVersion), orUnknown(g.KernelRelease))
		}
		r.fail(SubjectNode, "GPUDirect RDMA unavailable: neither nvidia_peermem nor nv_peer_mem is loaded, and "+why+"; NCCL stages every transfer through host memory",
			peermemFix)
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
		r.skip(SubjectNode, "no RDMA NIC to pair the GPUs with")
		return
	}
	for _, g := range st.GPUs {
		closest := st.Closest(g)
		if len(closest) == 0 {
			r.skip(gpuSubject(g), "no RDMA NIC with a known PCIe place")
			continue
		}
		p := closest[0]
		if !p.Relation.Direct() {
			r.skip(gpuSubject(g), fmt.Sprintf("%s's closest NIC (%s) is at %s: the path crosses the root complex, so ACS does not decide its route (see gpu_nic_affinity)", gpuName(g), nicNames(closest), p.Relation))
			continue
		}
		bridges, known := node.PathACSRedirects(st, p)
		if !known {
			r.skip(gpuSubject(g), fmt.Sprintf("ACS of the switch ports between %s and %s unknown: their configuration space is readable only by root (run the exporter or doctor as root)", gpuName(g), p.NIC.Device))
			continue
		}
		if len(bridges) > 0 {
			var cmds []string
			for _, b := range bridges {
				cmds = append(cmds, "setpci -s "+b+" ECAP_ACS+0x6.w=0000")
			}
			r.fail(gpuSubject(g), fmt.Sprintf("ACS redirects peer-to-peer traffic on %s between %s and %s (%s): GPUDirect RDMA goes up to the root complex and back, at a fraction of the switch's bandwidth (or hangs with the IOMMU on)",
				strings.Join(bridges, ", "), gpuName(g), p.NIC.Device, p.Relation),
				"disable ACS on those switch ports: "+strings.Join(cmds, "; ")+" (as root; check with `lspci -vvv -s <port> | grep ACSCtl`, every flag must read '-'). It comes back at reboot: turn ACS off in the BIOS (PCIe ACS / 'ACS Control: Disable') or run the setpci lines from a boot-time unit, as NVIDIA's DGX OS does")
			continue
		}
		r.ok(gpuSubject(g), fmt.Sprintf("ACS off on the switch ports between %s and %s (%s)", gpuName(g), p.NIC.Device, p.Relation))
	}
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
	const fix = "boot with the IOMMU in passthrough: add `iommu=pt` (Intel: `intel_iommu=on iommu=pt`, AMD: `amd_iommu=on iommu=pt`) to GRUB_CMDLINE_LINUX in /etc/default/grub, run `update-grub` (RHEL: `grub2-mkconfig -o /boot/grub2/grub.cfg`), reboot; check `cat /sys/kernel/iommu_groups/*/type` reads identity"
	switch mode := m.Mode(); {
	case mode == node.IOMMUUnknown && len(m.Unreadable) > 0:
		// Unreadable is not "off": passing here would hide a translating
		// IOMMU behind a permission problem.
		r.warn(SubjectNode, fmt.Sprintf("cannot read the IOMMU state (%s): whether GPU↔NIC DMA is translated is unknown; kernel parameters: %s", strings.Join(m.Unreadable, "; "), cmd),
			"let the exporter read /sys/class/iommu, /sys/bus/pci/devices/*/iommu_group and /sys/kernel/iommu_groups/*/type (in a container, mount the host's /sys), or check by hand: `ls /sys/class/iommu; cat /sys/kernel/iommu_groups/*/type` should read identity for every GPU and NIC")
	case mode == node.IOMMUOff:
		r.ok(SubjectNode, "no IOMMU active: GPU↔NIC DMA is not translated")
	case mode == node.IOMMUPassthrough:
		r.ok(SubjectNode, fmt.Sprintf("IOMMU in passthrough for every GPU and NIC (kernel parameters: %s)", cmd))
	case mode == node.IOMMUTranslated:
		var which []string
		for _, a := range slices.Sorted(maps.Keys(m.GroupTypes)) {
			if t := m.GroupTypes[a]; t != "identity" {
				which = append(which, a+" ("+t+")")
			}
		}
		r.fail(SubjectNode, fmt.Sprintf("the IOMMU translates DMA of %s (kernel parameters: %s): every GPUDirect transfer is translated and peer-to-peer traffic is sent through the root complex", strings.Join(which, ", "), cmd), fix)
	default:
		r.warn(SubjectNode, fmt.Sprintf("an IOMMU is active (%s) but its domain type could not be read (kernels before 5.11 have no iommu_groups/*/type); kernel parameters: %s", strings.Join(m.Units, ", "), cmd),
			"make sure the IOMMU runs in passthrough: "+fix)
	}
}

func checkGPUNICAffinity(e *env, r *results) {
	st, ok := gpuState(e, r)
	if !ok {
		return
	}
	if len(st.NICs) == 0 {
		r.skip(SubjectNode, "no RDMA NIC to pair the GPUs with")
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
			r.skip(gpuSubject(g), "no RDMA NIC with a known PCIe place")
			continue
		}
		rel := closest[0].Relation
		switch {
		case rel.Direct():
			r.ok(gpuSubject(g), fmt.Sprintf("%s: closest NIC %s at %s", gpuName(g), nicNames(closest), rel))
		case rel == best:
			r.ok(gpuSubject(g), fmt.Sprintf("%s: closest NIC %s at %s, the best this board's topology allows (no GPU shares a PCIe switch with a NIC)", gpuName(g), nicNames(closest), rel))
		default:
			msg := fmt.Sprintf("%s: closest NIC %s at %s, while this board pairs GPUs with NICs at %s", gpuName(g), nicNames(closest), rel, best)
			if rel == node.RelationSYS {
				msg += "; every transfer crosses the socket interconnect"
			}
			if len(lonely) > 0 {
				msg += "; NICs without a GPU at " + best.String() + ": " + strings.Join(lonely, ", ")
			}
			r.fail(gpuSubject(g), msg,
				"put the NIC back into the slot that shares a PCIe switch with this GPU (server's PCIe slot map; `nvidia-smi topo -m` must show PIX or PXB), or, until then, give jobs on this GPU that NIC explicitly: NCCL_IB_HCA and NCCL_CROSS_NIC follow the topology NCCL detects, so check its 'NET/IB' lines in an NCCL_DEBUG=INFO log")
		}
	}
}

func checkGPULink(e *env, r *results) {
	st, ok := gpuState(e, r)
	if !ok {
		return
	}
	for _, g := range st.GPUs {
		f := g.PCI
		if f == nil || f.CurrentWidth == 0 || f.MaxWidth == 0 {
			r.skip(gpuSubject(g), "PCIe link width not readable")
			continue
		}
		if f.CurrentWidth < f.MaxWidth {
			r.fail(gpuSubject(g), fmt.Sprintf("%s trained at x%d of x%d: host↔GPU and GPUDirect RDMA bandwidth is cut to %d/%d", gpuName(g), f.CurrentWidth, f.MaxWidth, f.CurrentWidth, f.MaxWidth),
				"reseat the GPU (or its baseboard / riser cable) and check the slot in the BIOS is not bifurcated; `lspci -vv -s "+g.Place.Address()+" | grep LnkSta` must show Width x"+fmt.Sprint(f.MaxWidth)+"; AER errors on the link (roce_pcie / dmesg 'AER') point to a bad connector")
			continue
		}
		msg := fmt.Sprintf("%s at x%d", gpuName(g), f.CurrentWidth)
		if f.CurrentSpeedGTs > 0 && f.MaxSpeedGTs > 0 && f.CurrentSpeedGTs < f.MaxSpeedGTs {
			// NVIDIA GPUs drop their link speed when idle to save power and
			// raise it under load; only the width says the link is bad.
			msg += fmt.Sprintf(", %g of %g GT/s now (an idle GPU lowers its link speed to save power)", f.CurrentSpeedGTs, f.MaxSpeedGTs)
		} else if f.CurrentSpeedGTs > 0 {
			msg += fmt.Sprintf(" %g GT/s", f.CurrentSpeedGTs)
		}
		r.ok(gpuSubject(g), msg)
	}
}
