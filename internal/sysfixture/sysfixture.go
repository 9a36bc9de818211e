// Package sysfixture writes realistic sysfs trees of RDMA nodes: the same
// symlink structure as a live kernel (class entries linking into
// /sys/devices, relative device/driver links), values in the kernel's
// formats. The committed fixtures under collector/testdata and the scale
// fixtures of the benchmarks both come from here.
package sysfixture

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/roce-exporter/roce_exporter/node"
)

// Node describes one machine.
type Node struct {
	Devices []Device
	Modules []string
	// UnboundNICs are PCI network functions without an RDMA device: a NIC
	// whose driver is missing, or the second port of a RoCE LAG, whose
	// RDMA device lives on the first.
	UnboundNICs []PCIFunction
	// Bonds are bonding masters over netdevs of the devices and functions.
	Bonds []Bond
	// GPU is the GPU side of the node (GPUs, the bridges above GPUs and
	// NICs, IOMMU, /proc files); nil for a node without GPUs.
	GPU *GPUSide
}

// PCIFunction is a bare PCI function, with a netdev when Netdev is set.
type PCIFunction struct {
	Address, Vendor, Device, Class, Driver string
	RootPort                               string // upstream port BDF; "" = on the root bus
	Netdev, MAC                            string
	MTU                                    int
	Speed                                  string
}

// Bond is a bonding master (drivers/net/bonding/bond_sysfs.c): the
// bonding module lists it in /sys/class/net/bonding_masters, a regular file,
// and links it with its slaves through master, upper_<bond> and
// lower_<slave>.
type Bond struct {
	Name   string
	Mode   string // bonding/mode as printed: "802.3ad 4", "active-backup 1"
	Slaves []string
	MAC    string
	MTU    int
	Speed  string // Mb/s, the sum of the active slaves for 802.3ad
}

// Device is one RDMA device with one port and its netdev.
type Device struct {
	Name       string
	Driver     string // PCI driver: mlx5_core, bnxt_en
	PCIAddress string
	// RootPort is the upstream port BDF, or the chain of bridges from the
	// root port down ("0000:15:01.0/0000:16:00.0/0000:17:00.0") for a
	// function behind a PCIe switch.
	RootPort string
	Vendor   string
	DeviceID string
	HCAType  string
	BoardID  string
	FWVer    string
	NodeGUID string
	MAC      string

	LinkLayer string
	State     string
	PhysState string
	Rate      string
	LID       string

	Netdev         string
	MTU            int
	OperState      string
	Carrier        string
	CarrierChanges int
	Speed          string // Mb/s as the kernel prints it, "-1" when unknown

	PCIeCurSpeed, PCIeMaxSpeed string
	PCIeCurWidth, PCIeMaxWidth int
	// RootSpeed and RootWidth are the trained link and the capability of
	// the port above the function (a slot's root port, or the switch port
	// of a chain): a Gen4 slot is 16 GT/s.
	RootSpeed          string
	RootWidth          int
	AERCorrectable     int
	RootAERCorrectable int

	// Counters nil means no counters/ directory (bnxt_re, irdma);
	// CountersLoop makes counters/ a symlink loop: present but unreadable.
	Counters     map[string]string
	CountersLoop bool
	// CountersExt is MLNX_OFED 2.x/3.x's counters_ext/ (64-bit
	// PortCountersExtended); nil means none.
	CountersExt map[string]string
	HWCounters  map[string]string
	// DeviceHWCounters is the device-level hw_counters/ (efa's admin
	// command statistics); nil means none.
	DeviceHWCounters map[string]string

	GIDs     []GID
	GIDSlots int // total slots in gids/ (unused ones all-zero)

	// NodeType is node_type as the kernel prints it; "" is "1: CA".
	NodeType string
	// NoDriverAttrs leaves out hw_rev, which drivers such as mlx5 and
	// bnxt_re add and efa does not.
	NoDriverAttrs bool
	// PhysFn makes the device an SR-IOV virtual function of the PF at
	// that address: the VF's function gets a physfn link, the PF
	// sriov_numvfs and virtfn<n> links.
	PhysFn string
	// MorePorts are ports 2, 3, ... of a multi-port device (mlx4), their
	// netdevs on the same PCI function.
	MorePorts []Port

	RoCEMode string // configfs default_roce_mode; "" = directory not created
	// TrafficClass is the content of MLNX_OFED's tc/1/traffic_class ("Global
	// tclass=106\n", or "" for a file with no global class); nil = no tc/ directory
	// (upstream mlx5).
	TrafficClass *string
	Uverbs       int
	DevMissing   bool // uverbs node absent from /dev (container without the device)
}

// Port is a port after the first of a device; the first port's fields are
// the Device's own.
type Port struct {
	LinkLayer, State, PhysState, Rate, LID string
	Counters, CountersExt, HWCounters      map[string]string
	GIDs                                   []GID
	GIDSlots                               int
	Netdev, MAC                            string
}

// GID is one populated GID slot.
type GID struct {
	Index int
	GID   string
	Type  string
	Ndev  string
}

// Write creates the tree under root (root/sys, root/dev). root must not exist.
func Write(root string, n Node) error {
	if _, err := os.Lstat(root); err == nil {
		return fmt.Errorf("%s already exists", root)
	}
	w := &writer{root: root}
	if n.GPU != nil {
		w.numa = n.GPU.NUMA
	}
	// Every directory gets a file the real sysfs has there: git cannot
	// carry an empty directory, and a fixture checked out without
	// sys/module would model a node with no driver loaded.
	for _, m := range n.Modules {
		w.file("sys/module/"+m+"/initstate", "live")
	}
	w.dir("sys/class/infiniband")
	// A node without an RDMA device still has a /dev (--path.dev must
	// exist); null, as an empty file, is what keeps it in git.
	w.raw("dev/null", "")
	w.loopback()
	for _, d := range n.Devices {
		w.device(d)
	}
	for _, f := range n.UnboundNICs {
		fdir := w.pciFunction(f.Address, f.RootPort, f.Vendor, f.Device, f.Class, f.Driver)
		if f.Netdev != "" {
			w.netdev(fdir, f.Netdev, netdevAttrs{mac: f.MAC, mtu: f.MTU, operState: "up", carrier: "1", carrierChanges: 2, speed: f.Speed, typ: "1"})
		}
	}
	w.sriov(n.Devices)
	w.bonds(n.Bonds)
	if n.GPU != nil {
		w.gpuSide(n.GPU, nicAddresses(n.Devices))
	}
	return w.err
}

// WriteBare creates a node without the infiniband class (RDMA stack not loaded).
func WriteBare(root string, n Node) error {
	if err := Write(root, n); err != nil {
		return err
	}
	return os.Remove(filepath.Join(root, "sys/class/infiniband"))
}

type writer struct {
	root string
	err  error
	// netdevs maps each interface written to its directory, for the links
	// between bonds and their slaves.
	netdevs map[string]string
	// numa is the numa_node of PCI functions by address; 0 when unlisted.
	numa map[string]int
	// pciDirs maps each PCI function written to its directory.
	pciDirs map[string]string
}

func (w *writer) path(rel string) string { return filepath.Join(w.root, rel) }

func (w *writer) dir(rel string) {
	if w.err == nil {
		w.err = os.MkdirAll(w.path(rel), 0o755)
	}
}

// file writes content followed by a newline, as sysfs show() functions do.
func (w *writer) file(rel, content string) {
	w.raw(rel, content+"\n")
}

func (w *writer) raw(rel, content string) {
	if p, ok := w.parent(rel); ok {
		w.err = os.WriteFile(p, []byte(content), 0o444)
	}
}

// parent creates the directory rel goes into and returns rel's full path;
// ok is false once an earlier step has failed.
func (w *writer) parent(rel string) (p string, ok bool) {
	if w.err != nil {
		return "", false
	}
	p = w.path(rel)
	w.err = os.MkdirAll(filepath.Dir(p), 0o755)
	return p, w.err == nil
}

// link creates rel as a relative symlink to target (both root-relative).
func (w *writer) link(rel, target string) {
	p, ok := w.parent(rel)
	if !ok {
		return
	}
	r, err := filepath.Rel(filepath.Dir(p), w.path(target))
	if err != nil {
		w.err = err
		return
	}
	w.err = os.Symlink(r, p)
}

// loopback is the lo every Linux node has: sys/class/net is never empty.
func (w *writer) loopback() {
	dir := "sys/devices/virtual/net/lo"
	w.file(dir+"/mtu", "65536")
	w.file(dir+"/operstate", "unknown")
	w.file(dir+"/carrier", "1")
	w.file(dir+"/type", "772")
	w.file(dir+"/address", "00:00:00:00:00:00")
	w.file(dir+"/flags", "0x9")
	w.link("sys/class/net/lo", dir)
}

// pciDir is where the function at addr sits under /sys/devices: behind its
// root port, or on the root bus when root is "".
func pciDir(addr, root string) string {
	if root == "" {
		return "sys/devices/pci" + addr[:7] + "/" + addr
	}
	return "sys/devices/pci" + root[:7] + "/" + root + "/" + addr
}

func (w *writer) pciFunction(addr, root, vendor, device, class, driver string) string {
	// The root complex directory is named after the root bus.
	fdir := pciDir(addr, root)
	if w.pciDirs == nil {
		w.pciDirs = map[string]string{}
	}
	w.pciDirs[addr] = fdir
	w.file(fdir+"/vendor", vendor)
	w.file(fdir+"/device", device)
	w.file(fdir+"/class", class)
	w.file(fdir+"/numa_node", fmt.Sprint(w.numa[addr]))
	w.link("sys/bus/pci/devices/"+addr, fdir)
	if driver != "" {
		w.link("sys/bus/pci/drivers/"+driver+"/"+addr, fdir)
		w.link(fdir+"/driver", "sys/bus/pci/drivers/"+driver)
	}
	return fdir
}

func (w *writer) device(d Device) {
	if d.RootPort != "" {
		rootDir := "sys/devices/pci" + d.RootPort[:7] + "/" + d.RootPort
		w.file(rootDir+"/current_link_speed", d.RootSpeed)
		w.file(rootDir+"/current_link_width", fmt.Sprint(d.RootWidth))
		w.file(rootDir+"/max_link_speed", d.RootSpeed)
		w.file(rootDir+"/max_link_width", fmt.Sprint(d.RootWidth))
		w.aer(rootDir, d.RootAERCorrectable)
	}

	class := "0x020000"
	if d.LinkLayer == "InfiniBand" {
		class = "0x020700"
	}
	fdir := w.pciFunction(d.PCIAddress, d.RootPort, d.Vendor, d.DeviceID, class, d.Driver)
	// The link attributes exist only on a function with a PCI Express
	// capability (pcie_dev_attrs_are_visible); a VM's bare function has
	// none.
	if d.PCIeCurSpeed != "" {
		w.file(fdir+"/current_link_speed", d.PCIeCurSpeed)
		w.file(fdir+"/max_link_speed", d.PCIeMaxSpeed)
		w.file(fdir+"/current_link_width", fmt.Sprint(d.PCIeCurWidth))
		w.file(fdir+"/max_link_width", fmt.Sprint(d.PCIeMaxWidth))
	}
	w.aer(fdir, d.AERCorrectable)

	ib := fdir + "/infiniband/" + d.Name
	w.link("sys/class/infiniband/"+d.Name, ib)
	w.link(ib+"/device", fdir)
	nodeType := d.NodeType
	if nodeType == "" {
		nodeType = "1: CA"
	}
	w.file(ib+"/node_type", nodeType)
	w.file(ib+"/node_guid", d.NodeGUID)
	w.file(ib+"/sys_image_guid", d.NodeGUID)
	w.file(ib+"/fw_ver", d.FWVer)
	if d.HCAType != "" {
		w.file(ib+"/hca_type", d.HCAType)
	}
	if d.BoardID != "" {
		w.file(ib+"/board_id", d.BoardID)
	}
	if !d.NoDriverAttrs {
		w.file(ib+"/hw_rev", "0x0")
	}
	w.file(ib+"/node_desc", "node01 "+d.Name)
	for _, k := range slices.Sorted(maps.Keys(d.DeviceHWCounters)) {
		w.raw(ib+"/hw_counters/"+k, d.DeviceHWCounters[k]+"\n")
	}

	w.port(ib+"/ports/1", Port{
		LinkLayer: d.LinkLayer, State: d.State, PhysState: d.PhysState, Rate: d.Rate, LID: d.LID,
		Counters: d.Counters, CountersExt: d.CountersExt, HWCounters: d.HWCounters, GIDs: d.GIDs, GIDSlots: d.GIDSlots,
	}, d.CountersLoop)
	for i, p := range d.MorePorts {
		w.port(fmt.Sprintf("%s/ports/%d", ib, i+2), p, false)
	}
	if d.RoCEMode != "" {
		w.file("sys/kernel/config/rdma_cm/"+d.Name+"/ports/1/default_roce_mode", d.RoCEMode)
		w.file("sys/kernel/config/rdma_cm/"+d.Name+"/ports/1/default_roce_tos", strconv.Itoa(node.DefaultRoCETrafficClass))
	}

	if d.TrafficClass != nil {
		w.file(ib+"/tc/1/traffic_class", *d.TrafficClass)
	}

	uv := fmt.Sprintf("uverbs%d", d.Uverbs)
	verbs := fdir + "/infiniband_verbs/" + uv
	w.file(verbs+"/ibdev", d.Name)
	w.file(verbs+"/abi_version", "1")
	w.file(verbs+"/dev", fmt.Sprintf("231:%d", 192+d.Uverbs))
	w.link("sys/class/infiniband_verbs/"+uv, verbs)
	if !d.DevMissing {
		w.raw("dev/infiniband/"+uv, "")
	}

	typ := map[bool]string{true: "32", false: "1"}[d.LinkLayer == "InfiniBand"]
	attrs := netdevAttrs{mac: d.MAC, mtu: d.MTU, operState: d.OperState, carrier: d.Carrier, carrierChanges: d.CarrierChanges, speed: d.Speed, typ: typ}
	if d.Netdev != "" {
		w.netdev(fdir, d.Netdev, attrs)
	}
	for i, p := range d.MorePorts {
		if p.Netdev != "" {
			a := attrs
			a.mac, a.devPort = p.MAC, i+1
			w.netdev(fdir, p.Netdev, a)
		}
	}
}

// port writes one ports/<n> directory.
func (w *writer) port(port string, p Port, countersLoop bool) {
	w.file(port+"/state", p.State)
	w.file(port+"/phys_state", p.PhysState)
	w.file(port+"/rate", p.Rate)
	w.file(port+"/link_layer", p.LinkLayer)
	lid := p.LID
	if lid == "" {
		lid = "0x0"
	}
	w.file(port+"/lid", lid)
	w.file(port+"/sm_lid", "0x0")
	w.file(port+"/lid_mask_count", "0")
	w.file(port+"/sm_sl", "0")
	w.file(port+"/cap_mask", "0x00010000")
	switch {
	case countersLoop:
		w.dir(port)
		if w.err == nil {
			w.err = os.Symlink("counters", w.path(port+"/counters"))
		}
	case p.Counters != nil:
		for _, k := range slices.Sorted(maps.Keys(p.Counters)) {
			w.raw(port+"/counters/"+k, p.Counters[k]+"\n")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(p.CountersExt)) {
		w.raw(port+"/counters_ext/"+k, p.CountersExt[k]+"\n")
	}
	for _, k := range slices.Sorted(maps.Keys(p.HWCounters)) {
		w.raw(port+"/hw_counters/"+k, p.HWCounters[k]+"\n")
	}
	gids := map[int]GID{}
	for _, g := range p.GIDs {
		gids[g.Index] = g
	}
	for i := 0; i < p.GIDSlots; i++ {
		g, ok := gids[i]
		if !ok {
			// An empty slot reads all zeros; its types/ndevs files exist on
			// a real kernel but fail with EINVAL, which a plain file cannot
			// do, so they are left out.
			w.file(fmt.Sprintf("%s/gids/%d", port, i), "0000:0000:0000:0000:0000:0000:0000:0000")
			continue
		}
		w.file(fmt.Sprintf("%s/gids/%d", port, i), g.GID)
		w.file(fmt.Sprintf("%s/gid_attrs/types/%d", port, i), g.Type)
		w.file(fmt.Sprintf("%s/gid_attrs/ndevs/%d", port, i), g.Ndev)
	}
}

// netdevAttrs are the /sys/class/net/<if> files of an interface.
type netdevAttrs struct {
	mac, operState, carrier, speed, typ string
	mtu, carrierChanges, devPort        int
}

// netdev writes an interface of the PCI function at fdir.
func (w *writer) netdev(fdir, name string, a netdevAttrs) {
	nd := fdir + "/net/" + name
	w.link("sys/class/net/"+name, nd)
	w.link(nd+"/device", fdir)
	w.netdevFiles(nd, a)
	w.file(nd+"/dev_port", fmt.Sprint(a.devPort))
}

func (w *writer) netdevFiles(nd string, a netdevAttrs) {
	if w.netdevs == nil {
		w.netdevs = map[string]string{}
	}
	w.netdevs[filepath.Base(nd)] = nd
	w.file(nd+"/mtu", fmt.Sprint(a.mtu))
	w.file(nd+"/operstate", a.operState)
	w.file(nd+"/carrier", a.carrier)
	w.file(nd+"/carrier_changes", fmt.Sprint(a.carrierChanges))
	w.file(nd+"/carrier_up_count", fmt.Sprint((a.carrierChanges+1)/2))
	w.file(nd+"/carrier_down_count", fmt.Sprint(a.carrierChanges/2))
	w.file(nd+"/speed", a.speed)
	w.file(nd+"/duplex", "full")
	w.file(nd+"/address", a.mac)
	w.file(nd+"/type", a.typ)
}

// sriov links every virtual function with its PF (drivers/pci/iov.c): the
// VF's physfn, the PF's virtfn<n> and its sriov_totalvfs/sriov_numvfs.
func (w *writer) sriov(devs []Device) {
	dirs := map[string]string{}
	for _, d := range devs {
		dirs[d.PCIAddress] = pciDir(d.PCIAddress, d.RootPort)
	}
	vfs := map[string]int{}
	for _, d := range devs {
		if d.PhysFn == "" {
			continue
		}
		pf, ok := dirs[d.PhysFn]
		if !ok {
			w.err = fmt.Errorf("%s: physfn %s is not a device of the node", d.Name, d.PhysFn)
			return
		}
		vf := dirs[d.PCIAddress]
		w.link(vf+"/physfn", pf)
		w.link(fmt.Sprintf("%s/virtfn%d", pf, vfs[d.PhysFn]), vf)
		vfs[d.PhysFn]++
	}
	for _, pf := range slices.Sorted(maps.Keys(vfs)) {
		w.file(dirs[pf]+"/sriov_totalvfs", "8")
		w.file(dirs[pf]+"/sriov_numvfs", fmt.Sprint(vfs[pf]))
	}
}

// bonds writes the bonding masters, a virtual device each, linked with
// their slaves as the kernel links adjacent devices (netdev_adjacent).
func (w *writer) bonds(bonds []Bond) {
	if len(bonds) == 0 {
		return
	}
	var names []string
	for _, b := range bonds {
		names = append(names, b.Name)
		nd := "sys/devices/virtual/net/" + b.Name
		w.link("sys/class/net/"+b.Name, nd)
		w.netdevFiles(nd, netdevAttrs{mac: b.MAC, mtu: b.MTU, operState: "up", carrier: "1", carrierChanges: 1, speed: b.Speed, typ: "1"})
		w.file(nd+"/bonding/mode", b.Mode)
		w.file(nd+"/bonding/slaves", strings.Join(b.Slaves, " "))
		w.file(nd+"/bonding/mii_status", "up")
		for _, s := range b.Slaves {
			sd, ok := w.netdevs[s]
			if !ok {
				w.err = fmt.Errorf("bond %s: slave %s is not an interface of the node", b.Name, s)
				return
			}
			w.link(nd+"/lower_"+s, sd)
			w.link(sd+"/upper_"+b.Name, nd)
			w.link(sd+"/master", nd)
			w.file(sd+"/bonding_slave/state", "active")
		}
	}
	// A regular file in a directory of links: what procfs and
	// node_exporter have to skip.
	w.file("sys/class/net/bonding_masters", strings.Join(names, " "))
}

// aer writes the AER statistics a function or port with an AER capability
// has (drivers/pci/pcie/aer.c, aer_stats_attrs): root ports and switch
// ports as well as endpoints.
func (w *writer) aer(dir string, correctable int) {
	w.raw(dir+"/aer_dev_correctable", aerText([]string{"RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr", "CorrIntErr", "HeaderOF"}, "TOTAL_ERR_COR", correctable))
	w.raw(dir+"/aer_dev_nonfatal", aerText(aerUncorrectable, "TOTAL_ERR_NONFATAL", 0))
	w.raw(dir+"/aer_dev_fatal", aerText(aerUncorrectable, "TOTAL_ERR_FATAL", 0))
}

// aerUncorrectable are the rows of aer_dev_nonfatal and aer_dev_fatal.
var aerUncorrectable = []string{"Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt", "RxOF", "MalfTLP", "ECRC", "UnsupReq", "ACSViol"}

func aerText(names []string, total string, n int) string {
	var b strings.Builder
	for i, name := range names {
		v := 0
		if i == 0 {
			v = n
		}
		fmt.Fprintf(&b, "%s %d\n", name, v)
	}
	fmt.Fprintf(&b, "%s %d\n", total, n)
	return b.String()
}
