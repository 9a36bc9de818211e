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
	"strings"
)

// Node describes one machine.
type Node struct {
	Devices []Device
	Modules []string
	// UnboundNICs are PCI network functions without an RDMA device (for
	// the "NIC present, driver missing" case).
	UnboundNICs []PCIFunction
}

// PCIFunction is a bare PCI function.
type PCIFunction struct {
	Address, Vendor, Device, Class, Driver string
}

// Device is one RDMA device with one port and its netdev.
type Device struct {
	Name       string
	Driver     string // PCI driver: mlx5_core, bnxt_en
	PCIAddress string
	RootPort   string // upstream port BDF
	Vendor     string
	DeviceID   string
	HCAType    string
	BoardID    string
	FWVer      string
	NodeGUID   string
	MAC        string

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
	RootSpeed                  string
	RootWidth                  int
	AERCorrectable             int

	// Counters nil means no counters/ directory (bnxt_re, irdma);
	// CountersLoop makes counters/ a symlink loop: present but unreadable.
	Counters     map[string]string
	CountersLoop bool
	HWCounters   map[string]string

	GIDs     []GID
	GIDSlots int // total slots in gids/ (unused ones all-zero)

	RoCEMode   string // configfs default_roce_mode; "" = directory not created
	Uverbs     int
	DevMissing bool // uverbs node absent from /dev (container without the device)
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
	// Every directory gets a file the real sysfs has there: git cannot
	// carry an empty directory, and a fixture checked out without
	// sys/module would model a node with no driver loaded.
	for _, m := range n.Modules {
		w.file("sys/module/"+m+"/initstate", "live")
	}
	w.dir("sys/class/infiniband")
	w.loopback()
	for _, d := range n.Devices {
		w.device(d)
	}
	for _, f := range n.UnboundNICs {
		w.pciFunction(f.Address, "", f.Vendor, f.Device, f.Class, f.Driver)
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

func (w *writer) pciFunction(addr, root, vendor, device, class, driver string) string {
	// The root complex directory is named after the root bus.
	parent := "sys/devices/pci" + addr[:7]
	if root != "" {
		parent = "sys/devices/pci" + root[:7] + "/" + root
	}
	fdir := parent + "/" + addr
	w.file(fdir+"/vendor", vendor)
	w.file(fdir+"/device", device)
	w.file(fdir+"/class", class)
	w.file(fdir+"/numa_node", "0")
	w.link("sys/bus/pci/devices/"+addr, fdir)
	if driver != "" {
		w.link("sys/bus/pci/drivers/"+driver+"/"+addr, fdir)
		w.link(fdir+"/driver", "sys/bus/pci/drivers/"+driver)
	}
	return fdir
}

func (w *writer) device(d Device) {
	rootDir := "sys/devices/pci" + d.RootPort[:7] + "/" + d.RootPort
	w.file(rootDir+"/current_link_speed", d.RootSpeed)
	w.file(rootDir+"/current_link_width", fmt.Sprint(d.RootWidth))
	w.file(rootDir+"/max_link_speed", d.RootSpeed)
	w.file(rootDir+"/max_link_width", fmt.Sprint(d.RootWidth))

	class := "0x020000"
	if d.LinkLayer == "InfiniBand" {
		class = "0x020700"
	}
	fdir := w.pciFunction(d.PCIAddress, d.RootPort, d.Vendor, d.DeviceID, class, d.Driver)
	w.file(fdir+"/current_link_speed", d.PCIeCurSpeed)
	w.file(fdir+"/max_link_speed", d.PCIeMaxSpeed)
	w.file(fdir+"/current_link_width", fmt.Sprint(d.PCIeCurWidth))
	w.file(fdir+"/max_link_width", fmt.Sprint(d.PCIeMaxWidth))
	w.raw(fdir+"/aer_dev_correctable", aerText([]string{"RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr", "CorrIntErr", "HeaderOF"}, "TOTAL_ERR_COR", d.AERCorrectable))
	w.raw(fdir+"/aer_dev_nonfatal", aerText(aerUncorrectable, "TOTAL_ERR_NONFATAL", 0))
	w.raw(fdir+"/aer_dev_fatal", aerText(aerUncorrectable, "TOTAL_ERR_FATAL", 0))

	ib := fdir + "/infiniband/" + d.Name
	w.link("sys/class/infiniband/"+d.Name, ib)
	w.link(ib+"/device", fdir)
	w.file(ib+"/node_type", "1: CA")
	w.file(ib+"/node_guid", d.NodeGUID)
	w.file(ib+"/sys_image_guid", d.NodeGUID)
	w.file(ib+"/fw_ver", d.FWVer)
	if d.HCAType != "" {
		w.file(ib+"/hca_type", d.HCAType)
	}
	if d.BoardID != "" {
		w.file(ib+"/board_id", d.BoardID)
	}
	w.file(ib+"/hw_rev", "0x0")
	w.file(ib+"/node_desc", "node01 "+d.Name)

	port := ib + "/ports/1"
	w.file(port+"/state", d.State)
	w.file(port+"/phys_state", d.PhysState)
	w.file(port+"/rate", d.Rate)
	w.file(port+"/link_layer", d.LinkLayer)
	lid := d.LID
	if lid == "" {
		lid = "0x0"
	}
	w.file(port+"/lid", lid)
	w.file(port+"/sm_lid", "0x0")
	w.file(port+"/lid_mask_count", "0")
	w.file(port+"/sm_sl", "0")
	w.file(port+"/cap_mask", "0x00010000")
	switch {
	case d.CountersLoop:
		w.dir(port)
		if w.err == nil {
			w.err = os.Symlink("counters", w.path(port+"/counters"))
		}
	case d.Counters != nil:
		for _, k := range slices.Sorted(maps.Keys(d.Counters)) {
			w.raw(port+"/counters/"+k, d.Counters[k]+"\n")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(d.HWCounters)) {
		w.raw(port+"/hw_counters/"+k, d.HWCounters[k]+"\n")
	}
	gids := map[int]GID{}
	for _, g := range d.GIDs {
		gids[g.Index] = g
	}
	for i := 0; i < d.GIDSlots; i++ {
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
	if d.RoCEMode != "" {
		w.file("sys/kernel/config/rdma_cm/"+d.Name+"/ports/1/default_roce_mode", d.RoCEMode)
		w.file("sys/kernel/config/rdma_cm/"+d.Name+"/ports/1/default_roce_tos", "106")
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

	if d.Netdev != "" {
		nd := fdir + "/net/" + d.Netdev
		w.link("sys/class/net/"+d.Netdev, nd)
		w.link(nd+"/device", fdir)
		w.file(nd+"/mtu", fmt.Sprint(d.MTU))
		w.file(nd+"/operstate", d.OperState)
		w.file(nd+"/carrier", d.Carrier)
		w.file(nd+"/carrier_changes", fmt.Sprint(d.CarrierChanges))
		w.file(nd+"/carrier_up_count", fmt.Sprint((d.CarrierChanges+1)/2))
		w.file(nd+"/carrier_down_count", fmt.Sprint(d.CarrierChanges/2))
		w.file(nd+"/speed", d.Speed)
		w.file(nd+"/duplex", "full")
		w.file(nd+"/address", d.MAC)
		w.file(nd+"/type", map[bool]string{true: "32", false: "1"}[d.LinkLayer == "InfiniBand"])
		w.file(nd+"/dev_port", "0")
	}
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
