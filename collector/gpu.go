package collector

import (
	"log/slog"
	"strconv"
	"strings"

	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/pipeline"
)

func init() { registerSource(node.SourceGPU, newGPUCollector) }

// The GPU↔NIC relation is exported for each GPU's closest NICs only, not
// the whole GPUs × NICs matrix: the questions operators ask ("which NIC is
// closest to GPU 3", "is every GPU's closest NIC at PIX or PXB") need only
// those, and the matrix grows with storage and management NICs (8 × 18 on
// common HGX nodes) where the closest set stays about one per GPU. The full
// matrix is in the doctor's text. The level gauge (one per GPU) makes the
// second question a plain comparison: roce_gpu_nic_closest_pcie_level <= 2.
var (
	gpuInfoDesc = newGaugeDesc(namespace+"_gpu_info",
		"An NVIDIA GPU on the PCI bus; gpu is its index in PCI address order (nvidia-smi, CUDA_DEVICE_ORDER=PCI_BUS_ID). Value is always 1.",
		"gpu", "pci_address", "numa_node", "pci_device_id")
	gpuLinkSpeedDesc = newGaugeDesc(namespace+"_gpu_pcie_link_speed_transfers_per_second",
		"GPU PCIe link speed per lane (kind=current|max).", "gpu", "pci_address", "kind")
	gpuLinkWidthDesc = newGaugeDesc(namespace+"_gpu_pcie_link_width_lanes",
		"GPU PCIe link width (kind=current|max).", "gpu", "pci_address", "kind")
	gpuNICTopologyDesc = newGaugeDesc(namespace+"_gpu_nic_topology",
		"The RDMA NICs closest to each GPU and their PCIe relation as NCCL classifies the path (PIX, PXB, PHB, SYS): NCCL has no NODE, so nvidia-smi topo -m's PHB and NODE are both PHB, and the two levels of a Broadcom PEX switch count as one, as in NCCL; one series per closest NIC (several on a tie). Value is always 1.",
		"gpu", "device", "relation")
	gpuNICLevelDesc = newGaugeDesc(namespace+"_gpu_nic_closest_pcie_level",
		"PCIe relation of each GPU to its closest RDMA NIC as NCCL classifies the path, as a number: 1 PIX, 2 PXB (both stay below the root complex: NCCL's default NCCL_NET_GDR_LEVEL uses GPUDirect RDMA for them), 3 PHB (through the CPU within one NUMA node: nvidia-smi's PHB and NODE alike), 5 SYS (across NUMA nodes); 4 (nvidia-smi's NODE) is never reported.",
		"gpu")
	gpuPathACSDesc = newGaugeDesc(namespace+"_gpu_nic_path_acs_redirect_bridges",
		"PCIe bridges on the switch path between each GPU and its closest NIC whose ACS redirects peer-to-peer traffic to the root complex (P2P request/completion redirect or egress control). Absent when the path crosses the root complex or a bridge's configuration space was unreadable (not root).",
		"gpu")
	nicNUMADesc = newGaugeDesc(namespace+"_nic_numa_node",
		"NUMA node of the RDMA device's PCI function; absent when the firmware reports none.", "device", "pci_address")
	iommuDesc = newGaugeDesc(namespace+"_iommu_info",
		"IOMMU mode for the GPUs and RDMA NICs (off, passthrough, translated, unknown) and the IOMMU parameters of the kernel command line. Value is always 1.",
		"mode", "cmdline")
	gpudirectDesc = newGaugeDesc(namespace+"_gpudirect_rdma_available",
		"1 if GPUDirect RDMA can work through the path: peermem (nvidia_peermem or nv_peer_mem loaded) or dmabuf (open GPU kernel module R515+ on Linux 5.12+); dmabuf is absent when /proc was not read.",
		"path")
)

type gpuCollector struct{}

func newGPUCollector(*Options, *slog.Logger) Collector { return gpuCollector{} }

func (gpuCollector) Update(col *pipeline.Collection, out *Sink) error {
	snap := col.Snapshot
	st := snap.GPU
	if st == nil || len(st.GPUs) == 0 {
		return nil // not a GPU node: no series at all
	}
	for _, g := range st.GPUs {
		idx := strconv.Itoa(g.Index)
		addr := g.Place.Address()
		numa := ""
		if g.Place.NUMANode >= 0 {
			numa = strconv.Itoa(g.Place.NUMANode)
		}
		devID := ""
		if g.PCI != nil {
			devID = g.PCI.DeviceID
		}
		out.emit(gpuInfoDesc, 1, idx, addr, numa, devID)
		if f := g.PCI; f != nil {
			if f.CurrentSpeedGTs > 0 {
				out.emit(gpuLinkSpeedDesc, f.CurrentSpeedGTs*1e9, idx, addr, "current")
			}
			if f.MaxSpeedGTs > 0 {
				out.emit(gpuLinkSpeedDesc, f.MaxSpeedGTs*1e9, idx, addr, "max")
			}
			if f.CurrentWidth > 0 {
				out.emit(gpuLinkWidthDesc, float64(f.CurrentWidth), idx, addr, "current")
			}
			if f.MaxWidth > 0 {
				out.emit(gpuLinkWidthDesc, float64(f.MaxWidth), idx, addr, "max")
			}
		}
		closest := st.Closest(g)
		if len(closest) == 0 {
			continue
		}
		for _, p := range closest {
			out.emit(gpuNICTopologyDesc, 1, idx, p.NIC.Device, p.Relation.String())
		}
		out.emit(gpuNICLevelDesc, float64(closest[0].Relation), idx)
		if n, ok := node.PathACSRedirects(st, closest[0]); ok {
			out.emit(gpuPathACSDesc, float64(len(n)), idx)
		}
	}
	for _, n := range st.NICs {
		if n.Place.NUMANode >= 0 {
			out.emit(nicNUMADesc, float64(n.Place.NUMANode), n.Device, n.Place.Address())
		}
	}
	out.emit(iommuDesc, 1, string(st.IOMMU.Mode()), strings.Join(st.IOMMU.Cmdline, " "))
	out.emit(gpudirectDesc, boolFloat(st.GPUDirect.PeerMem != ""), "peermem")
	if st.GPUDirect.OpenKernelModule != nil {
		out.emit(gpudirectDesc, boolFloat(st.GPUDirect.DMABUF()), "dmabuf")
	}
	return nil
}
