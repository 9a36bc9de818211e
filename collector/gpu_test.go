package collector

import (
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
)

// A node without NVIDIA GPUs gets no GPU series; a DGX H100 gets one
// closest-NIC series per GPU, bounded by GPUs rather than GPUs × NICs.
func TestGPUCollectorSeries(t *testing.T) {
	e, _ := newTestExporter(t, testConfig(writeNode(t, sysfixture.HealthyCX7(2)), "rdma", "gpu"))
	text := scrape(t, e)
	for _, family := range []string{"roce_gpu_", "roce_nic_numa_node", "roce_iommu_info", "roce_gpudirect_rdma_available"} {
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, family) {
				t.Errorf("node without GPUs: %s", line)
			}
		}
	}

	n := sysfixture.HealthyCX7(8)
	sysfixture.WithGPUs(&n)
	e, _ = newTestExporter(t, testConfig(writeNode(t, n), "rdma", "gpu"))
	text = scrape(t, e)
	if got := len(series(text, "roce_gpu_nic_topology")); got != 8 {
		t.Errorf("%d topology series on 8 GPUs × 8 NICs, want 8 (closest only)", got)
	}
	mustSeries(t, text, "roce_gpu_nic_topology", `gpu="3"`, `device="mlx5_3"`, `relation="PXB"`)
	if v := value(t, mustSeries(t, text, "roce_gpu_nic_closest_pcie_level", `gpu="3"`)); v != "2" {
		t.Errorf("GPU 3 level %s, want 2 (PXB)", v)
	}
	if v := value(t, mustSeries(t, text, "roce_gpu_nic_path_acs_redirect_bridges", `gpu="0"`)); v != "0" {
		t.Errorf("ACS bridges %s, want 0", v)
	}
	if v := value(t, mustSeries(t, text, "roce_nic_numa_node", `device="mlx5_5"`)); v != "1" {
		t.Errorf("mlx5_5 NUMA %s, want 1", v)
	}
	mustSeries(t, text, "roce_gpudirect_rdma_available", `path="peermem"`)
	// No /proc for a copied tree: whether DMA-BUF works is unknown, so absent.
	if s := series(text, "roce_gpudirect_rdma_available", `path="dmabuf"`); len(s) != 0 {
		t.Errorf("dmabuf without /proc: %v", s)
	}
	mustSeries(t, text, "roce_iommu_info", `mode="passthrough"`)
}

// A node without NVIDIA GPUs gives the gpu collector nothing to do: no
// series, and not a failing collector (the overview counts failing ones).
func TestGPUCollectorWithoutGPUsIsNotFailing(t *testing.T) {
	e, _ := newTestExporter(t, fixtureConfig("mlx5-8x400g-healthy", "gpu"))
	out := scrape(t, e)
	if v := value(t, mustSeries(t, out, "roce_scrape_collector_success", `collector="gpu"`)); v != "1" {
		t.Errorf("gpu collector success = %s on a node without GPUs", v)
	}
	if s := series(out, "roce_gpu_info"); len(s) != 0 {
		t.Errorf("gpu series without GPUs: %q", s)
	}
}
