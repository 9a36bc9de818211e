package reader

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/roce-exporter/roce_exporter/node"
)

// rdmaSource reads /sys/class/infiniband: devices, ports, counters, GIDs.
type rdmaSource struct {
	r       *Reader
	devices map[string]*rdmaDeviceState

	modules   map[string]bool
	modulesAt time.Time
}

type rdmaDeviceState struct {
	// busy is set while a goroutine reads the device; a read stuck in the
	// kernel keeps it set, and the device is skipped until it returns.
	busy   atomic.Bool
	attrs  *attrCache
	inode  uint64
	info   node.Device
	infoAt time.Time
	ports  map[int]*rdmaPortState
}

type rdmaPortState struct {
	attrs     *attrCache
	linkLayer string
	// activeMTU is 0 where it does not apply (InfiniBand, no netdev).
	activeMTU int
	counters  []counterFile
	hw        []counterFile
	// lifespan is the hw_counters cache period; lifespanKnown is false
	// when the port has no lifespan file.
	lifespan      time.Duration
	lifespanKnown bool
	// listedAt is zero when the port must be listed again.
	listedAt time.Time
	gids     []node.GID
	gidsAt   time.Time
	roceMode string
	// tos is rdma_cm's default_roce_tos; tclass and tclassFile MLNX_OFED's
	// tc/<port>/traffic_class (see node.Port).
	tos        *int
	tclass     *int
	tclassFile bool
}

func init() {
	registerSource(node.SourceRDMA, "RDMA ports: state, rate, counters, GIDs.", newRDMASource)
}

func newRDMASource(r *Reader) source {
	return &rdmaSource{r: r, devices: map[string]*rdmaDeviceState{}}
}

func (c *rdmaSource) close() error {
	c.dropAll()
	return nil
}

func (c *rdmaSource) read(sc *scan) (func(*node.Snapshot), error) {
	mods := c.readModules(sc.Time)
	setModules := func(sn *node.Snapshot) { sn.Modules = mods }

	topo, err := sc.topology()
	if err != nil {
		return setModules, err
	}
	if len(topo.Devices) == 0 {
		c.dropAll()
		if topo.ClassMissing {
			return setModules, errors.Join(ErrNoData, errors.New("no /sys/class/infiniband: RDMA stack not loaded"))
		}
		return setModules, errors.Join(ErrNoData, errors.New("no RDMA devices"))
	}
	live := make(map[string]bool, len(topo.Devices))
	states := make([]*rdmaDeviceState, len(topo.Devices))
	for i, td := range topo.Devices {
		live[td.Name] = true
		st := c.devices[td.Name]
		if st == nil || st.inode != td.Inode {
			// New or re-created device: its counters restart, so no wrap
			// history may carry over.
			if st != nil {
				st.attrs.closeAll()
			}
			st = &rdmaDeviceState{inode: td.Inode, ports: map[int]*rdmaPortState{}, attrs: newAttrCache(c.r.fs)}
			c.devices[td.Name] = st
		}
		states[i] = st
	}
	devs, stuck := c.readDevices(sc, topo.Devices, states)
	present := make([]*node.Device, 0, len(devs))
	unreadable := 0
	for _, d := range devs {
		if d == nil { // vanished mid-read
			continue
		}
		if d.Unreadable != "" {
			unreadable++
		}
		present = append(present, d)
	}
	for name, st := range c.devices {
		if !live[name] && !st.busy.Load() {
			st.attrs.closeAll()
			delete(c.devices, name)
		}
	}
	apply := func(sn *node.Snapshot) { sn.Modules, sn.Devices = mods, present }
	switch {
	case len(stuck) > 0:
		// The other devices are still reported: partial data is more
		// useful than none, and the error says it is partial.
		return apply, fmt.Errorf("%w: reads of %s did not return in time", errPartial, strings.Join(stuck, ", "))
	case unreadable > 0:
		return apply, fmt.Errorf("%w: %d of %d RDMA devices could not be read", errPartial, unreadable, len(present))
	}
	return apply, nil
}

// errPartial marks a read where some devices could not be read.
var errPartial = errors.New("partial data")

func (c *rdmaSource) dropAll() {
	for name, st := range c.devices {
		st.attrs.closeAll()
		delete(c.devices, name)
	}
}

func (c *rdmaSource) readModules(now time.Time) map[string]bool {
	if c.modules != nil && !c.r.due(c.modulesAt, now) {
		return c.modules
	}
	mods := make(map[string]bool, len(node.KernelModules))
	for _, m := range node.KernelModules {
		_, err := c.r.fs.Inode(c.r.sys("module", m))
		mods[m] = err == nil
	}
	c.modules, c.modulesAt = mods, now
	return mods
}

// readDevice reads one device. It returns nil when the device vanished
// mid-read, so no partial view of a removed device remains.
func (c *rdmaSource) readDevice(sc *scan, td *topoDevice, st *rdmaDeviceState) *node.Device {
	if td.portsErr != nil {
		sc.readError(node.SourceRDMA, joinPath(td.Dir, "ports"), td.portsErr)
		return &node.Device{Name: td.Name, Unreadable: "its ports cannot be listed: " + errText(td.portsErr)}
	}
	if c.r.due(st.infoAt, sc.Time) {
		info, ok := c.readDeviceInfo(sc, td)
		if !ok {
			return nil
		}
		st.info, st.infoAt = info, sc.Time
	}
	dev := st.info
	dev.Ports = nil

	livePorts := make(map[int]bool, len(td.Ports))
	for _, tp := range td.Ports {
		livePorts[tp.Number] = true
		ps := st.ports[tp.Number]
		if ps == nil {
			ps = &rdmaPortState{attrs: st.attrs}
			st.ports[tp.Number] = ps
		}
		if p := c.readPort(sc, td, tp, ps, &dev); p != nil {
			dev.Ports = append(dev.Ports, p)
		}
	}
	for n := range st.ports {
		if !livePorts[n] {
			delete(st.ports, n)
		}
	}
	return &dev
}

func (c *rdmaSource) readDeviceInfo(sc *scan, td *topoDevice) (node.Device, bool) {
	d := node.Device{Name: td.Name, Driver: td.Driver, PCIAddress: td.PCIAddress}
	fields := []struct {
		file string
		dst  *string
	}{
		{"fw_ver", &d.FirmwareVersion}, {"hca_type", &d.HCAType}, {"board_id", &d.BoardID},
		{"node_guid", &d.NodeGUID}, {"sys_image_guid", &d.SysImageGUID},
	}
	for _, f := range fields {
		v, err := readSysfsFile(c.r.fs, joinPath(td.Dir, f.file))
		switch {
		case err == nil:
			*f.dst = node.CleanText(v)
		case isVanished(err):
			if _, statErr := c.r.fs.Inode(td.Dir); statErr != nil {
				return d, false // the whole device went away
			}
		default:
			sc.readError(node.SourceRDMA, joinPath(td.Dir, f.file), err)
		}
	}
	nodeType := joinPath(td.Dir, "node_type")
	if v, err := readSysfsFile(c.r.fs, nodeType); err == nil {
		if n, name, perr := node.ParseNodeType(v); perr == nil {
			d.NodeType, d.NodeTypeName = n, name
		} else {
			sc.readError(node.SourceRDMA, nodeType, perr)
		}
	} else if !isVanished(err) {
		sc.readError(node.SourceRDMA, nodeType, err)
	}
	d.VerbsDevices, d.VerbsPresent = c.verbsDevices(sc, td.Name)
	return d, true
}

// errText is an error's cause without the path it names: the reason a
// device could not be read, for a message that names the device already.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// verbsDevices names the /dev/infiniband/uverbsN nodes sysfs says belong to
// the device, and those of them that exist under the /dev root: a container
// without /dev/infiniband sees the device in sysfs but cannot open it.
func (c *rdmaSource) verbsDevices(sc *scan, device string) (expected, present []string) {
	for _, name := range sc.uverbsOf(device) {
		p := filepath.Join(c.r.opts.DevPath, "infiniband", name)
		expected = append(expected, p)
		if _, err := c.r.fs.Inode(p); err == nil {
			present = append(present, p)
		}
	}
	sort.Strings(expected)
	sort.Strings(present)
	return expected, present
}

// uverbsOf returns the uverbs class entries of an RDMA device, from one
// listing of /sys/class/infiniband_verbs per read (made only when a
// device's information is due): each uverbsN entry's ibdev file names the
// device it belongs to.
func (sc *scan) uverbsOf(device string) []string {
	sc.uverbsOnce.Do(func() { sc.uverbs = sc.listUverbs() })
	return sc.uverbs[device]
}

func (sc *scan) listUverbs() map[string][]string {
	dir := sc.r.sys("class", "infiniband_verbs")
	names, err := sc.r.fs.ReadDirNames(dir)
	if err != nil {
		if !isVanished(err) {
			sc.readError(node.SourceRDMA, dir, err)
		}
		return nil
	}
	out := map[string][]string{}
	for _, name := range names {
		if !strings.HasPrefix(name, "uverbs") { // abi_version is a file of the class
			continue
		}
		path := joinPath(dir, name, "ibdev")
		dev, err := readSysfsFile(sc.r.fs, path)
		if err != nil {
			if !isVanished(err) {
				sc.readError(node.SourceRDMA, path, err)
			}
			continue
		}
		out[dev] = append(out[dev], name)
	}
	return out
}

func (c *rdmaSource) readPort(sc *scan, td *topoDevice, tp *topoPort, ps *rdmaPortState, dev *node.Device) *node.Port {
	p := &node.Port{Device: td.Name, Number: tp.Number, Interface: tp.Netdev, BondSlaves: tp.BondSlaves}

	if c.r.due(ps.listedAt, sc.Time) {
		if !c.listPort(sc, tp, ps, dev.Driver) {
			return nil
		}
	}
	p.LinkLayer = ps.linkLayer

	if v, err := ps.attrs.readString(tp.Dir, "state"); err == nil {
		if id, name, perr := node.ParseState(v); perr == nil {
			p.State, p.StateName, p.StateKnown = id, name, true
		} else {
			sc.readError(node.SourceRDMA, joinPath(tp.Dir, "state"), perr)
		}
	} else if isVanished(err) {
		ps.listedAt = time.Time{}
		return nil
	} else {
		sc.readError(node.SourceRDMA, joinPath(tp.Dir, "state"), err)
	}
	if v, err := ps.attrs.readString(tp.Dir, "phys_state"); err == nil {
		if id, name, perr := node.ParsePhysState(v); perr == nil {
			p.PhysState, p.PhysStateName, p.PhysStateKnown = id, name, true
		} else {
			sc.readError(node.SourceRDMA, joinPath(tp.Dir, "phys_state"), perr)
		}
	} else if !isVanished(err) {
		sc.readError(node.SourceRDMA, joinPath(tp.Dir, "phys_state"), err)
	}

	if v, err := ps.attrs.readString(tp.Dir, "rate"); err == nil {
		bits, perr := node.ParseRate(v)
		switch {
		case perr != nil:
			sc.readError(node.SourceRDMA, joinPath(tp.Dir, "rate"), perr)
		case p.Ethernet() && p.State != node.PortStateActive:
			// mlx5 reports "40 Gb/sec (4X QDR)" for a down RoCE port.
		default:
			p.RateBitsPerSecond = bits
		}
	} else if !isVanished(err) {
		sc.readError(node.SourceRDMA, joinPath(tp.Dir, "rate"), err)
	}

	p.Counters = c.readCounters(sc, ps, ps.counters)
	p.HWCounters = c.readCounters(sc, ps, ps.hw)
	p.HWCountersLifespan, p.LifespanKnown = ps.lifespan, ps.lifespanKnown

	if c.r.due(ps.gidsAt, sc.Time) {
		ps.gids = c.readGIDs(sc, tp)
		ps.roceMode = c.readRoCEMode(td.Name, tp.Label)
		ps.tos = c.readRoCETOS(sc, td.Name, tp.Label)
		ps.tclass, ps.tclassFile = c.readTrafficClass(sc, td.Name, tp.Label)
		// The active MTU is configuration derived from the netdev MTU, like
		// the GIDs, so it follows their refresh.
		ps.activeMTU = 0
		if !dev.IWARP() { // iWARP runs over TCP: no RoCE path MTU
			ps.activeMTU = c.readActiveMTU(sc, p)
		}
		ps.gidsAt = sc.Time
	}
	p.ActiveMTU = ps.activeMTU
	p.GIDs = ps.gids
	p.DefaultRoCEMode = ps.roceMode
	p.DefaultRoCETOS = ps.tos
	p.TrafficClass, p.TrafficClassFile = ps.tclass, ps.tclassFile
	return p
}

// listPort reads the port's static layout: link layer and the names of its
// counter files (they change only when the device is re-created).
func (c *rdmaSource) listPort(sc *scan, tp *topoPort, ps *rdmaPortState, driver string) bool {
	ll, err := readSysfsFile(c.r.fs, joinPath(tp.Dir, "link_layer"))
	if err != nil {
		if isVanished(err) {
			if _, statErr := c.r.fs.Inode(tp.Dir); statErr != nil {
				return false
			}
		} else {
			sc.readError(node.SourceRDMA, joinPath(tp.Dir, "link_layer"), err)
		}
	}
	ps.linkLayer = node.CleanText(ll)
	old := make(map[string]*counterFile, len(ps.counters)+len(ps.hw))
	for i := range ps.counters {
		for f := &ps.counters[i]; f != nil; f = f.fallback {
			old[f.path] = f
		}
	}
	for i := range ps.hw {
		old[ps.hw[i].path] = &ps.hw[i]
	}
	ps.counters = mergeCountersExt(
		c.listCounterDir(sc, joinPath(tp.Dir, "counters"), counterDirPMA, driver, old),
		c.listCounterDir(sc, joinPath(tp.Dir, node.CountersExtDir), counterDirPMAExt, driver, old))
	ps.hw = c.listCounterDir(sc, joinPath(tp.Dir, "hw_counters"), counterDirHW, driver, old)
	// lifespan is a setting (how long the kernel caches hw_counters), not a
	// reading: it is read with the layout, not every time.
	ps.lifespanKnown = false
	lifespan := joinPath(tp.Dir, "hw_counters", node.HWCountersLifespanFile)
	if v, err := readSysfsFile(c.r.fs, lifespan); err == nil {
		if ms, perr := parseCounterAt(lifespan, []byte(v)); perr == nil {
			ps.lifespan, ps.lifespanKnown = time.Duration(ms)*time.Millisecond, true
		} else {
			sc.readError(node.SourceRDMA, lifespan, perr)
		}
	} else if !isVanished(err) {
		sc.readError(node.SourceRDMA, lifespan, err)
	}
	ps.listedAt = sc.Time
	return true
}

// counterFile is one counter file of a port, kept open between reads.
type counterFile struct {
	handle    *cachedAttr
	path      string
	canonical string
	wrap      wrapExtender // for 32-bit counters that wrap
	wraps     bool
	// unsupported is set when the file said the device cannot count this
	// ("N/A (no PMA)", ENOSYS): it is not read again until the port is
	// listed again, so a device without a PMA costs no reads per scrape.
	unsupported bool
	// fallback is the 32-bit counters/ file behind a 64-bit counters_ext/
	// one, read only while the 64-bit one is unsupported.
	fallback *counterFile
}

// The counter directories of a port, which name their files differently.
const (
	counterDirPMA    = iota // counters/: IBA PortCounters (+ extended on 4.5+)
	counterDirPMAExt        // counters_ext/: MLNX_OFED's 64-bit PortCountersExtended
	counterDirHW            // hw_counters/: the driver's own names
)

func (c *rdmaSource) listCounterDir(sc *scan, dir string, kind int, driver string, old map[string]*counterFile) []counterFile {
	names, err := c.r.fs.ReadDirNames(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			// Present but unreadable: count it; the rest of the device
			// still reports.
			sc.readError(node.SourceRDMA, dir, err)
		}
		return nil
	}
	sort.Strings(names)
	files := make([]counterFile, 0, len(names))
	taken := make(map[string]bool, len(names))
	// Native mlx5 names win over aliases when a transitional driver shows both.
	sort.SliceStable(names, func(i, j int) bool {
		return !node.IsHWCounterAlias(names[i]) && node.IsHWCounterAlias(names[j])
	})
	for _, raw := range names {
		if kind == counterDirHW && raw == node.HWCountersLifespanFile {
			continue
		}
		f := counterFile{path: joinPath(dir, raw)}
		switch kind {
		case counterDirHW:
			f.canonical = node.CanonicalHWName(raw)
			f.wraps = node.Wraps32(driver, f.canonical)
		case counterDirPMAExt:
			f.canonical = node.CountersExtName(raw)
		default:
			f.canonical = node.SnakeCase(raw)
		}
		if taken[f.canonical] {
			c.r.logger.Debug("duplicate counter after name mapping, keeping the first", "path", f.path, "name", f.canonical)
			continue
		}
		taken[f.canonical] = true
		if prev, ok := old[f.path]; ok {
			// The open file and the path string the attribute cache is
			// keyed by carry over too: a relisting must not reopen every
			// file nor keep two copies of every path.
			f.path, f.handle, f.wrap = prev.path, prev.handle, prev.wrap
		}
		files = append(files, f)
	}
	return files
}

// mergeCountersExt puts the 64-bit counters_ext/ files in the place of the
// counters/ files they extend: mlx4's 32-bit port_rcv_data saturates (or
// reads 0) while counters_ext/port_rcv_data_64 counts on. The 32-bit file
// stays behind as the fallback for a device whose PMA lacks the extended
// attribute.
func mergeCountersExt(pma, ext []counterFile) []counterFile {
	if len(ext) == 0 {
		return pma
	}
	byName := make(map[string]int, len(pma))
	for i := range pma {
		byName[pma[i].canonical] = i
	}
	for _, e := range ext {
		i, ok := byName[e.canonical]
		if !ok {
			byName[e.canonical] = len(pma)
			pma = append(pma, e)
			continue
		}
		narrow := pma[i]
		e.fallback = &narrow
		pma[i] = e
	}
	sort.Slice(pma, func(i, j int) bool { return pma[i].canonical < pma[j].canonical })
	return pma
}

func (c *rdmaSource) readCounters(sc *scan, ps *rdmaPortState, files []counterFile) []node.Counter {
	values := make([]node.Counter, 0, len(files))
	for i := range files {
		f := &files[i]
		for f != nil && f.unsupported {
			f = f.fallback
		}
		if f == nil {
			continue
		}
		raw, err := ps.attrs.readUintVia(&f.handle, f.path)
		for err != nil && isNotSupported(err) {
			// The device cannot count this: no value and no read error,
			// and no read of this file until the port is listed again.
			f.unsupported = true
			if f = f.fallback; f == nil {
				break
			}
			raw, err = ps.attrs.readUintVia(&f.handle, f.path)
		}
		if f == nil {
			continue
		}
		if err == nil && f.fallback != nil && !f.fallback.unsupported {
			raw, err = c.widerOfBoth(ps, f, raw)
		}
		if err != nil {
			if isVanished(err) {
				ps.listedAt = time.Time{} // layout changed: list again next time
			} else {
				// EINVAL, EOPNOTSUPP, EIO, garbage.
				sc.readError(node.SourceRDMA, f.path, err)
			}
			continue
		}
		v := raw
		if f.wraps {
			v = f.wrap.extend(raw)
		}
		values = append(values, node.Counter{Name: f.canonical, Value: v})
	}
	return values
}

// widerOfBoth reads the counters/ file behind a counters_ext/ one and
// returns the larger value. Both count the same packets or words, and where
// they disagree one of them has stopped: a 32-bit PortCounters field
// saturates at 2^32-1, and MLNX_OFED's counters_ext/ reads 0 where the
// firmware does not fill PortCountersExtended (node_exporter's mlx4 fixture
// has counters/port_rcv_packets at 6825908347 and counters_ext's
// port_rcv_packets_64 at 0; on port 2 the other way round). The larger one
// is the one still counting, and the larger of two counters that only rise
// only rises. A 32-bit file that cannot be read is an error and no value:
// the 64-bit value alone could be lower than what was exported before.
func (c *rdmaSource) widerOfBoth(ps *rdmaPortState, ext *counterFile, extValue uint64) (uint64, error) {
	narrow := ext.fallback
	v, err := ps.attrs.readUintVia(&narrow.handle, narrow.path)
	switch {
	case err == nil:
		return max(v, extValue), nil
	case isNotSupported(err):
		narrow.unsupported = true
		return extValue, nil
	}
	return 0, fmt.Errorf("%s beside %s: %w", narrow.path, ext.path, err)
}

// isNotSupported reports a counter the device cannot provide: the kernel
// printed "N/A (no PMA)", or the read failed with ENOSYS, which
// MLNX_OFED's sysfs returns from a PMA counter of a device without a
// process_mad (iWARP).
func isNotSupported(err error) bool {
	return errors.Is(err, node.ErrNotSupported) || errors.Is(err, syscall.ENOSYS)
}

// readRoCEMode reads the rdma_cm default RoCE mode from configfs. The reader
// never creates the configfs directory (that changes kernel state); it reads
// it only where an operator or the doctor already made it.
func (c *rdmaSource) readRoCEMode(device, port string) string {
	v, err := readSysfsFile(c.r.fs, c.r.sys("kernel", "config", "rdma_cm", device, "ports", port, "default_roce_mode"))
	if err != nil {
		return ""
	}
	return node.CleanText(v)
}

// readRoCETOS reads rdma_cm's default ToS from configfs, under the same rule as
// readRoCEMode: only where the directory already exists. Kernels before 4.19 have
// no such file; both cases leave it nil (absent, never 0).
func (c *rdmaSource) readRoCETOS(sc *scan, device, port string) *int {
	path := c.r.sys("kernel", "config", "rdma_cm", device, "ports", port, "default_roce_tos")
	v, err := readSysfsFile(c.r.fs, path)
	if err != nil {
		return nil
	}
	tos, err := node.ParseToS(v)
	if err != nil {
		sc.readError(node.SourceRDMA, path, err)
		return nil
	}
	return &tos
}

// readTrafficClass reads MLNX_OFED's /sys/class/infiniband/<dev>/tc/<port>/traffic_class
// (upstream mlx5 has no tc/ directory).
func (c *rdmaSource) readTrafficClass(sc *scan, device, port string) (*int, bool) {
	path := c.r.sys("class", "infiniband", device, "tc", port, "traffic_class")
	v, err := readSysfsFile(c.r.fs, path)
	if err != nil {
		if !isVanished(err) {
			sc.readError(node.SourceRDMA, path, err)
		}
		return nil, false
	}
	tc, set, err := node.ParseMlx5TrafficClass(v)
	if err != nil {
		sc.readError(node.SourceRDMA, path, fmt.Errorf("%s: %w", path, err))
		return nil, true
	}
	if !set {
		return nil, true
	}
	return &tc, true
}

func (c *rdmaSource) readActiveMTU(sc *scan, p *node.Port) int {
	if !p.Ethernet() || p.Interface == "" {
		return 0
	}
	path := c.r.sys("class", "net", p.Interface, "mtu")
	v, err := readSysfsFile(c.r.fs, path)
	if err != nil {
		if !isVanished(err) {
			sc.readError(node.SourceRDMA, path, err)
		}
		return 0
	}
	mtu, err := parseCounterAt(path, []byte(v))
	if err != nil {
		sc.readError(node.SourceRDMA, path, err)
		return 0
	}
	return node.RoCEActiveMTU(int(min(mtu, 1<<20)))
}
