package collector

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

func init() {
	registerCollector("pcie", "PCIe link of the functions behind RDMA devices: speed, width, usable bandwidth, AER errors.",
		true, phaseSource, newPCIeCollector)
}

var (
	pcieSpeedDesc = newGaugeDesc(namespace+"_pcie_link_speed_transfers_per_second",
		"PCIe link speed per lane (kind=current|max).", "device", "pci_address", "kind")
	pcieWidthDesc = newGaugeDesc(namespace+"_pcie_link_width_lanes",
		"PCIe link width (kind=current|max).", "device", "pci_address", "kind")
	pcieBandwidthDesc = newGaugeDesc(namespace+"_pcie_bandwidth_bytes_per_second",
		"Usable PCIe bandwidth after line encoding (kind=current|max for this link, available for the slowest link up to the root port).",
		"device", "pci_address", "kind")
	pcieAERDesc = newCounterDesc(namespace+"_pcie_aer_errors_total",
		"PCIe Advanced Error Reporting totals of the function (severity=correctable|nonfatal|fatal).",
		"device", "pci_address", "severity")
)

// pcieLaneMbps is the usable Mb/s per lane after line encoding, as the
// kernel's PCIE_SPEED2MBS_ENC: 8b/10b for Gen1-2, 128b/130b for Gen3-5, and
// Gen6+ FLIT mode counted 1:1.
var pcieLaneMbps = map[float64]float64{
	2.5: 2000, 5: 4000, 8: 7876, 16: 15753, 32: 31507, 64: 64000, 128: 128000,
}

// parsePCIeSpeed parses "32.0 GT/s PCIe" (new kernels) or "8 GT/s" (old).
func parsePCIeSpeed(s string) (float64, error) {
	num, rest, ok := strings.Cut(strings.TrimSpace(s), " ")
	if !ok || !strings.HasPrefix(rest, "GT/s") {
		return 0, fmt.Errorf("PCIe speed %q: want \"<n> GT/s\"", truncate(s, 40))
	}
	gt, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("PCIe speed %q: %w", truncate(s, 40), err)
	}
	if _, ok := pcieLaneMbps[gt]; !ok {
		return 0, fmt.Errorf("PCIe speed %q: unknown generation", truncate(s, 40))
	}
	return gt, nil
}

// pcieBandwidth returns usable bytes/s of a link.
func pcieBandwidth(gts float64, width int) float64 {
	return pcieLaneMbps[gts] * float64(width) * 1e6 / 8
}

type pcieCollector struct {
	cfg    *Config
	attrs  *attrCache
	chains map[string]*pcieChain
	// nics is the last scan of the PCI bus, kept for the refresh interval:
	// on a node without RDMA devices it would otherwise read every PCI
	// function's class file each scrape.
	nics   []PCINIC
	nicsAt time.Time
}

// pcieChain is the upstream path of a function, re-read with the topology.
type pcieChain struct {
	available float64
	limitedBy string
	vendor    string
	device    string
	at        time.Time
}

func newPCIeCollector(cfg *Config, _ *slog.Logger) (Collector, error) {
	return &pcieCollector{cfg: cfg, attrs: newAttrCache(cfg.fs), chains: map[string]*pcieChain{}}, nil
}

func (c *pcieCollector) Close() error {
	c.attrs.closeAll()
	return nil
}

func (c *pcieCollector) Update(s *Scrape, out *Sink) error {
	c.attrs.begin()
	defer c.attrs.sweep()
	topo, err := s.Topology()
	if err != nil {
		return err
	}
	byAddr := map[string]*PCIFunction{}
	dirs := map[string]string{}
	var order []string
	for _, d := range topo.Devices {
		if d.PCIAddress == "" {
			continue
		}
		f := byAddr[d.PCIAddress]
		if f == nil {
			f = &PCIFunction{Address: d.PCIAddress}
			byAddr[d.PCIAddress] = f
			dirs[d.PCIAddress] = d.PCIDir
			order = append(order, d.PCIAddress)
		}
		f.RDMADevices = append(f.RDMADevices, d.Name)
	}
	if len(order) == 0 {
		if c.cfg.due(c.nicsAt, s.Time) {
			c.nics, c.nicsAt = c.scanNICs(s), s.Time
		}
		nics := c.nics
		s.update(func(sn *Snapshot) { sn.NICs = nics })
		return errors.Join(ErrNoData, errors.New("no PCI functions behind RDMA devices"))
	}
	funcs := map[string]*PCIFunction{}
	for _, addr := range order {
		f := byAddr[addr]
		if c.readFunction(s, dirs[addr], f) {
			funcs[addr] = f
			for _, dev := range f.RDMADevices {
				c.emit(f, dev, out)
			}
		}
	}
	for addr := range c.chains {
		if _, ok := byAddr[addr]; !ok {
			delete(c.chains, addr)
		}
	}
	s.update(func(sn *Snapshot) { sn.PCI = funcs })
	return nil
}

func (c *pcieCollector) readFunction(s *Scrape, dir string, f *PCIFunction) bool {
	readSpeed := func(file string) float64 {
		v, err := c.attrs.readString(dir, file)
		if err != nil {
			if !isVanished(err) {
				s.readError("pcie", joinPath(dir, file), err)
			}
			return 0
		}
		if v == "" || strings.HasPrefix(v, "Unknown") {
			return 0
		}
		gt, err := parsePCIeSpeed(v)
		if err != nil {
			s.readError("pcie", joinPath(dir, file), err)
			return 0
		}
		return gt
	}
	readWidth := func(file string) int {
		v, err := c.attrs.readUint(dir, file)
		if err != nil {
			if !isVanished(err) {
				s.readError("pcie", joinPath(dir, file), err)
			}
			return 0
		}
		if v > 32 {
			s.readError("pcie", joinPath(dir, file), fmt.Errorf("implausible width %d", v))
			return 0
		}
		return int(v)
	}
	if _, err := c.cfg.fs.inode(dir); err != nil {
		return false // function removed
	}
	f.CurrentSpeedGTs, f.MaxSpeedGTs = readSpeed("current_link_speed"), readSpeed("max_link_speed")
	f.CurrentWidth, f.MaxWidth = readWidth("current_link_width"), readWidth("max_link_width")
	if f.CurrentSpeedGTs > 0 && f.CurrentWidth > 0 {
		f.CurrentBandwidth = pcieBandwidth(f.CurrentSpeedGTs, f.CurrentWidth)
	}
	if f.MaxSpeedGTs > 0 && f.MaxWidth > 0 {
		f.MaxBandwidth = pcieBandwidth(f.MaxSpeedGTs, f.MaxWidth)
	}

	ch := c.chains[f.Address]
	if ch == nil || c.cfg.due(ch.at, s.Time) {
		ch = c.readChain(dir, f, s.Time)
		c.chains[f.Address] = ch
	}
	f.VendorID, f.DeviceID = ch.vendor, ch.device
	f.AvailableBandwidth, f.LimitedBy = ch.available, ch.limitedBy
	if f.CurrentBandwidth > 0 && (f.AvailableBandwidth == 0 || f.CurrentBandwidth < f.AvailableBandwidth) {
		f.AvailableBandwidth, f.LimitedBy = f.CurrentBandwidth, f.Address
	}

	f.AER = map[string]uint64{}
	for i, sev := range aerSeverities {
		text, err := c.attrs.readString(dir, aerFiles[i])
		if err != nil {
			if !isVanished(err) {
				s.readError("pcie", joinPath(dir, aerFiles[i]), err)
			}
			continue
		}
		total, ok, err := parseAERTotal(text)
		if err != nil {
			s.readError("pcie", joinPath(dir, aerFiles[i]), err)
			continue
		}
		if ok {
			f.AER[sev] = total
		}
	}
	return true
}

// readChain walks from the function up to the root complex, like the
// kernel's pcie_bandwidth_available(): a NIC trained x16 behind a switch
// port trained x8 only gets x8.
func (c *pcieCollector) readChain(dir string, f *PCIFunction, now time.Time) *pcieChain {
	ch := &pcieChain{at: now}
	ch.vendor, _ = readSysfsFile(c.cfg.fs, joinPath(dir, "vendor"))
	ch.device, _ = readSysfsFile(c.cfg.fs, joinPath(dir, "device"))
	for up := filepath.Dir(dir); bdfPattern.MatchString(filepath.Base(up)); up = filepath.Dir(up) {
		sp, err := readSysfsFile(c.cfg.fs, joinPath(up, "current_link_speed"))
		if err != nil {
			continue
		}
		gt, err := parsePCIeSpeed(sp)
		if err != nil {
			continue
		}
		w, err := readSysfsFile(c.cfg.fs, joinPath(up, "current_link_width"))
		if err != nil {
			continue
		}
		width, err := strconv.Atoi(w)
		if err != nil || width <= 0 || width > 32 {
			continue
		}
		if bw := pcieBandwidth(gt, width); ch.available == 0 || bw < ch.available {
			ch.available, ch.limitedBy = bw, filepath.Base(up)
		}
	}
	return ch
}

var (
	aerSeverities = []string{"correctable", "nonfatal", "fatal"}
	aerFiles      = []string{"aer_dev_correctable", "aer_dev_nonfatal", "aer_dev_fatal"}
)

// parseAERTotal finds the TOTAL_ERR_* line of an aer_dev_* file.
func parseAERTotal(text string) (uint64, bool, error) {
	for len(text) > 0 {
		var line string
		line, text, _ = strings.Cut(text, "\n")
		name, val, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || !strings.HasPrefix(name, "TOTAL_ERR_") {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(val), 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("AER %s: %q is not a number", name, truncate(val, 40))
		}
		return v, true, nil
	}
	return 0, false, nil
}

func (c *pcieCollector) emit(f *PCIFunction, dev string, out *Sink) {
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
	if f.CurrentBandwidth > 0 {
		out.emit(pcieBandwidthDesc, f.CurrentBandwidth, dev, a, "current")
	}
	if f.MaxBandwidth > 0 {
		out.emit(pcieBandwidthDesc, f.MaxBandwidth, dev, a, "max")
	}
	if f.AvailableBandwidth > 0 {
		out.emit(pcieBandwidthDesc, f.AvailableBandwidth, dev, a, "available")
	}
	for _, sev := range []string{"correctable", "nonfatal", "fatal"} {
		if v, ok := f.AER[sev]; ok {
			out.emit(pcieAERDesc, float64(v), dev, a, sev)
		}
	}
}

// rdmaVendors are PCI vendor ids of NICs that can do RDMA.
var rdmaVendors = map[string]string{
	"0x15b3": "Mellanox/NVIDIA",
	"0x14e4": "Broadcom",
	"0x8086": "Intel",
	"0x1dd8": "AMD Pensando",
	"0x1d0f": "Amazon",
}

// rdmaCapable keeps Intel and Broadcom functions that can do RoCE (E810,
// X722, NetXtreme-E) and drops their plain Ethernet parts (igb, tg3).
func rdmaCapable(n PCINIC) bool {
	dev, _ := strconv.ParseUint(strings.TrimPrefix(n.DeviceID, "0x"), 16, 16)
	switch n.VendorID {
	case "0x8086":
		if n.Driver != "" {
			return n.Driver == "ice" || n.Driver == "i40e" || n.Driver == "irdma"
		}
		return dev >= 0x1591 && dev <= 0x159b || dev >= 0x188a && dev <= 0x1890 || dev >= 0x37ce && dev <= 0x37d3
	case "0x14e4":
		if n.Driver != "" {
			return n.Driver == "bnxt_en"
		}
		return dev >= 0x16c0 && dev <= 0x16ff || dev >= 0x1750 && dev <= 0x17ff
	}
	return true
}

// scanNICs lists network/InfiniBand-class functions of RDMA vendors. It
// runs only when no RDMA device exists, to tell a missing NIC from a
// missing driver, and at most once per refresh interval.
func (c *pcieCollector) scanNICs(s *Scrape) []PCINIC {
	dir := c.cfg.sys("bus", "pci", "devices")
	names, err := c.cfg.fs.readDirNames(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.readError("pcie", dir, err)
		}
		return nil
	}
	sort.Strings(names)
	var nics []PCINIC
	for _, n := range names {
		fdir := joinPath(dir, n)
		class, err := readSysfsFile(c.cfg.fs, joinPath(fdir, "class"))
		// 0x02xxxx network controller; 0x0c06xx InfiniBand (old cards).
		if err != nil || !(strings.HasPrefix(class, "0x02") || strings.HasPrefix(class, "0x0c06")) {
			continue
		}
		vendor, err := readSysfsFile(c.cfg.fs, joinPath(fdir, "vendor"))
		if err != nil || rdmaVendors[vendor] == "" {
			continue
		}
		nic := PCINIC{Address: n, VendorID: vendor, Class: class}
		nic.DeviceID, _ = readSysfsFile(c.cfg.fs, joinPath(fdir, "device"))
		if drv, err := c.cfg.fs.readlink(joinPath(fdir, "driver")); err == nil {
			nic.Driver = filepath.Base(drv)
		}
		if rdmaCapable(nic) {
			nics = append(nics, nic)
		}
	}
	return nics
}
