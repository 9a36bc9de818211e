package collector

import (
	"log/slog"
	"maps"
	"slices"

	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/pipeline"
)

func init() { registerSource(node.SourcePCIe, newPCIeCollector) }

var (
	pcieSpeedDesc = newGaugeDesc(namespace+"_pcie_link_speed_transfers_per_second",
		"PCIe link speed per lane: kind=current (trained) and max (the function's capability) of the NIC's link, upstream_max the capability of the port at its other end (root port or switch downstream port); the link trains to at most the lower of max and upstream_max.",
		"device", "pci_address", "kind")
	pcieWidthDesc = newGaugeDesc(namespace+"_pcie_link_width_lanes",
		"PCIe link width: kind=current (trained) and max (the function's capability) of the NIC's link, upstream_max the capability of the port at its other end (root port or switch downstream port).",
		"device", "pci_address", "kind")
	pcieBandwidthDesc = newGaugeDesc(namespace+"_pcie_bandwidth_bytes_per_second",
		"Usable PCIe bandwidth after line encoding (kind=current|max for this link, available for the slowest link up to the root port).",
		"device", "pci_address", "kind")
	pcieAERDesc = newCounterDesc(namespace+"_pcie_aer_errors_total",
		"PCIe Advanced Error Reporting totals of the NIC's link (severity=correctable|nonfatal|fatal), as counted at each end: end=function (the NIC's function) and end=upstream (the root port or switch downstream port it hangs off, which sees the errors of the other direction).",
		"device", "pci_address", "severity", "end")
)

// pcieCollector exports the PCIe links behind RDMA devices.
type pcieCollector struct{}

func newPCIeCollector(*Options, *slog.Logger) Collector { return pcieCollector{} }

func (pcieCollector) Update(col *pipeline.Collection, out *Sink) error {
	snap := col.Snapshot
	for _, addr := range slices.Sorted(maps.Keys(snap.PCI)) {
		f := snap.PCI[addr]
		for _, dev := range f.RDMADevices {
			emitPCIe(f, dev, out)
		}
	}
	return nil
}

func emitPCIe(f *node.PCIFunction, dev string, out *Sink) {
	a := f.Address
	if f.CurrentSpeedGTs > 0 {
		out.emit(pcieSpeedDesc, f.CurrentSpeedGTs*1e9, dev, a, "current")
	}
	if f.MaxSpeedGTs > 0 {
		out.emit(pcieSpeedDesc, f.MaxSpeedGTs*1e9, dev, a, "max")
	}
	if f.CurrentWidth > 0 {
		out.emit(pcieWidthDesc, float64(f.CurrentWidth), dev, a, "current")
	}
	if f.MaxWidth > 0 {
		out.emit(pcieWidthDesc, float64(f.MaxWidth), dev, a, "max")
	}
	if u := f.Upstream; u != nil {
		if u.MaxSpeedGTs > 0 {
			out.emit(pcieSpeedDesc, u.MaxSpeedGTs*1e9, dev, a, "upstream_max")
		}
		if u.MaxWidth > 0 {
			out.emit(pcieWidthDesc, float64(u.MaxWidth), dev, a, "upstream_max")
		}
	}
	if f.CurrentBandwidth > 0 {
		out.emit(pcieBandwidthDesc, f.CurrentBandwidth, dev, a, "current")
	}
	if f.MaxBandwidth > 0 {
		out.emit(pcieBandwidthDesc, f.MaxBandwidth, dev, a, "max")
	}
	if f.AvailableBandwidth > 0 {
		out.emit(pcieBandwidthDesc, f.AvailableBandwidth, dev, a, "available")
	}
	for _, sev := range node.AERSeverities {
		if v, ok := f.AER[sev]; ok {
			out.emit(pcieAERDesc, float64(v), dev, a, sev, "function")
		}
		if u := f.Upstream; u != nil {
			if v, ok := u.AER[sev]; ok {
				out.emit(pcieAERDesc, float64(v), dev, a, sev, "upstream")
			}
		}
	}
}
