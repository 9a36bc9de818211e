package collector

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/Mellanox/rdmamap"

	"github.com/roce-exporter/roce_exporter/config"
)

func init() {
	registerCollector("rdma", "RDMA devices and ports from /sys/class/infiniband: state, rate, counters, hw_counters, GID table.",
		true, phaseSource, newRDMACollector)
}

var (
	deviceInfoDesc = newGaugeDesc(namespace+"_device_info",
		"RDMA device metadata; value is always 1.",
		"device", "driver", "hca_type", "board_id", "firmware_version", "node_guid", "pci_address")
	portInfoDesc = newGaugeDesc(namespace+"_port_info",
		"RDMA port metadata; value is always 1.", "device", "port", "link_layer", "interface")
	portStateDesc = newGaugeDesc(namespace+"_port_state_id",
		"Logical port state: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER.", "device", "port")
	portPhysStateDesc = newGaugeDesc(namespace+"_port_physical_state_id",
		"Physical port state: 1 Sleep, 2 Polling, 3 Disabled, 4 PortConfigurationTraining, 5 LinkUp, 6 LinkErrorRecovery, 7 PhyTest.",
		"device", "port")
	portUpDesc = newGaugeDesc(namespace+"_port_up",
		"1 if the port is ACTIVE with the physical link up, else 0.", "device", "port")
	portRateDesc = newGaugeDesc(namespace+"_port_rate_bytes_per_second",
		"Port signalling rate. Absent on a down RoCE port, whose sysfs rate is a placeholder.", "device", "port")
	portActiveMTUDesc = newGaugeDesc(namespace+"_port_active_mtu_bytes",
		"RoCE path MTU the port can use: the largest IB MTU <= netdev MTU - 96 bytes of RoCE headers.", "device", "port")
	gidInfoDesc = newGaugeDesc(namespace+"_gid_info",
		"Populated GID table slot; value is always 1. Cached for --collector.rdma.gid-refresh.",
		"device", "port", "index", "gid", "type", "interface")
	lifespanDesc = newGaugeDesc(namespace+"_hw_counters_lifespan_seconds",
		"How long the kernel caches hw_counters values (the hw_counters/lifespan file).", "device", "port")
	defaultRoCEModeDesc = newGaugeDesc(namespace+"_default_roce_mode_info",
		"Default RoCE mode used by rdma_cm, from configfs, where the device directory exists; value is always 1.",
		"device", "port", "mode")
)

// modulesOfInterest are the kernel modules the doctor reasons about.
var modulesOfInterest = []string{
	"ib_core", "ib_uverbs", "rdma_cm", "rdma_ucm",
	"mlx5_core", "mlx5_ib", "mlx4_core", "mlx4_ib",
	"bnxt_en", "bnxt_re", "ice", "irdma", "ionic", "ionic_rdma", "efa",
}

type rdmaCollector struct {
	cfg     *Config
	logger  *slog.Logger
	devices map[string]*rdmaDeviceState
	descMu  sync.Mutex
	descs   map[string]*Desc

	modules   map[string]bool
	modulesAt time.Time
}

type rdmaDeviceState struct {
	// busy is set while a goroutine reads the device; a read stuck in the
	// kernel keeps it set, and the device is skipped until it returns.
	busy   atomic.Bool
	attrs  *attrCache
	sink   Sink
	inode  uint64
	info   RDMADevice
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
	// lifespanSeconds is -1 when the port has no lifespan file.
	lifespanSeconds float64
	// listedAt is zero when the port must be listed again.
	listedAt time.Time
	gids     []GID
	gidsAt   time.Time
	roceMode string
}

type counterFile struct {
	handle    *cachedAttr
	path      string
	canonical string
	desc      *Desc
	scale     float64
	gauge     bool
	wraps     bool // 32-bit counter extended to 64 bits across scrapes
	last      uint64
	high      uint64 // 2^32 times the number of wraps seen
	seen      bool
}

func newRDMACollector(cfg *Config, logger *slog.Logger) (Collector, error) {
	return &rdmaCollector{
		cfg: cfg, logger: logger,
		devices: map[string]*rdmaDeviceState{},
		descs:   map[string]*Desc{},
	}, nil
}

func (c *rdmaCollector) Close() error {
	c.dropAll()
	return nil
}

// desc returns the cached family of a counter file. The type is part of
// the name already (gauges have no _total), so the name is the key.
func (c *rdmaCollector) desc(name, help string, typ metricType) *Desc {
	c.descMu.Lock()
	defer c.descMu.Unlock()
	d, ok := c.descs[name]
	if !ok {
		d = newDesc(name, help, typ, "device", "port")
		c.descs[name] = d
	}
	return d
}

func (c *rdmaCollector) Update(s *Scrape, out *Sink) error {
	mods := c.readModules(s.Time)
	s.update(func(sn *Snapshot) { sn.Modules = mods })

	topo, err := s.Topology()
	if err != nil {
		return err
	}
	if len(topo.Devices) == 0 {
		c.dropAll()
		if topo.ClassMissing {
			return errors.Join(ErrNoData, errors.New("no /sys/class/infiniband: RDMA stack not loaded"))
		}
		return errors.Join(ErrNoData, errors.New("no RDMA devices"))
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
			st = &rdmaDeviceState{inode: td.Inode, ports: map[int]*rdmaPortState{}, attrs: newAttrCache(c.cfg.fs)}
			c.devices[td.Name] = st
		}
		states[i] = st
	}
	devs, stuck := c.readDevices(s, topo.Devices, states)
	present := make([]*RDMADevice, 0, len(devs))
	for i, d := range devs {
		if d == nil {
			continue // vanished mid-scrape, or stuck
		}
		out.appendSink(&states[i].sink)
		present = append(present, d)
	}
	for name, st := range c.devices {
		if !live[name] && !st.busy.Load() {
			st.attrs.closeAll()
			delete(c.devices, name)
		}
	}
	s.update(func(sn *Snapshot) { sn.RDMA = present })
	if len(stuck) > 0 {
		// The other devices' series are still exported: partial data is
		// more useful than none, and success=0 says it is partial.
		return fmt.Errorf("%w: reads of %s did not return in time", errPartial, strings.Join(stuck, ", "))
	}
	return nil
}

// errPartial marks a scrape where some devices could not be read.
var errPartial = errors.New("partial data")

// readDevices reads every device with a few workers pulling from a shared
// queue. A device whose read blocks (a firmware command that never returns)
// is abandoned at the deadline, stays marked busy until its read returns,
// and is skipped meanwhile; when a worker stalls, another one is started
// so the devices behind it are still read.
func (c *rdmaCollector) readDevices(s *Scrape, tds []*TopoDevice, states []*rdmaDeviceState) ([]*RDMADevice, []string) {
	n := len(tds)
	devs := make([]*RDMADevice, n)
	// status[i] is published after devs[i] is written, so the waiter may
	// read devs[i] once it sees deviceRead. The waiter is woken once, by
	// the last device, not once per device: every wake-up is a futex call.
	status := make([]atomic.Int32, n)
	var next, completed atomic.Int64
	allDone := make(chan struct{})
	finish := func(i int, st int32) {
		status[i].Store(st)
		if completed.Add(1) == int64(n) {
			close(allDone)
		}
	}
	worker := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			st := states[i]
			if !st.busy.CompareAndSwap(false, true) {
				finish(i, deviceSkipped) // still stuck in an earlier scrape
				continue
			}
			st.sink.reset()
			st.attrs.begin()
			d := c.updateDevice(s, tds[i], st, &st.sink)
			st.attrs.sweep()
			devs[i] = d
			st.busy.Store(false)
			finish(i, deviceRead)
		}
	}
	workers := min(rdmaWorkers, (n+devicesPerWorker-1)/devicesPerWorker)
	if workers < 1 {
		workers = 1
	}
	for w := 0; w < workers; w++ {
		go worker()
	}
	// One timer serves both the stall check and the deadline: each timer
	// armed on the scrape path can cost a netpoller wake-up.
	budget := c.cfg.Timeout * 3 / 4
	stallEvery := max(budget/8, time.Millisecond)
	begin := time.Now()
	tick := time.NewTimer(stallEvery)
	defer tick.Stop()
	timedOut := false
	for lastProgress, extra := int64(-1), 0; ; {
		select {
		case <-allDone:
		case <-tick.C:
			left := budget - time.Since(begin)
			if left <= 0 {
				timedOut = true
				break
			}
			p := completed.Load()
			if p == lastProgress && int(next.Load()) < n && extra < maxExtraWorkers {
				extra++
				go worker()
			}
			lastProgress = p
			tick.Reset(min(stallEvery, left))
			continue
		}
		break
	}
	out := make([]*RDMADevice, n)
	var stuck []string
	for i := range tds {
		switch status[i].Load() {
		case deviceRead:
			// Results of devices that finished are kept; the rest are nil.
			out[i] = devs[i]
		case deviceSkipped:
			stuck = append(stuck, tds[i].Name)
			c.logger.Debug("RDMA device still stuck in an earlier read, skipped", "device", tds[i].Name)
		default:
			if timedOut && states[i].busy.Load() {
				stuck = append(stuck, tds[i].Name)
			}
		}
	}
	return out, stuck
}

const (
	devicePending int32 = iota
	deviceRead
	deviceSkipped
)

// maxExtraWorkers bounds the workers added to route around stuck reads.
const maxExtraWorkers = 4

// rdmaWorkers bounds the goroutines reading devices; devicesPerWorker is
// the share below which another worker costs more than it saves.
var rdmaWorkers = max(2, runtime.GOMAXPROCS(0))

const devicesPerWorker = 8

func (c *rdmaCollector) dropAll() {
	for name, st := range c.devices {
		st.attrs.closeAll()
		delete(c.devices, name)
	}
}

func (c *rdmaCollector) readModules(now time.Time) map[string]bool {
	if c.modules != nil && !c.cfg.due(c.modulesAt, now) {
		return c.modules
	}
	mods := make(map[string]bool, len(modulesOfInterest))
	for _, m := range modulesOfInterest {
		_, err := c.cfg.fs.inode(c.cfg.sys("module", m))
		mods[m] = err == nil
	}
	c.modules, c.modulesAt = mods, now
	return mods
}

// updateDevice emits one device's metrics. It returns nil when the device
// vanished mid-scrape, so no partial series of a removed device remain.
func (c *rdmaCollector) updateDevice(s *Scrape, td *TopoDevice, st *rdmaDeviceState, out *Sink) *RDMADevice {
	if c.cfg.due(st.infoAt, s.Time) {
		info, ok := c.readDeviceInfo(s, td)
		if !ok {
			return nil
		}
		st.info, st.infoAt = info, s.Time
	}
	dev := st.info
	dev.Ports = nil
	out.emit(deviceInfoDesc, 1, dev.Name, dev.Driver, dev.HCAType, dev.BoardID, dev.FirmwareVersion, dev.NodeGUID, dev.PCIAddress)

	livePorts := make(map[int]bool, len(td.Ports))
	for _, tp := range td.Ports {
		livePorts[tp.Number] = true
		ps := st.ports[tp.Number]
		if ps == nil {
			ps = &rdmaPortState{attrs: st.attrs}
			st.ports[tp.Number] = ps
		}
		if p := c.updatePort(s, td, tp, ps, &dev, out); p != nil {
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

func (c *rdmaCollector) readDeviceInfo(s *Scrape, td *TopoDevice) (RDMADevice, bool) {
	d := RDMADevice{Name: td.Name, Driver: td.Driver, PCIAddress: td.PCIAddress}
	fields := []struct {
		file string
		dst  *string
	}{
		{"fw_ver", &d.FirmwareVersion}, {"hca_type", &d.HCAType}, {"board_id", &d.BoardID},
		{"node_guid", &d.NodeGUID}, {"sys_image_guid", &d.SysImageGUID},
	}
	for _, f := range fields {
		v, err := readSysfsFile(c.cfg.fs, joinPath(td.Dir, f.file))
		switch {
		case err == nil:
			*f.dst = sanitizeLabel(v)
		case isVanished(err):
			if _, statErr := c.cfg.fs.inode(td.Dir); statErr != nil {
				return d, false // the whole device went away
			}
		default:
			s.readError("rdma", joinPath(td.Dir, f.file), err)
		}
	}
	d.VerbsDevices, d.VerbsPresent = c.verbsDevices(td.Name)
	return d, true
}

// rdmamapMu serialises use of rdmamap, whose sysfs and /dev roots are
// package-level variables.
var rdmamapMu sync.Mutex

// verbsDevices asks rdmamap which /dev/infiniband/uverbsN node belongs to
// the device, and checks that it exists under --path.dev: a container
// without /dev/infiniband sees the device in sysfs but cannot open it.
func (c *rdmaCollector) verbsDevices(device string) (expected, present []string) {
	rdmamapMu.Lock()
	rdmamap.RdmaClassDir = c.cfg.sys("class", "infiniband")
	rdmamap.RdmaIbUcmDir = c.cfg.sys("class", "infiniband_cm")
	rdmamap.RdmaUmadDir = c.cfg.sys("class", "infiniband_mad")
	rdmamap.RdmaUverbsDir = c.cfg.sys("class", "infiniband_verbs")
	rdmamap.RdmaDeviceDir = joinPath(c.cfg.DevPath, "infiniband")
	rdmamap.RdmaUcmDevice = joinPath(c.cfg.DevPath, "infiniband", "rdma_cm")
	all := rdmamap.GetRdmaCharDevices(device)
	rdmamapMu.Unlock()
	for _, p := range all {
		if !strings.Contains(p, "/uverbs") {
			continue
		}
		expected = append(expected, p)
		if _, err := c.cfg.fs.inode(p); err == nil {
			present = append(present, p)
		}
	}
	sort.Strings(expected)
	sort.Strings(present)
	return expected, present
}

func (c *rdmaCollector) updatePort(s *Scrape, td *TopoDevice, tp *TopoPort, ps *rdmaPortState, dev *RDMADevice, out *Sink) *RDMAPort {
	port := tp.Label
	p := &RDMAPort{Device: td.Name, Number: tp.Number, Interface: tp.Netdev}

	if c.cfg.due(ps.listedAt, s.Time) {
		if !c.listPort(s, td, tp, ps, dev.Driver) {
			return nil
		}
	}
	p.LinkLayer = ps.linkLayer

	stateOK := false
	if v, err := ps.attrs.readString(tp.Dir, "state"); err == nil {
		if id, name, perr := parseIDState(v); perr == nil {
			p.State, p.StateName = id, name
			out.emit(portStateDesc, float64(id), td.Name, port)
			stateOK = true
		} else {
			s.readError("rdma", joinPath(tp.Dir, "state"), perr)
		}
	} else if isVanished(err) {
		ps.listedAt = time.Time{}
		return nil
	} else {
		s.readError("rdma", joinPath(tp.Dir, "state"), err)
	}
	physOK := false
	if v, err := ps.attrs.readString(tp.Dir, "phys_state"); err == nil {
		if id, name, perr := parseIDState(v); perr == nil {
			p.PhysState, p.PhysStateName = id, name
			out.emit(portPhysStateDesc, float64(id), td.Name, port)
			physOK = true
		} else {
			s.readError("rdma", joinPath(tp.Dir, "phys_state"), perr)
		}
	} else if !isVanished(err) {
		s.readError("rdma", joinPath(tp.Dir, "phys_state"), err)
	}
	if stateOK {
		up := 0.0
		if p.Up() || (!physOK && p.State == 4) {
			up = 1
		}
		out.emit(portUpDesc, up, td.Name, port)
	}
	out.emit(portInfoDesc, 1, td.Name, port, p.LinkLayer, p.Interface)

	if v, err := ps.attrs.readString(tp.Dir, "rate"); err == nil {
		bits, perr := parseRate(v)
		switch {
		case perr != nil:
			s.readError("rdma", joinPath(tp.Dir, "rate"), perr)
		case p.LinkLayer == "Ethernet" && p.State != 4:
			// mlx5 reports "40 Gb/sec (4X QDR)" for a down RoCE port.
		default:
			p.RateBitsPerSecond = bits
			out.emit(portRateDesc, bits/8, td.Name, port)
		}
	} else if !isVanished(err) {
		s.readError("rdma", joinPath(tp.Dir, "rate"), err)
	}

	p.Counters = c.readCounters(s, ps, ps.counters, td.Name, port, out)
	p.HWCounters = c.readCounters(s, ps, ps.hw, td.Name, port, out)
	if ps.lifespanSeconds >= 0 {
		out.emit(lifespanDesc, ps.lifespanSeconds, td.Name, port)
	}

	if c.cfg.due(ps.gidsAt, s.Time) {
		ps.gids = c.readGIDs(s, tp)
		ps.roceMode = c.readRoCEMode(td.Name, port)
		ps.activeMTU = c.readActiveMTU(s, p)
		ps.gidsAt = s.Time
	}
	// The active MTU is configuration derived from the netdev MTU, like the
	// GIDs, so it follows their refresh; the netdev collector reads the
	// MTU itself every scrape for roce_interface_mtu_bytes.
	if ps.activeMTU > 0 {
		out.emit(portActiveMTUDesc, float64(ps.activeMTU), td.Name, port)
	}
	p.GIDs = ps.gids
	for _, g := range ps.gids {
		out.emit(gidInfoDesc, 1, td.Name, port, g.indexLabel, g.GID, g.Type, g.Interface)
	}
	p.DefaultRoCEMode = ps.roceMode
	if ps.roceMode != "" {
		out.emit(defaultRoCEModeDesc, 1, td.Name, port, ps.roceMode)
	}
	return p
}

// listPort reads the port's static layout once: link layer and the names
// of its counter files (they change only when the device is re-created).
func (c *rdmaCollector) listPort(s *Scrape, td *TopoDevice, tp *TopoPort, ps *rdmaPortState, driver string) bool {
	ll, err := readSysfsFile(c.cfg.fs, joinPath(tp.Dir, "link_layer"))
	if err != nil {
		if isVanished(err) {
			if _, statErr := c.cfg.fs.inode(tp.Dir); statErr != nil {
				return false
			}
		} else {
			s.readError("rdma", joinPath(tp.Dir, "link_layer"), err)
		}
	}
	ps.linkLayer = sanitizeLabel(ll)
	old := make(map[string]*counterFile, len(ps.counters)+len(ps.hw))
	for i := range ps.counters {
		old[ps.counters[i].path] = &ps.counters[i]
	}
	for i := range ps.hw {
		old[ps.hw[i].path] = &ps.hw[i]
	}
	ps.counters = c.listCounterDir(s, joinPath(tp.Dir, "counters"), false, driver, old)
	ps.hw = c.listCounterDir(s, joinPath(tp.Dir, "hw_counters"), true, driver, old)
	// lifespan is a setting (how long the kernel caches hw_counters), not a
	// reading: it is read with the layout, not every scrape.
	ps.lifespanSeconds = -1
	if v, err := readSysfsFile(c.cfg.fs, joinPath(tp.Dir, "hw_counters", "lifespan")); err == nil {
		if ms, perr := parseSysfsUint(joinPath(tp.Dir, "hw_counters", "lifespan"), []byte(v)); perr == nil {
			ps.lifespanSeconds = float64(ms) / 1000
		} else {
			s.readError("rdma", joinPath(tp.Dir, "hw_counters", "lifespan"), perr)
		}
	} else if !isVanished(err) {
		s.readError("rdma", joinPath(tp.Dir, "hw_counters", "lifespan"), err)
	}
	ps.listedAt = s.Time
	return true
}

func (c *rdmaCollector) listCounterDir(s *Scrape, dir string, hw bool, driver string, old map[string]*counterFile) []counterFile {
	names, err := c.cfg.fs.readDirNames(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			// Present but unreadable: count it; the rest of the device
			// still reports.
			s.readError("rdma", dir, err)
		}
		return nil
	}
	sort.Strings(names)
	files := make([]counterFile, 0, len(names))
	taken := make(map[string]bool, len(names))
	wrapCapable := driver == "mlx5_core" || driver == ""
	// Native mlx5 names win over aliases when a transitional driver shows both.
	sort.SliceStable(names, func(i, j int) bool {
		_, ai := hwCounterAliases[names[i]]
		_, aj := hwCounterAliases[names[j]]
		return !ai && aj
	})
	for _, raw := range names {
		if hw && raw == "lifespan" {
			continue
		}
		var f counterFile
		f.path = joinPath(dir, raw)
		if hw {
			f.canonical = canonicalHWName(raw)
			f.gauge = isHWGauge(f.canonical)
			f.scale = 1
			typ := typeCounter
			if f.gauge {
				typ = typeGauge
			}
			f.desc = c.desc(hwMetricName(f.canonical), helpFor("hw_counters", f.canonical), typ)
			f.wraps = wrapCapable && mlx5QCounters[f.canonical]
		} else {
			var metric string
			metric, f.scale = counterMetricName(raw)
			f.canonical = sanitizeName(raw)
			f.desc = c.desc(metric, helpFor("counters", f.canonical), typeCounter)
		}
		if taken[f.canonical] {
			c.logger.Debug("duplicate counter after name mapping, keeping the first", "path", f.path, "name", f.canonical)
			continue
		}
		taken[f.canonical] = true
		if prev, ok := old[f.path]; ok {
			// The open file and the path string the attribute cache is
			// keyed by carry over too: a relisting must not reopen every
			// file nor keep two copies of every path.
			f.path, f.handle = prev.path, prev.handle
			f.last, f.high, f.seen = prev.last, prev.high, prev.seen
		}
		files = append(files, f)
	}
	return files
}

const wrap32 = uint64(1) << 32

func (c *rdmaCollector) readCounters(s *Scrape, ps *rdmaPortState, files []counterFile, device, port string, out *Sink) []CounterValue {
	values := make([]CounterValue, 0, len(files))
	for i := range files {
		f := &files[i]
		raw, err := ps.attrs.readUintVia(&f.handle, f.path)
		if err != nil {
			if isVanished(err) {
				ps.listedAt = time.Time{} // layout changed: list again next scrape
			} else {
				// EINVAL, EOPNOTSUPP, EIO, "N/A (no PMA)", garbage.
				s.readError("rdma", f.path, err)
			}
			continue
		}
		v := raw
		if f.wraps {
			v = f.extend(raw)
		}
		values = append(values, CounterValue{Name: f.canonical, Value: v})
		out.emit(f.desc, float64(v)*f.scale, device, port)
	}
	return values
}

// extend turns a 32-bit hardware counter into a monotonic 64-bit one. A
// drop from the upper half of the range is a wrap; a drop from the lower
// half is a reset (driver reload), which Prometheus' rate() already handles.
func (f *counterFile) extend(raw uint64) uint64 {
	if raw >= wrap32 {
		f.last, f.seen = raw, true
		return f.high + raw
	}
	if f.seen && raw < f.last {
		if f.last >= wrap32/2 {
			f.high += wrap32
		} else {
			f.high = 0
		}
	}
	f.last, f.seen = raw, true
	return f.high + raw
}

var zeroGIDs = map[string]bool{
	"0000:0000:0000:0000:0000:0000:0000:0000": true,
	"fe80:0000:0000:0000:0000:0000:0000:0000": true,
}

func (c *rdmaCollector) readGIDs(s *Scrape, tp *TopoPort) []GID {
	dir := joinPath(tp.Dir, "gids")
	names, err := c.cfg.fs.readDirNames(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.readError("rdma", dir, err)
		}
		return nil
	}
	var gids []GID
	for _, n := range names {
		idx, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		g, err := readSysfsFile(c.cfg.fs, joinPath(dir, n))
		if err != nil {
			if !isVanished(err) && !errors.Is(err, syscall.EINVAL) {
				s.readError("rdma", joinPath(dir, n), err)
			}
			continue
		}
		if zeroGIDs[g] || !validGID(g) {
			continue
		}
		typ, err := readSysfsFile(c.cfg.fs, joinPath(tp.Dir, "gid_attrs", "types", n))
		if err != nil {
			// An empty slot reads EINVAL: not an error, just nothing there.
			if !errors.Is(err, syscall.EINVAL) && !isVanished(err) {
				s.readError("rdma", joinPath(tp.Dir, "gid_attrs", "types", n), err)
			}
			continue
		}
		ndev, err := readSysfsFile(c.cfg.fs, joinPath(tp.Dir, "gid_attrs", "ndevs", n))
		if err != nil && !errors.Is(err, syscall.EINVAL) && !isVanished(err) {
			s.readError("rdma", joinPath(tp.Dir, "gid_attrs", "ndevs", n), err)
		}
		gids = append(gids, GID{Index: idx, indexLabel: n, GID: g, Type: sanitizeLabel(typ), Interface: sanitizeLabel(ndev)})
	}
	sort.Slice(gids, func(i, j int) bool { return gids[i].Index < gids[j].Index })
	return gids
}

// validGID accepts the kernel's %pI6 form: 8 groups of 4 hex digits.
func validGID(g string) bool {
	if len(g) != 39 {
		return false
	}
	for i := 0; i < len(g); i++ {
		ch := g[i]
		if i%5 == 4 {
			if ch != ':' {
				return false
			}
			continue
		}
		if !(ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'f') {
			return false
		}
	}
	return true
}

// readRoCEMode reads the rdma_cm default RoCE mode from configfs. The
// exporter never creates the configfs directory (that changes kernel state);
// it reads it only where an operator or the doctor already made it.
func (c *rdmaCollector) readRoCEMode(device, port string) string {
	v, err := readSysfsFile(c.cfg.fs, c.cfg.sys("kernel", "config", "rdma_cm", device, "ports", port, "default_roce_mode"))
	if err != nil {
		return ""
	}
	return sanitizeLabel(v)
}

func (c *rdmaCollector) readActiveMTU(s *Scrape, p *RDMAPort) int {
	if p.LinkLayer != "Ethernet" || p.Interface == "" {
		return 0
	}
	path := c.cfg.sys("class", "net", p.Interface, "mtu")
	v, err := readSysfsFile(c.cfg.fs, path)
	if err != nil {
		if !isVanished(err) {
			s.readError("rdma", path, err)
		}
		return 0
	}
	mtu, err := strconv.Atoi(v)
	if err != nil {
		s.readError("rdma", path, err)
		return 0
	}
	return config.RoCEActiveMTU(mtu)
}

// sanitizeLabel keeps label values printable and bounded: sysfs text from a
// broken driver must not produce invalid UTF-8 or megabyte labels.
func sanitizeLabel(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 128 {
		s = s[:128]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == 0xfffd {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
}
