package health

import (
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/reader"
)

var gpuChecks = []string{"gpudirect_rdma_available", "pcie_acs_off_on_gpu_nic_path", "iommu_passthrough_or_off", "gpu_nic_affinity", "gpu_pcie_link_not_degraded"}

// gpuFixture reads a GPU scenario with its /proc, as the exporter does with
// --path.proc.
func gpuFixture(t *testing.T, scenario string) *node.Snapshot {
	t.Helper()
	base := filepath.Join("..", "collector", "testdata", scenario)
	r, err := reader.New(reader.Options{
		SysPath: filepath.Join(base, "sys"), DevPath: filepath.Join(base, "dev"), ProcPath: filepath.Join(base, "proc"),
		Sources: reader.SourceNames(), Timeout: 5 * time.Second, ReplayDir: filepath.Join(base, "replay"),
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r.Read().Snapshot
}

// byCheck keeps the findings of the GPU checks that are not ok, as
// "id subject status".
func gpuVerdicts(fs []Finding) map[string]bool {
	out := map[string]bool{}
	for _, f := range fs {
		for _, id := range gpuChecks {
			if f.ID == id && f.Status != StatusOK {
				out[f.ID+" "+f.Subject+" "+string(f.Status)] = true
			}
		}
	}
	return out
}

func TestGPUChecksHealthyDGX(t *testing.T) {
	fs := Run(gpuFixture(t, "dgx-h100-8gpu-8nic"), nil, "")
	checkInvariants(t, fs)
	if v := gpuVerdicts(fs); len(v) != 0 {
		t.Errorf("healthy DGX H100: %v\n%s", v, dump(fs))
	}
	for _, id := range gpuChecks {
		if _, ok := find(fs, id, "node"); !ok {
			if _, ok := find(fs, id, "gpu0"); !ok {
				t.Errorf("%s: no finding", id)
			}
		}
	}
}

// The degraded twin fails exactly its four faults, each on its subject.
func TestGPUChecksDegradedDGX(t *testing.T) {
	fs := Run(gpuFixture(t, "dgx-h100-degraded"), nil, "")
	checkInvariants(t, fs)
	want := map[string]bool{
		"gpudirect_rdma_available node fail":        true,
		"pcie_acs_off_on_gpu_nic_path gpu2 fail":    true,
		"pcie_acs_off_on_gpu_nic_path gpu3 skipped": true, // its NIC crosses the root complex
		"gpu_nic_affinity gpu3 fail":                true,
		"gpu_pcie_link_not_degraded gpu5 fail":      true,
	}
	got := gpuVerdicts(fs)
	for k := range want {
		if !got[k] {
			t.Errorf("missing %q", k)
		}
	}
	for k := range got {
		if !want[k] {
			t.Errorf("unexpected %q", k)
		}
	}
	if f, _ := find(fs, "gpu_nic_affinity", "gpu3"); !strings.Contains(f.Message, "mlx5_3 (NUMA node 1)") {
		t.Errorf("affinity message should name the NIC out of place: %s", f.Message)
	}
	// Its closest NICs are on other host bridges of its socket: nvidia-smi's
	// NODE, NCCL's PHB, and the message says whose word it uses.
	if f, _ := find(fs, "gpu_nic_affinity", "gpu3"); !strings.Contains(f.Message, "closest NIC mlx5_0, mlx5_1, mlx5_2 at PHB (NCCL's path type; nvidia-smi topo -m shows PHB or NODE)") {
		t.Errorf("affinity message vocabulary: %s", f.Message)
	}
	// GPU 5's x8 link came with AER errors, judged on the GPU as on a NIC.
	if f, _ := find(fs, "pcie_no_aer_errors", "gpu5"); f.Status != StatusWarn || !strings.Contains(f.Message, "on 0000:c3:00.0: 412 correctable since boot") {
		t.Errorf("GPU 5 AER: %+v", f)
	}
	if f, _ := find(fs, "pcie_acs_off_on_gpu_nic_path", "gpu2"); !strings.Contains(f.Fix, "setpci -s 0000:4e:00.0 ECAP_ACS+0x6.w=0000") {
		t.Errorf("ACS fix: %s", f.Fix)
	}
}

// A node without GPUs: every GPU check skips with one line.
func TestGPUChecksNoGPU(t *testing.T) {
	fs := Run(gpuFixture(t, "mlx5-8x400g-healthy"), nil, "")
	for _, id := range gpuChecks {
		n := 0
		for _, f := range fs {
			if f.ID == id {
				n++
				if f.Status != StatusSkipped || f.Message != ReasonNoGPU || f.Subject != SubjectNode {
					t.Errorf("%s: %+v", id, f)
				}
			}
		}
		if n != 1 {
			t.Errorf("%s: %d findings, want one skip line", id, n)
		}
	}
}

func mutateGPU(t *testing.T, f func(st *node.GPUState)) []Finding {
	t.Helper()
	s := gpuFixture(t, "dgx-h100-8gpu-8nic")
	f(s.GPU)
	fs := Run(s, nil, "")
	checkInvariants(t, fs)
	return fs
}

func status(t *testing.T, fs []Finding, id, subject string) Finding {
	t.Helper()
	f, ok := find(fs, id, subject)
	if !ok {
		t.Fatalf("no %s finding for %s:\n%s", id, subject, dump(fs))
	}
	return f
}

func TestIOMMUCheck(t *testing.T) {
	fs := mutateGPU(t, func(st *node.GPUState) { st.IOMMU.GroupTypes["0000:1b:00.0"] = "DMA-FQ" })
	if f := status(t, fs, "iommu_passthrough_or_off", "node"); f.Status != StatusFail || !strings.Contains(f.Message, "0000:1b:00.0 (DMA-FQ)") || !strings.Contains(f.Fix, "iommu=pt") {
		t.Errorf("translated: %+v", f)
	}
	fs = mutateGPU(t, func(st *node.GPUState) { st.IOMMU.GroupTypes = nil })
	if f := status(t, fs, "iommu_passthrough_or_off", "node"); f.Status != StatusWarn {
		t.Errorf("types unreadable: %+v", f)
	}
	// /sys/class/iommu could not be read: nothing read is no proof of no
	// IOMMU, so it is not a pass.
	fs = mutateGPU(t, func(st *node.GPUState) {
		st.IOMMU = node.IOMMU{Unreadable: []string{"/sys/class/iommu: permission denied"}}
	})
	if f := status(t, fs, "iommu_passthrough_or_off", "node"); f.Status != StatusWarn || !strings.Contains(f.Message, "cannot read") ||
		!strings.Contains(f.Message, "/sys/class/iommu: permission denied") {
		t.Errorf("unreadable IOMMU state: %+v", f)
	}
	fs = mutateGPU(t, func(st *node.GPUState) { st.IOMMU = node.IOMMU{} })
	if f := status(t, fs, "iommu_passthrough_or_off", "node"); f.Status != StatusOK {
		t.Errorf("no IOMMU: %+v", f)
	}
}

func TestGPUDirectCheck(t *testing.T) {
	yes := true
	fs := mutateGPU(t, func(st *node.GPUState) {
		st.GPUDirect.PeerMem, st.GPUDirect.OpenKernelModule = "", &yes
	})
	if f := status(t, fs, "gpudirect_rdma_available", "node"); f.Status != StatusOK || !strings.Contains(f.Message, "DMA-BUF") {
		t.Errorf("open module on 5.15: %+v", f)
	}
	fs = mutateGPU(t, func(st *node.GPUState) { st.GPUDirect.PeerMem, st.GPUDirect.OpenKernelModule = "", nil })
	if f := status(t, fs, "gpudirect_rdma_available", "node"); f.Status != StatusWarn || !strings.Contains(f.Fix, "--path.proc") {
		t.Errorf("/proc unread: %+v", f)
	}
	fs = mutateGPU(t, func(st *node.GPUState) { st.GPUDirect = node.GPUDirect{} })
	if f := status(t, fs, "gpudirect_rdma_available", "node"); f.Status != StatusFail || !strings.Contains(f.Message, "nvidia kernel module is not loaded") {
		t.Errorf("no driver: %+v", f)
	}
	fs = mutateGPU(t, func(st *node.GPUState) { st.GPUDirect.PeerMem = "nv_peer_mem" })
	if f := status(t, fs, "gpudirect_rdma_available", "node"); f.Status != StatusOK {
		t.Errorf("legacy nv_peer_mem: %+v", f)
	}
}

func TestACSCheckUnknownWithoutPrivilege(t *testing.T) {
	fs := mutateGPU(t, func(st *node.GPUState) { delete(st.ACS, "0000:17:01.0") })
	if f := status(t, fs, "pcie_acs_off_on_gpu_nic_path", "gpu0"); f.Status != StatusSkipped || !strings.Contains(f.Message, "root") {
		t.Errorf("unreadable: %+v", f)
	}
	// ACS on a root port does not matter to a pair below one switch.
	fs = mutateGPU(t, func(st *node.GPUState) {
		a := st.ACS["0000:15:01.0"]
		a.Control = node.ACSRequestRedirect | node.ACSCompletionRedirect
		st.ACS["0000:15:01.0"] = a
	})
	if f := status(t, fs, "pcie_acs_off_on_gpu_nic_path", "gpu0"); f.Status != StatusOK {
		t.Errorf("root port ACS: %+v", f)
	}
}

func TestAffinityBestTheBoardAllows(t *testing.T) {
	// A PCIe server without switches: every GPU and NIC on its own root
	// port of one host bridge; PHB is the best there is.
	fs := mutateGPU(t, func(st *node.GPUState) {
		for i, g := range st.GPUs {
			g.Place = node.PCIPlace{Host: "pci0000:00", Path: []string{"0000:00:0" + string(rune('1'+i)) + ".0", g.Place.Address()}, NUMANode: 0}
		}
		for i, n := range st.NICs {
			n.Place = node.PCIPlace{Host: "pci0000:00", Path: []string{"0000:00:1" + string(rune('1'+i)) + ".0", n.Place.Address()}, NUMANode: 0}
		}
	})
	if f := status(t, fs, "gpu_nic_affinity", "gpu0"); f.Status != StatusOK || !strings.Contains(f.Message, "best this board") {
		t.Errorf("PHB board: %+v", f)
	}
	// Every NIC on the other socket from GPU 0.
	fs = mutateGPU(t, func(st *node.GPUState) {
		for _, n := range st.NICs[:4] {
			n.Place = node.PCIPlace{Host: "pci0000:e4", Path: []string{"0000:e4:01.0", n.Place.Address()}, NUMANode: 1}
		}
	})
	if f := status(t, fs, "gpu_nic_affinity", "gpu0"); f.Status != StatusFail || !strings.Contains(f.Message, "SYS") {
		t.Errorf("other socket: %+v", f)
	}
}

func TestGPULinkSpeedIdleIsNotDegraded(t *testing.T) {
	fs := mutateGPU(t, func(st *node.GPUState) { st.GPUs[1].PCI.CurrentSpeedGTs = 2.5 })
	if f := status(t, fs, "gpu_pcie_link_not_degraded", "gpu1"); f.Status != StatusOK || !strings.Contains(f.Message, "idle") {
		t.Errorf("idle GPU at Gen1: %+v", f)
	}
	fs = mutateGPU(t, func(st *node.GPUState) { st.GPUs[1].PCI.CurrentWidth = 4 })
	if f := status(t, fs, "gpu_pcie_link_not_degraded", "gpu1"); f.Status != StatusFail {
		t.Errorf("x4: %+v", f)
	}
}

// mutateGPUTwice is mutateGPU with a previous sample 10s before, edited by
// prev, the current one by cur.
func mutateGPUTwice(t *testing.T, prev, cur func(st *node.GPUState)) []Finding {
	t.Helper()
	s := gpuFixture(t, "dgx-h100-8gpu-8nic")
	p := cloneSnapshot(t, s)
	p.Time = s.Time.Add(-10 * time.Second)
	prev(p.GPU)
	cur(s.GPU)
	s.Previous = p
	fs := Run(s, nil, "")
	checkInvariants(t, fs)
	return fs
}

// gpuIn puts GPU i (an H100, Gen5 x16) below a port of the given capability,
// its link trained at the most that port allows.
func gpuIn(i int, speed float64, width int) func(st *node.GPUState) {
	return func(st *node.GPUState) {
		f := st.GPUs[i].PCI
		f.Upstream.MaxSpeedGTs, f.Upstream.MaxWidth = speed, width
		f.CurrentSpeedGTs, f.CurrentWidth = speed, width
	}
}

// A GPU's speed is judged where sysfs proves a limit: the port above it
// supports less (a permanent cap, judged against its NIC's line rate), or the
// link stays between the idle and the top speed. An idle GPU at 2.5 GT/s in
// a slot that supports more is not a finding.
func TestGPULinkAgainstBothEnds(t *testing.T) {
	fs := mutateGPU(t, func(st *node.GPUState) {
		gpuIn(1, 16, 16)(st)
		st.GPUs[1].PCI.MaxSpeedGTs = 16 // an A100: Gen4 itself
		st.GPUs[1].PCI.CurrentSpeedGTs = 2.5
	})
	if f := status(t, fs, "gpu_pcie_link_not_degraded", "gpu1"); f.Status != StatusOK || !strings.Contains(f.Message, "2.5 of 16 GT/s now (an idle GPU") {
		t.Errorf("idle Gen4 GPU at Gen1 in a Gen4 slot: %+v", f)
	}

	fs = mutateGPU(t, gpuIn(1, 8, 16))
	f := status(t, fs, "gpu_pcie_link_not_degraded", "gpu1")
	if f.Status != StatusFail {
		t.Errorf("GPU behind a Gen3 port: %+v", f)
	}
	for _, want := range []string{"capped at 8 GT/s x16 (126 Gb/s) by the port above it, 0000:42:00.0 (8 GT/s x16)", "the GPU supports 32 GT/s x16", "400 Gb/s of its closest NIC mlx5_1"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("message %q lacks %q", f.Message, want)
		}
	}
	if !strings.Contains(f.Fix, "lspci -vv -s 0000:42:00.0 | grep LnkCap") || !strings.Contains(f.Fix, "riser") {
		t.Errorf("fix: %s", f.Fix)
	}

	// Gen5 GPU in a Gen4 slot: 252 Gb/s does not carry a 400G NIC, does
	// carry a 200G one.
	fs = mutateGPU(t, gpuIn(1, 16, 16))
	if f := status(t, fs, "gpu_pcie_link_not_degraded", "gpu1"); f.Status != StatusFail {
		t.Errorf("Gen5 GPU in a Gen4 slot, 400G NIC: %+v", f)
	}
	s := gpuFixture(t, "dgx-h100-8gpu-8nic")
	gpuIn(1, 16, 16)(s.GPU)
	for _, d := range s.Devices {
		for _, p := range d.Ports {
			p.RateBitsPerSecond = 200e9
		}
	}
	fs = Run(s, nil, "")
	if f := status(t, fs, "gpu_pcie_link_not_degraded", "gpu1"); f.Status != StatusOK || !strings.Contains(f.Message, "enough for the 200 Gb/s of its closest NIC mlx5_1") {
		t.Errorf("Gen5 GPU in a Gen4 slot, 200G NIC: %+v", f)
	}

	// Capped, and held below even the cap in two samples: the cap is fine
	// for a 200G NIC, the link below it is not.
	heldUnderCap := func(st *node.GPUState) {
		gpuIn(1, 16, 16)(st)
		st.GPUs[1].PCI.CurrentSpeedGTs = 8
	}
	s = gpuFixture(t, "dgx-h100-8gpu-8nic")
	p := cloneSnapshot(t, s)
	p.Time = s.Time.Add(-10 * time.Second)
	for _, snap := range []*node.Snapshot{s, p} {
		heldUnderCap(snap.GPU)
		for _, d := range snap.Devices {
			for _, pt := range d.Ports {
				pt.RateBitsPerSecond = 200e9
			}
		}
	}
	s.Previous = p
	fs = Run(s, nil, "")
	if f := status(t, fs, "gpu_pcie_link_not_degraded", "gpu1"); f.Status != StatusWarn || !strings.Contains(f.Message, "held at 8 GT/s in two samples in a row, below the 16 GT/s both its ends support") {
		t.Errorf("held at 8 GT/s below a 16 GT/s cap: %+v", f)
	}

	// An x16 GPU in an x8 port is capped, not downtrained: no reseat.
	fs = mutateGPU(t, gpuIn(2, 32, 8))
	if f := status(t, fs, "gpu_pcie_link_not_degraded", "gpu2"); f.Status != StatusFail || !strings.Contains(f.Message, "capped at 32 GT/s x8") || strings.Contains(f.Fix, "reseat") {
		t.Errorf("x16 GPU in an x8 port: %+v", f)
	}

	// Held at 16 GT/s on a Gen5 link: once is a GPU changing speed, twice in
	// a row is a link that did not train higher.
	held := func(st *node.GPUState) { st.GPUs[4].PCI.CurrentSpeedGTs = 16 }
	fs = mutateGPU(t, held)
	if f := status(t, fs, "gpu_pcie_link_not_degraded", "gpu4"); f.Status != StatusOK || !strings.Contains(f.Message, "a second sample tells") {
		t.Errorf("one sample at 16 GT/s: %+v", f)
	}
	fs = mutateGPUTwice(t, held, held)
	f = status(t, fs, "gpu_pcie_link_not_degraded", "gpu4")
	if f.Status != StatusWarn || !strings.Contains(f.Message, "held at 16 GT/s in two samples in a row, below the 32 GT/s both its ends support") || !strings.Contains(f.Fix, "nvidia-smi -q -d PCIE -i 0000:9d:00.0") {
		t.Errorf("two samples at 16 GT/s: %+v", f)
	}
	fs = mutateGPUTwice(t, func(*node.GPUState) {}, held)
	if f := status(t, fs, "gpu_pcie_link_not_degraded", "gpu4"); f.Status != StatusOK {
		t.Errorf("32 then 16 GT/s (slowing down): %+v", f)
	}
	fs = mutateGPUTwice(t, func(st *node.GPUState) { st.GPUs[4].PCI.CurrentSpeedGTs = 2.5 }, func(st *node.GPUState) { st.GPUs[4].PCI.CurrentSpeedGTs = 2.5 })
	if f := status(t, fs, "gpu_pcie_link_not_degraded", "gpu4"); f.Status != StatusOK || !strings.Contains(f.Message, "idle") {
		t.Errorf("idle in both samples: %+v", f)
	}
}

// The GPU's link errors count at both ends too: the GPU and the switch
// port above it.
func TestGPUAERBothEnds(t *testing.T) {
	fs := mutateGPU(t, func(st *node.GPUState) { st.GPUs[3].PCI.Upstream.AER["correctable"] = 88 })
	if f := status(t, fs, "pcie_no_aer_errors", "gpu3"); f.Status != StatusWarn || !strings.Contains(f.Message, "on the port above it, 0000:60:00.0: 88 correctable since boot") {
		t.Errorf("errors at the switch port above GPU 3: %+v", f)
	}
	if f := status(t, fs, "pcie_no_aer_errors", "gpu2"); f.Status != StatusOK {
		t.Errorf("GPU 2: %+v", f)
	}
	fs = mutateGPUTwice(t, func(*node.GPUState) {}, func(st *node.GPUState) { st.GPUs[3].PCI.AER["nonfatal"] = 1 })
	if f := status(t, fs, "pcie_no_aer_errors", "gpu3"); f.Status != StatusFail || !strings.Contains(f.Message, "on 0000:61:00.0: 1 new nonfatal") || !strings.Contains(f.Fix, "GPU") {
		t.Errorf("new non-fatal error on GPU 3: %+v", f)
	}
}

// Turning ACS redirect off is safe only with an IOMMU that does not
// translate and no function passed to a VM: otherwise the fix says why
// not and gives no setpci line.
func TestACSFixOnlyWhereSafe(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutate  func(*node.GPUState)
		setpci  bool
		mustSay string
	}{
		{"passthrough, no vfio", func(*node.GPUState) {}, true, "pci=disable_acs_redir=0000:4e:01.0;0000:51:00.0;0000:4e:00.0"},
		{"translating IOMMU", func(st *node.GPUState) {
			st.IOMMU = node.IOMMU{Units: []string{"dmar0"}, GroupTypes: map[string]string{"0000:51:00.0": "DMA-FQ"}}
		}, false, "do not turn ACS off while the IOMMU is translated"},
		{"vfio-bound function", func(st *node.GPUState) { st.VFIO = []string{"0000:9a:00.1"} }, false, "0000:9a:00.1 are bound to vfio-pci"},
		{"vfio unknown", func(st *node.GPUState) { st.VFIOUnreadable = "/sys/bus/pci/drivers/vfio-pci: permission denied" }, false, "ls /sys/bus/pci/drivers/vfio-pci"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := gpuFixture(t, "dgx-h100-degraded")
			tc.mutate(snap.GPU)
			f, _ := find(Run(snap, nil, ""), "pcie_acs_off_on_gpu_nic_path", "gpu2")
			if f.Status != StatusFail {
				t.Fatalf("gpu2: %s %s", f.Status, f.Message)
			}
			if got := strings.Contains(f.Fix, "setpci"); got != tc.setpci {
				t.Errorf("setpci in the fix = %v, want %v: %s", got, tc.setpci, f.Fix)
			}
			if !strings.Contains(f.Fix, tc.mustSay) {
				t.Errorf("fix lacks %q: %s", tc.mustSay, f.Fix)
			}
			if tc.setpci && !strings.Contains(f.Fix, "iommu=pt") {
				t.Errorf("fix does not say ACS returns with iommu=pt: %s", f.Fix)
			}
		})
	}
}
