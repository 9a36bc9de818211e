package node

import (
	"encoding/binary"
	"slices"
	"testing"
)

func place(t *testing.T, dir string, numa int) PCIPlace {
	t.Helper()
	p, err := ParsePCIPlace(dir, numa)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRelate checks every relation NCCL has on one tree: a switch with a
// GPU and a NIC on two downstream ports (PIX), a GPU one switch further down
// (PXB), another root port of the same host bridge (PHB), another host
// bridge of the same socket (nvidia-smi's NODE, PHB to NCCL) and the other
// socket (SYS).
func TestRelate(t *testing.T) {
	const sw = "/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0"
	gpuPIX := place(t, sw+"/0000:19:00.0/0000:1a:00.0", 0)
	nic := place(t, sw+"/0000:19:01.0/0000:1b:00.0", 0)
	gpuPXB := place(t, sw+"/0000:19:02.0/0000:1c:00.0/0000:1d:00.0/0000:1e:00.0", 0)
	phb := place(t, "/sys/devices/pci0000:17/0000:17:02.0/0000:30:00.0", 0)
	node := place(t, "/sys/devices/pci0000:38/0000:38:01.0/0000:39:00.0", 0)
	sys := place(t, "/sys/devices/pci0000:97/0000:97:01.0/0000:98:00.0", 1)
	direct := place(t, "/sys/devices/pci0000:17/0000:17:03.0/0000:31:00.0", -1)
	noNUMA := place(t, "/sys/devices/pci0000:a0/0000:a0:01.0/0000:a1:00.0", -1)
	for _, c := range []struct {
		name string
		a, b PCIPlace
		want PCIeRelation
	}{
		{"same switch", gpuPIX, nic, RelationPIX},
		{"same switch reversed", nic, gpuPIX, RelationPIX},
		{"two switches", gpuPXB, nic, RelationPXB},
		{"host bridge", gpuPIX, phb, RelationPHB},
		{"directly on root ports", direct, phb, RelationPHB},
		{"same socket, other host bridge", gpuPIX, node, RelationPHB},
		{"other socket", gpuPIX, sys, RelationSYS},
		{"unknown numa is not another socket", noNUMA, sys, RelationPHB},
		{"empty place", PCIPlace{}, nic, RelationUnknown},
	} {
		if got := Relate(c.a, c.b); got != c.want {
			t.Errorf("%s: Relate = %v, want %v", c.name, got, c.want)
		}
	}
	if got, want := Bridges(gpuPIX, nic), []string{"0000:18:00.0", "0000:19:00.0", "0000:19:01.0"}; !slices.Equal(got, want) {
		t.Errorf("Bridges = %v, want %v", got, want)
	}
	// Both PHB to NCCL; the host bridge tells them apart where one GPU must be picked.
	if !SameHostBridge(gpuPIX, phb) || SameHostBridge(gpuPIX, node) || SameHostBridge(PCIPlace{}, PCIPlace{}) {
		t.Error("SameHostBridge: pci0000:17 twice only")
	}
	if !RelationPXB.Direct() || RelationPHB.Direct() {
		t.Error("Direct: PIX/PXB only")
	}
}

func TestParsePCIPlaceErrors(t *testing.T) {
	for _, dir := range []string{"/sys/devices/virtual/net/lo", "/sys/devices/pci0000:00", "/sys/devices/pci0000:00/0000:00:01.0/usb1"} {
		if _, err := ParsePCIPlace(dir, 0); err == nil {
			t.Errorf("%s: want an error", dir)
		}
	}
}

// config builds a 4096-byte configuration space with the given extended
// capabilities (id, control register) chained from 0x100.
func config(caps ...[2]uint16) []byte {
	b := make([]byte, 4096)
	off := 0x100
	for i, c := range caps {
		next := 0
		if i < len(caps)-1 {
			next = off + 0x40
		}
		binary.LittleEndian.PutUint32(b[off:], uint32(c[0])|1<<16|uint32(next)<<20)
		binary.LittleEndian.PutUint16(b[off+4:], 0x7f)
		binary.LittleEndian.PutUint16(b[off+6:], c[1])
		off = next
	}
	return b
}

func TestParseACS(t *testing.T) {
	on := uint16(ACSSourceValidation | ACSRequestRedirect | ACSCompletionRedirect | ACSUpstreamForwarding)
	a, err := ParseACS(config([2]uint16{0x0001, 0}, [2]uint16{0x000b, 0}, [2]uint16{PCIExtCapACS, on}))
	if err != nil || !a.Readable || !a.Present || a.Control != on || !a.Redirects() {
		t.Fatalf("ACS on: %+v %v", a, err)
	}
	a, err = ParseACS(config([2]uint16{0x0001, 0}, [2]uint16{PCIExtCapACS, 0}))
	if err != nil || !a.Present || a.Redirects() {
		t.Fatalf("ACS off: %+v %v", a, err)
	}
	// Source validation alone does not redirect peer-to-peer traffic.
	if a, _ := ParseACS(config([2]uint16{PCIExtCapACS, ACSSourceValidation})); a.Redirects() {
		t.Error("SV alone must not count as redirecting")
	}
	if a, err := ParseACS(config([2]uint16{0x0001, 0})); err != nil || !a.Readable || a.Present {
		t.Errorf("no ACS capability: %+v %v", a, err)
	}
	if a, err := ParseACS(make([]byte, 64)); err != nil || a.Readable {
		t.Errorf("unprivileged 64-byte read must be unknown, got %+v %v", a, err)
	}
	loop := config([2]uint16{0x0001, 0})
	binary.LittleEndian.PutUint32(loop[0x100:], 1|1<<16|0x100<<20)
	if _, err := ParseACS(loop); err == nil {
		t.Error("looping capability list: want an error")
	}
	bad := config([2]uint16{0x0001, 0})
	binary.LittleEndian.PutUint32(bad[0x100:], 1|1<<16|0x0ff<<20)
	if _, err := ParseACS(bad); err == nil {
		t.Error("capability below 0x100: want an error")
	}
}

func TestIOMMUMode(t *testing.T) {
	for _, c := range []struct {
		m    IOMMU
		want IOMMUMode
	}{
		{IOMMU{}, IOMMUOff},
		{IOMMU{Units: []string{"dmar0"}}, IOMMUUnknown},
		{IOMMU{Units: []string{"dmar0"}, GroupTypes: map[string]string{"a": "identity", "b": "identity"}}, IOMMUPassthrough},
		{IOMMU{Units: []string{"dmar0"}, GroupTypes: map[string]string{"a": "identity", "b": "DMA-FQ"}}, IOMMUTranslated},
		// /sys/class/iommu could not be read: no units read is not "off".
		{IOMMU{Unreadable: []string{"/sys/class/iommu: permission denied"}}, IOMMUUnknown},
		// One device's group could not be read: the others' identity does
		// not make the node passthrough.
		{IOMMU{Units: []string{"dmar0"}, GroupTypes: map[string]string{"a": "identity"}, Unreadable: []string{"b: input/output error"}}, IOMMUUnknown},
		// A translated group is known, whatever else could not be read.
		{IOMMU{GroupTypes: map[string]string{"a": "DMA"}, Unreadable: []string{"/sys/class/iommu: permission denied"}}, IOMMUTranslated},
		// Groups are proof of an IOMMU, listed units or not.
		{IOMMU{GroupTypes: map[string]string{"a": "DMA-FQ"}}, IOMMUTranslated},
	} {
		if got := c.m.Mode(); got != c.want {
			t.Errorf("%+v: %v, want %v", c.m, got, c.want)
		}
	}
	got := IOMMUCmdline("BOOT_IMAGE=/vmlinuz-6.8.0 root=UUID=x ro intel_iommu=on iommu=pt quiet iommu_foo=1")
	if !slices.Equal(got, []string{"intel_iommu=on", "iommu=pt"}) {
		t.Errorf("cmdline: %v", got)
	}
}

func TestGPUDirect(t *testing.T) {
	yes, no := true, false
	open := GPUDirect{NvidiaLoaded: true, DriverVersion: "535.104.05", OpenKernelModule: &yes, KernelRelease: "5.15.0-105-generic"}
	if !open.DMABUF() || !open.Available() {
		t.Error("open module R535 on 5.15: DMA-BUF expected")
	}
	for name, g := range map[string]GPUDirect{
		"proprietary": {NvidiaLoaded: true, DriverVersion: "535.104.05", OpenKernelModule: &no, KernelRelease: "5.15.0"},
		"old kernel":  {NvidiaLoaded: true, DriverVersion: "535.104.05", OpenKernelModule: &yes, KernelRelease: "5.4.0-150-generic"},
		"old driver":  {NvidiaLoaded: true, DriverVersion: "470.223.02", OpenKernelModule: &yes, KernelRelease: "5.15.0"},
		"unknown":     {NvidiaLoaded: true, DriverVersion: "535.104.05", KernelRelease: "5.15.0"},
	} {
		if g.DMABUF() || g.Available() {
			t.Errorf("%s: no DMA-BUF expected", name)
		}
	}
	if !(GPUDirect{PeerMem: "nvidia_peermem"}).Available() {
		t.Error("nvidia_peermem loaded: available")
	}
	if KernelAtLeast("garbage", 5, 12) || !KernelAtLeast("6.8.0-45-generic", 5, 12) || KernelAtLeast("5.11.22", 5, 12) {
		t.Error("KernelAtLeast")
	}
}

// FuzzParseACS: any config file gives a result or an error, never a panic
// or an endless walk of the capability list.
func FuzzParseACS(f *testing.F) {
	f.Add(config([2]uint16{0x0001, 0}, [2]uint16{PCIExtCapACS, 0x1d}))
	f.Add(make([]byte, 64))
	f.Add(make([]byte, 4096))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := ParseACS(b)
		if err == nil && a.Present && !a.Readable {
			t.Fatalf("present but not readable: %+v", a)
		}
	})
}
