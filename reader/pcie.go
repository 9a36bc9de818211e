package reader

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/roce-exporter/roce_exporter/node"
)

// pcieSource reads the PCIe links of the functions behind RDMA devices, and
// on a node without RDMA devices, which RDMA-capable NICs the bus holds.
type pcieSource struct {
	r   *Reader
	pci *pciReader
	// nics is the last scan of the PCI bus, kept for the refresh interval:
	// on a node without RDMA devices it would otherwise read every PCI
	// function's class file every time.
	nics   []node.NIC
	nicsAt time.Time
}

// pcieChain is the upstream path of a function, re-read with the topology.
type pcieChain struct {
	available float64
	limitedBy string
	vendor    string
	device    string
	physFn    string
	// upstream is the port above the function ("" on a root bus) and its
	// capability, which changes only with the hardware.
	upstream   string
	upDir      string
	upSpeedGTs float64
	upWidth    int
	at         time.Time
}

// pciReader reads PCI functions: the one reader of link speed and width,
// upstream bandwidth and AER, for the NICs (source pcie) and the GPUs
// (source gpu). Read errors count against its source.
type pciReader struct {
	r      *Reader
	source string
	attrs  *attrCache
	chains map[string]*pcieChain
}

func newPCIReader(r *Reader, source string) *pciReader {
	return &pciReader{r: r, source: source, attrs: newAttrCache(r.fs), chains: map[string]*pcieChain{}}
}

func init() {
	registerSource(node.SourcePCIe, "NIC PCIe links: speed, width, AER errors.", newPCIeSource)
}

func newPCIeSource(r *Reader) source {
	return &pcieSource{r: r, pci: newPCIReader(r, node.SourcePCIe)}
}

func (c *pcieSource) close() error {
	c.pci.attrs.closeAll()
	return nil
}

func (c *pcieSource) read(sc *scan) (func(*node.Snapshot), error) {
	c.pci.attrs.begin()
	defer c.pci.attrs.sweep()
	topo, err := sc.topology()
	if err != nil {
		return nil, err
	}
	byAddr := map[string]*node.PCIFunction{}
	dirs := map[string]string{}
	var order []string
	for _, d := range topo.Devices {
		if d.PCIAddress == "" {
			continue
		}
		f := byAddr[d.PCIAddress]
		if f == nil {
			f = &node.PCIFunction{Address: d.PCIAddress}
			byAddr[d.PCIAddress] = f
			dirs[d.PCIAddress] = d.PCIDir
			order = append(order, d.PCIAddress)
		}
		f.RDMADevices = append(f.RDMADevices, d.Name)
	}
	if len(order) == 0 {
		if c.r.due(c.nicsAt, sc.Time) {
			c.nics, c.nicsAt = c.scanNICs(sc), sc.Time
		}
		nics := c.nics
		return func(sn *node.Snapshot) { sn.NICs = nics }, errors.Join(ErrNoData, errors.New("no PCI functions behind RDMA devices"))
	}
	funcs := map[string]*node.PCIFunction{}
	for _, addr := range order {
		f := byAddr[addr]
		if c.pci.readFunction(sc, dirs[addr], f) {
			funcs[addr] = f
		}
	}
	forgetGone(c.pci.chains, order)
	return func(sn *node.Snapshot) { sn.PCI = funcs }, nil
}

func (c *pciReader) readFunction(sc *scan, dir string, f *node.PCIFunction) bool {
	readSpeed := func(file string) float64 {
		v, err := c.attrs.readString(dir, file)
		if err != nil {
			if !isVanished(err) {
				sc.readError(c.source, joinPath(dir, file), err)
			}
			return 0
		}
		if v == "" || strings.HasPrefix(v, "Unknown") {
			return 0
		}
		gt, err := node.ParsePCIeSpeed(v)
		if err != nil {
			sc.readError(c.source, joinPath(dir, file), err)
			return 0
		}
		return gt
	}
	readWidth := func(file string) int {
		v, err := c.attrs.readUint(dir, file)
		if err != nil {
			if !isVanished(err) {
				sc.readError(c.source, joinPath(dir, file), err)
			}
			return 0
		}
		if v > node.MaxPCIeWidth {
			sc.readError(c.source, joinPath(dir, file), fmt.Errorf("implausible width %d", v))
			return 0
		}
		return int(v)
	}
	if _, err := c.r.fs.Inode(dir); err != nil {
		return false // function removed
	}
	f.CurrentSpeedGTs, f.MaxSpeedGTs = readSpeed("current_link_speed"), readSpeed("max_link_speed")
	f.CurrentWidth, f.MaxWidth = readWidth("current_link_width"), readWidth("max_link_width")
	if f.CurrentSpeedGTs > 0 && f.CurrentWidth > 0 {
		f.CurrentBandwidth = node.PCIeBandwidth(f.CurrentSpeedGTs, f.CurrentWidth)
	}
	if f.MaxSpeedGTs > 0 && f.MaxWidth > 0 {
		f.MaxBandwidth = node.PCIeBandwidth(f.MaxSpeedGTs, f.MaxWidth)
	}

	ch := c.chains[f.Address]
	if ch == nil || c.r.due(ch.at, sc.Time) {
		ch = c.readChain(sc, dir)
		c.chains[f.Address] = ch
	}
	f.VendorID, f.DeviceID, f.PhysFn = ch.vendor, ch.device, ch.physFn
	f.AvailableBandwidth, f.LimitedBy = ch.available, ch.limitedBy
	if f.CurrentBandwidth > 0 && (f.AvailableBandwidth == 0 || f.CurrentBandwidth < f.AvailableBandwidth) {
		f.AvailableBandwidth, f.LimitedBy = f.CurrentBandwidth, f.Address
	}

	f.AER = c.readAER(sc, dir)
	if ch.upstream != "" {
		f.Upstream = &node.PCIPort{Address: ch.upstream, MaxSpeedGTs: ch.upSpeedGTs, MaxWidth: ch.upWidth}
		if aer := c.readAER(sc, ch.upDir); len(aer) > 0 {
			f.Upstream.AER = aer
		}
	}
	return true
}

// readAER reads the AER totals of the function or port in dir, every read
// (they are counters); an empty map when it has no AER capability.
func (c *pciReader) readAER(sc *scan, dir string) map[string]uint64 {
	aer := map[string]uint64{}
	for _, sev := range node.AERSeverities {
		file := "aer_dev_" + sev
		text, err := c.attrs.readString(dir, file)
		if err != nil {
			if !isVanished(err) {
				sc.readError(c.source, joinPath(dir, file), err)
			}
			continue
		}
		total, ok, err := node.ParseAERTotal(text)
		if err != nil {
			sc.readError(c.source, joinPath(dir, file), err)
			continue
		}
		if ok {
			aer[sev] = total
		}
	}
	return aer
}

// readChain walks from the function up to the root complex, like the
// kernel's pcie_bandwidth_available(): a NIC trained x16 behind a switch
// port trained x8 only gets x8.
func (c *pciReader) readChain(sc *scan, dir string) *pcieChain {
	ch := &pcieChain{at: sc.Time}
	ch.vendor, _ = readSysfsFile(c.r.fs, joinPath(dir, "vendor"))
	ch.device, _ = readSysfsFile(c.r.fs, joinPath(dir, "device"))
	if pf, err := c.r.fs.Readlink(joinPath(dir, "physfn")); err == nil {
		ch.physFn = filepath.Base(pf)
	}
	// The port the function hangs off is the other end of its link: its
	// capability is the slot's half of what the link can train to. A VF has
	// no link of its own (its PF's is read on the PF), so it has no other end.
	if up := filepath.Dir(dir); ch.physFn == "" && node.BDF.MatchString(filepath.Base(up)) {
		ch.upstream, ch.upDir = filepath.Base(up), up
		// A value that does not parse is counted and left unknown: the link
		// is then judged against the card's own maximum, as before the
		// port was read.
		if sp, err := readSysfsFile(c.r.fs, joinPath(up, "max_link_speed")); err == nil && !strings.HasPrefix(sp, "Unknown") {
			if ch.upSpeedGTs, err = node.ParsePCIeSpeed(sp); err != nil {
				sc.readError(c.source, joinPath(up, "max_link_speed"), err)
			}
		}
		if w, err := readSysfsFile(c.r.fs, joinPath(up, "max_link_width")); err == nil {
			width, err := strconv.Atoi(w)
			switch {
			case err != nil:
				sc.readError(c.source, joinPath(up, "max_link_width"), err)
			case width < 0 || width > node.MaxPCIeWidth:
				sc.readError(c.source, joinPath(up, "max_link_width"), fmt.Errorf("implausible width %d", width))
			default:
				ch.upWidth = width
			}
		}
	}
	for up := filepath.Dir(dir); node.BDF.MatchString(filepath.Base(up)); up = filepath.Dir(up) {
		sp, err := readSysfsFile(c.r.fs, joinPath(up, "current_link_speed"))
		if err != nil {
			continue
		}
		gt, err := node.ParsePCIeSpeed(sp)
		if err != nil {
			continue
		}
		w, err := readSysfsFile(c.r.fs, joinPath(up, "current_link_width"))
		if err != nil {
			continue
		}
		width, err := strconv.Atoi(w)
		if err != nil || width <= 0 || width > node.MaxPCIeWidth {
			continue
		}
		if bw := node.PCIeBandwidth(gt, width); ch.available == 0 || bw < ch.available {
			ch.available, ch.limitedBy = bw, filepath.Base(up)
		}
	}
	return ch
}

// scanNICs lists network/InfiniBand-class functions of RDMA vendors. It
// runs only when no RDMA device exists, to tell a missing NIC from a
// missing driver, and at most once per refresh interval.
func (c *pcieSource) scanNICs(sc *scan) []node.NIC {
	var nics []node.NIC
	// 0x02xxxx network controller; 0x0c06xx InfiniBand (old cards).
	isNet := func(class string) bool { return strings.HasPrefix(class, "0x02") || strings.HasPrefix(class, "0x0c06") }
	isRDMAVendor := func(vendor string) bool { return node.VendorName(vendor) != "" }
	for _, fn := range scanPCIBus(c.r, sc, node.SourcePCIe, isNet, isRDMAVendor) {
		nic := node.NIC{Address: fn.address, VendorID: fn.vendor, Class: fn.class}
		nic.DeviceID, _ = readSysfsFile(c.r.fs, joinPath(fn.dir, "device"))
		if drv, err := c.r.fs.Readlink(joinPath(fn.dir, "driver")); err == nil {
			nic.Driver = filepath.Base(drv)
		}
		if node.RDMACapable(nic) {
			nics = append(nics, nic)
		}
	}
	return nics
}

// busFunction is a PCI function found on the bus.
type busFunction struct {
	address, dir, class, vendor string
}

// scanPCIBus lists the functions of /sys/bus/pci/devices whose class and
// vendor the filters accept, in address order; the vendor file is read only
// for a class that passed. dir is the bus entry (a link to the function's
// directory under /sys/devices).
func scanPCIBus(r *Reader, sc *scan, source string, classOK, vendorOK func(string) bool) []busFunction {
	dir := r.sys("bus", "pci", "devices")
	names, err := r.fs.ReadDirNames(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			sc.readError(source, dir, err)
		}
		return nil
	}
	sort.Strings(names)
	var out []busFunction
	for _, n := range names {
		fdir := joinPath(dir, n)
		class, err := readSysfsFile(r.fs, joinPath(fdir, "class"))
		if err != nil || !classOK(class) {
			continue
		}
		vendor, err := readSysfsFile(r.fs, joinPath(fdir, "vendor"))
		if err != nil || !vendorOK(vendor) {
			continue
		}
		out = append(out, busFunction{address: n, dir: fdir, class: class, vendor: vendor})
	}
	return out
}
