package reader

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/roce-exporter/roce_exporter/node"
)

func readGPU(t *testing.T, scenario string, withProc bool) (*node.Snapshot, *Result) {
	t.Helper()
	o := fixtureOptions(scenario, node.SourceRDMA, node.SourceGPU)
	if withProc {
		o.ProcPath = filepath.Join(fixtures, scenario, "proc")
	}
	res := newTestReader(t, o).Read()
	return res.Snapshot, res
}

func closestNames(st *node.GPUState, g *node.GPU) (string, node.PCIeRelation) {
	c := st.Closest(g)
	if len(c) == 0 {
		return "", node.RelationUnknown
	}
	s := ""
	for i, p := range c {
		if i > 0 {
			s += ","
		}
		s += p.NIC.Device
	}
	return s, c[0].Relation
}

// The DGX H100 fixture read back: 8 GPUs, each with its own NIC at PXB (as
// nvidia-smi topo -m shows on the real machine), ACS off on every switch
// port between them, the IOMMU in passthrough and nvidia_peermem loaded.
func TestGPUSourceDGXH100(t *testing.T) {
	snap, _ := readGPU(t, "dgx-h100-8gpu-8nic", true)
	if snap.Sources[node.SourceGPU] != node.SourceOK {
		t.Fatalf("gpu source: %v", snap.Sources[node.SourceGPU])
	}
	st := snap.GPU
	if st == nil || len(st.GPUs) != 8 || len(st.NICs) != 8 {
		t.Fatalf("GPU state: %+v", st)
	}
	for i, g := range st.GPUs {
		want := []string{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"}[i]
		if names, rel := closestNames(st, g); names != want || rel != node.RelationPXB {
			t.Errorf("GPU %d (%s): closest %s %v, want %s PXB", i, g.Place.Address(), names, rel, want)
		}
		if g.PCI == nil || g.PCI.CurrentWidth != 16 || g.PCI.MaxSpeedGTs != 32 {
			t.Errorf("GPU %d link: %+v", i, g.PCI)
		}
		if wantNUMA := i / 4; g.Place.NUMANode != wantNUMA {
			t.Errorf("GPU %d numa %d, want %d", i, g.Place.NUMANode, wantNUMA)
		}
	}
	// nvidia-smi's NODE (another host bridge of the socket) is PHB to NCCL.
	if r := node.Relate(st.GPUs[0].Place, st.NICs[1].Place); r != node.RelationPHB {
		t.Errorf("GPU0-mlx5_1: %v, want PHB", r)
	}
	if r := node.Relate(st.GPUs[0].Place, st.NICs[4].Place); r != node.RelationSYS {
		t.Errorf("GPU0-mlx5_4: %v, want SYS", r)
	}
	if len(st.ACS) == 0 {
		t.Fatal("no ACS read")
	}
	for b, a := range st.ACS {
		if a.Redirects() && len(b) > 0 && b[len(b)-4:] != "01.0" {
			t.Errorf("bridge %s: ACS %#x redirects on a healthy DGX", b, a.Control)
		}
	}
	if m := st.IOMMU.Mode(); m != node.IOMMUPassthrough {
		t.Errorf("IOMMU %v, want passthrough; %+v", m, st.IOMMU)
	}
	if len(st.IOMMU.Cmdline) != 2 {
		t.Errorf("cmdline params: %v", st.IOMMU.Cmdline)
	}
	if st.GPUDirect.PeerMem != "nvidia_peermem" || st.GPUDirect.DriverVersion != "535.161.08" || st.GPUDirect.OpenKernelModule == nil || *st.GPUDirect.OpenKernelModule {
		t.Errorf("GPUDirect: %+v", st.GPUDirect)
	}
}

func TestGPUSourceDGXH100Degraded(t *testing.T) {
	snap, _ := readGPU(t, "dgx-h100-degraded", true)
	st := snap.GPU
	if st == nil || len(st.GPUs) != 8 {
		t.Fatalf("GPU state: %+v", st)
	}
	if names, rel := closestNames(st, st.GPUs[3]); rel != node.RelationPHB || names != "mlx5_0,mlx5_1,mlx5_2" {
		t.Errorf("GPU 3 with its NIC on the other socket: closest %s %v", names, rel)
	}
	if st.GPUs[5].PCI.CurrentWidth != 8 || st.GPUs[5].PCI.MaxWidth != 16 {
		t.Errorf("GPU 5 link: %+v", st.GPUs[5].PCI)
	}
	redirecting := 0
	for _, b := range node.Bridges(st.GPUs[2].Place, st.NICs[2].Place) {
		if st.ACS[b].Redirects() {
			redirecting++
		}
	}
	if redirecting != 3 {
		t.Errorf("GPU 2 ↔ mlx5_2: %d bridges with ACS redirect, want 3 (the downstream ports)", redirecting)
	}
	if st.GPUDirect.PeerMem != "" || st.GPUDirect.Available() {
		t.Errorf("GPUDirect: %+v", st.GPUDirect)
	}
}

// A copy of sysfs without --path.proc does not read this machine's /proc.
func TestGPUSourceNoProcOnCopy(t *testing.T) {
	snap, _ := readGPU(t, "dgx-h100-8gpu-8nic", false)
	if snap.GPU.IOMMU.Cmdline != nil || snap.GPU.GPUDirect.OpenKernelModule != nil || snap.GPU.GPUDirect.KernelRelease != "" {
		t.Errorf("read /proc of this machine: %+v %+v", snap.GPU.IOMMU, snap.GPU.GPUDirect)
	}
}

// Without privilege sysfs gives 64 bytes of config: ACS is unknown, not off.
func TestGPUSourceACSUnprivileged(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(filepath.Join(fixtures, "dgx-h100-8gpu-8nic"))); err != nil {
		t.Fatal(err)
	}
	matches, _ := filepath.Glob(filepath.Join(root, "sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/*/config"))
	if len(matches) == 0 {
		t.Fatal("no bridge config in the copy")
	}
	for _, m := range matches {
		os.Chmod(m, 0o644)
		b, _ := os.ReadFile(m)
		if err := os.WriteFile(m, b[:64], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o := Options{SysPath: filepath.Join(root, "sys"), DevPath: filepath.Join(root, "dev"), Sources: []string{node.SourceRDMA, node.SourceGPU}}
	snap := newTestReader(t, o).Read().Snapshot
	for _, b := range []string{"0000:17:00.0", "0000:17:01.0"} {
		if _, ok := snap.GPU.ACS[b]; ok {
			t.Errorf("%s: ACS from a 64-byte config must be absent", b)
		}
	}
	if _, ok := snap.GPU.ACS["0000:1a:00.0"]; !ok {
		t.Error("0000:1a:00.0 (readable) should still be read")
	}
}

// A node without NVIDIA GPUs: the source is absent and leaves no state.
func TestGPUSourceNoGPU(t *testing.T) {
	snap, res := readGPU(t, "mlx5-8x400g-healthy", false)
	if snap.GPU != nil || snap.Sources[node.SourceGPU] != node.SourceAbsent {
		t.Errorf("no-GPU node: %v %+v %+v", snap.Sources[node.SourceGPU], snap.GPU, res.Sources)
	}
}

// iommuFS serves the fixture's sysfs with /sys/class/iommu denied, as an
// LSM denies it to a container, and one NIC's iommu_group link failing.
type iommuFS struct {
	OSFS
	badGroup string
}

func (f *iommuFS) ReadDirNames(path string) ([]string, error) {
	if strings.HasSuffix(path, "/class/iommu") {
		return nil, &fs.PathError{Op: "open", Path: path, Err: syscall.EACCES}
	}
	return f.OSFS.ReadDirNames(path)
}

func (f *iommuFS) Readlink(path string) (string, error) {
	if f.badGroup != "" && strings.HasSuffix(path, f.badGroup+"/iommu_group") {
		return "", &fs.PathError{Op: "readlink", Path: path, Err: syscall.EIO}
	}
	return f.OSFS.Readlink(path)
}

// An IOMMU state that cannot be read is unknown, never "off": the DGX
// fixture's IOMMU is in passthrough, and with /sys/class/iommu denied the
// reader must not report that no IOMMU is active.
func TestIOMMUUnreadableIsUnknown(t *testing.T) {
	for name, fsys := range map[string]*iommuFS{
		"class denied":     {},
		"group unreadable": {badGroup: "0000:1b:00.0"},
	} {
		t.Run(name, func(t *testing.T) {
			o := fixtureOptions("dgx-h100-8gpu-8nic", node.SourceRDMA, node.SourceGPU)
			o.FS = fsys
			r := newTestReader(t, o)
			st := r.Read().Snapshot.GPU
			if st == nil {
				t.Fatal("no GPU state")
			}
			if m := st.IOMMU.Mode(); m != node.IOMMUUnknown || len(st.IOMMU.Unreadable) == 0 {
				t.Errorf("mode %s, unreadable %v; want unknown", m, st.IOMMU.Unreadable)
			}
			if r.ReadErrors(node.SourceGPU) == 0 {
				t.Error("the unreadable path is not counted")
			}
		})
	}
}

// vfioFS adds a vfio-pci driver directory to the fixture's sysfs: bound
// functions by address, and the driver's own files, or a denied read.
type vfioFS struct {
	OSFS
	names []string
	err   error
}

func (f *vfioFS) ReadDirNames(path string) ([]string, error) {
	if strings.HasSuffix(path, "/bus/pci/drivers/vfio-pci") {
		return f.names, f.err
	}
	return f.OSFS.ReadDirNames(path)
}

// The functions bound to vfio-pci are the entries of its driver directory
// that are PCI addresses; no directory is none bound, and one that cannot
// be read is unknown.
func TestGPUSourceVFIO(t *testing.T) {
	for name, tc := range map[string]struct {
		fsys       FS
		want       []string
		unreadable bool
	}{
		"none (no vfio-pci)": {fsys: nil},
		"bound":              {fsys: &vfioFS{names: []string{"bind", "0000:9a:00.1", "module", "new_id", "0000:1b:00.0", "uevent"}}, want: []string{"0000:1b:00.0", "0000:9a:00.1"}},
		"denied":             {fsys: &vfioFS{err: &fs.PathError{Op: "open", Path: "vfio-pci", Err: syscall.EACCES}}, unreadable: true},
	} {
		t.Run(name, func(t *testing.T) {
			o := fixtureOptions("dgx-h100-8gpu-8nic", node.SourceRDMA, node.SourceGPU)
			if tc.fsys != nil {
				o.FS = tc.fsys
			}
			st := newTestReader(t, o).Read().Snapshot.GPU
			if st == nil {
				t.Fatal("no GPU state")
			}
			if strings.Join(st.VFIO, " ") != strings.Join(tc.want, " ") || (st.VFIOUnreadable != "") != tc.unreadable {
				t.Errorf("VFIO %v unreadable %q, want %v unreadable %v", st.VFIO, st.VFIOUnreadable, tc.want, tc.unreadable)
			}
		})
	}
}
