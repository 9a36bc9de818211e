package reader

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/roce-exporter/roce_exporter/node"
)

// gpuSource reads the GPU side of the RDMA path: the NVIDIA GPUs on the PCI
// bus (through the same pciReader as the NICs), where they and the RDMA
// NICs sit in the PCI tree, ACS on the bridges between them, the IOMMU and
// what GPUDirect RDMA needs. Everything but the GPUs' links changes only
// with a reboot or a module load, so it is read once per refresh interval.
type gpuSource struct {
	r   *Reader
	pci *pciReader

	gpus   []busFunction
	gpusAt time.Time
	// static is the slow part (places, ACS, IOMMU, modules, /proc), kept
	// for the refresh interval.
	static   *node.GPUState
	staticAt time.Time
	// dirs maps each GPU's address to its resolved directory, found with
	// the static part.
	dirs map[string]string
	// ids caches the bridges' ids during one static read (the zero id for
	// one that did not read).
	ids map[string]node.PCIID
}

func init() {
	registerSource(node.SourceGPU, "NVIDIA GPUs: GPU↔NIC PCIe path, ACS, IOMMU, GPUDirect.", newGPUSource)
}

func newGPUSource(r *Reader) source {
	return &gpuSource{r: r, pci: newPCIReader(r, node.SourceGPU)}
}

func (c *gpuSource) close() error {
	c.pci.attrs.closeAll()
	return nil
}

func isGPUClass(class string) bool {
	return strings.HasPrefix(class, "0x0300") || strings.HasPrefix(class, "0x0302")
}

func (c *gpuSource) read(sc *scan) (func(*node.Snapshot), error) {
	c.pci.attrs.begin()
	defer c.pci.attrs.sweep()
	if c.r.due(c.gpusAt, sc.Time) {
		c.gpus = scanPCIBus(c.r, sc, node.SourceGPU, isGPUClass, func(v string) bool { return v == node.VendorNVIDIA })
		c.gpusAt = sc.Time
	}
	if len(c.gpus) == 0 {
		c.static = nil
		return func(sn *node.Snapshot) {}, errors.Join(ErrNoData, ErrNotApplicable, errors.New("no NVIDIA GPU on the PCI bus"))
	}
	if c.static == nil || c.r.due(c.staticAt, sc.Time) {
		c.static, c.staticAt = c.readStatic(sc), sc.Time
	}
	st := *c.static
	st.GPUs = make([]*node.GPU, 0, len(c.static.GPUs))
	live := make([]string, 0, len(c.static.GPUs))
	partial := false
	for _, g := range c.static.GPUs {
		f := &node.PCIFunction{Address: g.Place.Address()}
		live = append(live, f.Address)
		if !c.pci.readFunction(sc, c.dirs[f.Address], f) {
			partial = true
			continue // removed since the last scan
		}
		gg := *g
		gg.PCI = f
		st.GPUs = append(st.GPUs, &gg)
	}
	forgetGone(c.pci.chains, live)
	apply := func(sn *node.Snapshot) { sn.GPU = &st }
	if partial {
		return apply, fmt.Errorf("%w: a GPU vanished from the PCI bus", errPartial)
	}
	return apply, nil
}

// readStatic reads everything but the GPUs' links.
func (c *gpuSource) readStatic(sc *scan) *node.GPUState {
	st := &node.GPUState{ACS: map[string]node.ACS{}}
	c.dirs = map[string]string{}
	c.ids = map[string]node.PCIID{}
	for i, fn := range c.gpus {
		pl, ok := c.place(sc, fn.dir)
		if !ok {
			continue
		}
		if dir, err := c.r.fs.Realpath(fn.dir); err == nil {
			c.dirs[fn.address] = dir
		}
		st.GPUs = append(st.GPUs, &node.GPU{Index: i, Class: fn.class, Place: pl})
	}
	if topo, err := sc.topology(); err == nil {
		for _, d := range topo.Devices {
			if d.PCIDir == "" || d.PCIAddress == "" {
				continue
			}
			if pl, ok := c.place(sc, d.PCIDir); ok {
				st.NICs = append(st.NICs, &node.RDMANIC{Device: d.Name, Place: pl})
			}
		}
	}
	// ACS of every bridge a GPU↔NIC path crosses, read once each.
	bridgeDirs := map[string]string{}
	for _, g := range st.GPUs {
		for _, n := range st.NICs {
			for _, b := range node.Bridges(g.Place, n.Place) {
				bridgeDirs[b] = ""
			}
		}
	}
	for _, b := range slices.Sorted(maps.Keys(bridgeDirs)) {
		dir, err := c.r.fs.Realpath(c.r.sys("bus", "pci", "devices", b))
		if err != nil {
			continue
		}
		path := joinPath(dir, "config")
		cfg, err := readConfig(c.r.fs, path)
		if err != nil {
			if !isVanished(err) {
				sc.readError(node.SourceGPU, path, err)
			}
			continue
		}
		acs, err := node.ParseACS(cfg)
		if err != nil {
			sc.readError(node.SourceGPU, path, err)
			continue
		}
		if acs.Readable {
			st.ACS[b] = acs
		}
	}
	st.IOMMU = c.readIOMMU(sc, st)
	st.GPUDirect = c.readGPUDirect()
	st.VFIO, st.VFIOUnreadable = c.readVFIO()
	return st
}

// readVFIO lists the functions bound to vfio-pci: the driver's directory
// holds a link named by the address of each. Without the directory the
// driver is not loaded and nothing is bound.
func (c *gpuSource) readVFIO() ([]string, string) {
	dir := c.r.sys("bus", "pci", "drivers", "vfio-pci")
	names, err := c.r.fs.ReadDirNames(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, ""
	case err != nil:
		return nil, fmt.Sprintf("%s: %v", dir, err)
	}
	var bound []string
	for _, n := range names {
		if node.BDF.MatchString(n) {
			bound = append(bound, n)
		}
	}
	slices.Sort(bound)
	return bound, ""
}

// place reads where a function sits: its resolved directory and numa_node.
func (c *gpuSource) place(sc *scan, dir string) (node.PCIPlace, bool) {
	real, err := c.r.fs.Realpath(dir)
	if err != nil {
		return node.PCIPlace{}, false
	}
	numa := -1
	if v, err := readSysfsFile(c.r.fs, joinPath(real, "numa_node")); err == nil {
		if n, err := strconv.Atoi(v); err == nil {
			numa = n
		}
	}
	// The place starts below sysfs's own path, which may itself hold any
	// name.
	rel := real
	if sys, err := c.r.fs.Realpath(c.r.opts.SysPath); err == nil {
		if r, err := filepath.Rel(sys, real); err == nil {
			rel = r
		}
	}
	pl, err := node.ParsePCIPlace(rel, numa)
	if err != nil {
		sc.readError(node.SourceGPU, real, err)
		return node.PCIPlace{}, false
	}
	pl.IDs = c.bridgeIDs(real)
	return pl, true
}

// readIOMMU reads the IOMMU units and the group type of every GPU and NIC.
// What does not exist is an answer (no IOMMU, a device without a group, a
// kernel before 4.19 without type files); what exists but cannot be read
// (a container denied /sys/class/iommu) is recorded as unreadable, so that
// it reads as unknown rather than as no IOMMU.
func (c *gpuSource) readIOMMU(sc *scan, st *node.GPUState) node.IOMMU {
	var m node.IOMMU
	unreadable := func(path string, err error) {
		sc.readError(node.SourceGPU, path, err)
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		m.Unreadable = append(m.Unreadable, fmt.Sprintf("%s: %v", path, err))
	}
	units, err := c.r.fs.ReadDirNames(c.r.sys("class", "iommu"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		unreadable(c.r.sys("class", "iommu"), err)
	}
	slices.Sort(units)
	m.Units = units
	var addrs []string
	for _, g := range st.GPUs {
		addrs = append(addrs, g.Place.Address())
	}
	for _, n := range st.NICs {
		addrs = append(addrs, n.Place.Address())
	}
	for _, a := range addrs {
		link := c.r.sys("bus", "pci", "devices", a, "iommu_group")
		grp, err := c.r.fs.Readlink(link)
		if errors.Is(err, fs.ErrNotExist) {
			continue // no IOMMU, or the device has no group
		}
		if err != nil {
			unreadable(link, err)
			continue
		}
		typePath := c.r.sys("kernel", "iommu_groups", filepath.Base(grp), "type")
		t, err := readSysfsFile(c.r.fs, typePath)
		if errors.Is(err, fs.ErrNotExist) {
			continue // kernels before 4.19 have no type file
		}
		if err != nil {
			unreadable(typePath, err)
			continue
		}
		if m.GroupTypes == nil {
			m.GroupTypes = map[string]string{}
		}
		m.GroupTypes[a] = t
	}
	if p, ok := c.r.proc("cmdline"); ok {
		if text, err := readSysfsFile(c.r.fs, p); err == nil {
			m.Cmdline = node.IOMMUCmdline(text)
		}
	}
	return m
}

func (c *gpuSource) readGPUDirect() node.GPUDirect {
	var g node.GPUDirect
	for _, m := range []string{"nvidia_peermem", "nv_peer_mem"} {
		if _, err := c.r.fs.Inode(c.r.sys("module", m)); err == nil {
			g.PeerMem = m
			break
		}
	}
	if _, err := c.r.fs.Inode(c.r.sys("module", "nvidia")); err == nil {
		g.NvidiaLoaded = true
		g.DriverVersion, _ = readSysfsFile(c.r.fs, c.r.sys("module", "nvidia", "version"))
	}
	if p, ok := c.r.proc("driver", "nvidia", "version"); ok {
		if text, err := readSysfsFile(c.r.fs, p); err == nil {
			open := strings.Contains(text, "Open Kernel Module")
			g.OpenKernelModule = &open
		}
	}
	if p, ok := c.r.proc("sys", "kernel", "osrelease"); ok {
		g.KernelRelease, _ = readSysfsFile(c.r.fs, p)
	}
	return g
}

// readConfig reads a PCI config file: 4096 bytes for root on a PCIe
// function, 64 (the standard header) for anyone else.
func readConfig(f FS, path string) ([]byte, error) {
	a, err := f.OpenAttr(path)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	buf := make([]byte, 4096)
	n, err := a.PreadAt0(buf)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return buf[:n], nil
}

// bridgeIDs reads the ids of every bridge above the function in dir, which
// NCCL tells Broadcom PEX switches by (node.Relate). A bridge whose ids do
// not read is left out: it is then flattened by nobody, as in NCCL, which
// reads an unreadable id as 0. GPUs and NICs share their switches, so each
// bridge is read once per static read.
func (c *gpuSource) bridgeIDs(dir string) map[string]node.PCIID {
	out := map[string]node.PCIID{}
	for up := filepath.Dir(dir); node.BDF.MatchString(filepath.Base(up)); up = filepath.Dir(up) {
		addr := filepath.Base(up)
		id, tried := c.ids[addr]
		if !tried {
			var v [4]string
			for i, f := range []string{"vendor", "device", "subsystem_vendor", "subsystem_device"} {
				v[i], _ = readSysfsFile(c.r.fs, joinPath(up, f))
			}
			// An id that does not parse stays the zero id: no vendor is 0.
			id, _ = node.ParsePCIID(v[0], v[1], v[2], v[3])
			c.ids[addr] = id
		}
		if id != (node.PCIID{}) {
			out[addr] = id
		}
	}
	return out
}
