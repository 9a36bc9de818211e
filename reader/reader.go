// Package reader fills a node.Snapshot from the kernel: sysfs for RDMA
// devices, netdevs and PCIe, the ethtool ioctls for NIC statistics, DCB
// netlink for PFC and trust, or text captured on another machine (replay).
// It only reads: it never changes the system (but for OpenRDMACMConfigfs,
// which the doctor asks for), and it turns no error into a value.
//
// Sources run concurrently, each bounded by a timeout: a source whose read
// blocks (a firmware command that never returns) is reported as timed out,
// is not started again until that read returns, and leaves the others
// unaffected. Files that exist but cannot be read are skipped and counted
// per source.
package reader

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/nlconn"
	"github.com/roce-exporter/roce_exporter/node"
)

// ErrNoData means the source does not exist on this node (no RDMA devices,
// no DCB support): not a failure of the reader.
var ErrNoData = errors.New("source not present on this node")

// ErrNotApplicable, joined with ErrNoData, means the node has nothing of the
// kind the source reads (no NVIDIA GPU for the gpu source, no Ethernet RDMA
// port for LLDP): its collector has nothing to do, which is not a failure,
// so roce_scrape_collector_success stays 1 and "collectors failing" stays 0.
var ErrNotApplicable = errors.New("nothing of this kind on the node")

// Options say what a Reader reads and where.
type Options struct {
	SysPath string // root of sysfs, "/sys" on a live node
	DevPath string // root of /dev
	// ProcPath is the root of procfs; "" reads /proc only when SysPath is
	// this kernel's sysfs, so a copied tree never mixes in this machine's
	// /proc/cmdline.
	ProcPath string
	// RootFS is the root of the node's filesystem, whose /etc holds the
	// systemd and PAM limits the host source reads; "" reads / only when
	// SysPath is this kernel's sysfs.
	RootFS string
	// Timeout bounds each source's read.
	Timeout time.Duration
	// Sources lists the sources to read (node.Source*).
	Sources []string

	// DeviceInclude / DeviceExclude select RDMA devices by name. They are
	// applied before any file of an excluded device is touched: reading
	// firmware-restricted functions floods dmesg on some systems.
	DeviceInclude *regexp.Regexp
	DeviceExclude *regexp.Regexp
	// NetdevInclude adds interfaces that do not back an RDMA port.
	NetdevInclude *regexp.Regexp

	// Refresh is how long slow-changing configuration (GID tables, device
	// and interface metadata, PCIe chains, ECN settings, the topology) is
	// kept before it is read again; 0 reads everything every time.
	Refresh time.Duration

	// ReplayDir, when set, makes the ethtool and dcb sources (and the
	// driver info and addresses of interfaces) read text captured on a
	// node instead of asking the kernel.
	ReplayDir string
	// EthtoolRawInclude selects driver statistics to keep under their raw
	// names besides the mapped families.
	EthtoolRawInclude *regexp.Regexp

	// LLDPCli is the lldpcli program ("" = lldpcli on PATH) and
	// LLDPSocket lldpd's control socket ("" = lldpd's default) the lldp
	// source asks.
	LLDPCli, LLDPSocket string

	// FS replaces the filesystem, for tests that need the errors real sysfs
	// produces; nil is the real one.
	FS FS

	// ethtoolNetlink configures the shared ethtool netlink socket; tests
	// make its dial fail.
	ethtoolNetlink nlconn.FamilyConfig
}

// sourceDef is one entry of the table of sources: what it reads, in a
// line for --help, and how a Reader makes it.
type sourceDef struct {
	help string
	make func(*Reader) source
}

// sourceDefs is the table SourceNames, SourceHelp and New read. Each
// source file adds its own entry with registerSource, as node_exporter's
// collectors do with registerCollector.
var sourceDefs = map[string]sourceDef{}

func registerSource(name, help string, make func(*Reader) source) {
	if _, dup := sourceDefs[name]; dup {
		panic("reader source registered twice: " + name)
	}
	sourceDefs[name] = sourceDef{help: help, make: make}
}

// SourceNames lists every source a Reader knows, sorted.
func SourceNames() []string { return slices.Sorted(maps.Keys(sourceDefs)) }

// SourceHelp describes what a source reads; "" for an unknown one.
func SourceHelp(name string) string { return sourceDefs[name].help }

// source reads one part of the snapshot. read returns a function that
// stores what it read into the snapshot; the Reader applies it only when
// the read finished in time, so a late read never changes a snapshot that
// was already handed out. read is never called concurrently with itself.
type source interface {
	read(sc *scan) (apply func(*node.Snapshot), err error)
	close() error
}

type runningSource struct {
	name string
	src  source
	// busy is set while a read runs; a read stuck in the kernel keeps it
	// set and the source is skipped until it returns.
	busy       atomic.Bool
	readErrors atomic.Uint64
}

// Reader reads snapshots of one node.
type Reader struct {
	opts     Options
	logger   *slog.Logger
	sources  []*runningSource
	byName   map[string]*runningSource
	topology *topologyCache
	fs       FS
	isLive   bool
	kernel   *kernelSockets

	mu sync.Mutex // one Read at a time: the sources keep open files and history

	warn warnLimiter
}

// New prepares the sources opts names. A source whose setup fails is
// logged and left out; the others still run.
func New(opts Options, logger *slog.Logger) (*Reader, error) {
	if opts.SysPath == "" {
		opts.SysPath = "/sys"
	}
	if opts.DevPath == "" {
		opts.DevPath = "/dev"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.Refresh < 0 {
		return nil, errors.New("refresh interval must not be negative")
	}
	r := &Reader{opts: opts, logger: logger, byName: map[string]*runningSource{}, fs: opts.FS, isLive: isLiveSysfs(opts.SysPath),
		kernel: newKernelSockets(opts)}
	if r.fs == nil {
		r.fs = OSFS{}
	}
	r.topology = newTopologyCache(r)
	for _, name := range opts.Sources {
		def, ok := sourceDefs[name]
		if !ok {
			return nil, fmt.Errorf("unknown source %q", name)
		}
		src := def.make(r)
		rs := &runningSource{name: name, src: src}
		r.sources = append(r.sources, rs)
		r.byName[name] = rs
	}
	if r.copyWithoutCaptures() && (r.byName[node.SourceEthtool] != nil || r.byName[node.SourceDCB] != nil) {
		logger.Info("sysfs is a copy, not this kernel's, and there is no replay directory: ethtool statistics, DCB netlink and driver info are not read",
			"path.sysfs", opts.SysPath)
	}
	return r, nil
}

// Sources returns the names of the sources the Reader reads.
func (r *Reader) Sources() []string {
	out := make([]string, len(r.sources))
	for i, s := range r.sources {
		out[i] = s.name
	}
	return out
}

// Timeout is the bound of each source's read.
func (r *Reader) Timeout() time.Duration { return r.opts.Timeout }

// SysPath is the sysfs root the Reader reads.
func (r *Reader) SysPath() string { return r.opts.SysPath }

// ReadErrors is how many files the source skipped since the Reader was
// made, because they could not be read or parsed.
func (r *Reader) ReadErrors(source string) uint64 {
	if rs := r.byName[source]; rs != nil {
		return rs.readErrors.Load()
	}
	return 0
}

// SourceResult is how one source's read went.
type SourceResult struct {
	Name string
	// Err is nil on success; wraps ErrNoData when the source does not
	// exist on the node.
	Err      error
	Duration time.Duration
	// TimedOut: the read did not finish within the timeout; its result is
	// not in the snapshot.
	TimedOut bool
	// Stuck: an earlier read of the source is still blocked, so it was not
	// started.
	Stuck bool
}

// OK reports whether the source was read without error.
func (s SourceResult) OK() bool { return s.Err == nil && !s.TimedOut && !s.Stuck }

// Result is one read of the node.
type Result struct {
	Snapshot *node.Snapshot
	// Sources are in the order of Reader.Sources.
	Sources []SourceResult
}

// Read reads every source once, concurrently, and returns the snapshot
// with what finished in time.
func (r *Reader) Read() *Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	sc := &scan{Time: time.Now(), r: r}
	snap := &node.Snapshot{Time: sc.Time, Sources: make(map[string]node.SourceStatus, len(r.sources))}
	res := &Result{Snapshot: snap, Sources: make([]SourceResult, len(r.sources))}

	type done struct {
		apply    func(*node.Snapshot)
		err      error
		duration time.Duration
	}
	var started []int
	for i, rs := range r.sources {
		res.Sources[i].Name = rs.name
		if !rs.busy.CompareAndSwap(false, true) {
			// The previous read is blocked in a call that cannot be
			// cancelled; starting another would pile up goroutines.
			r.logger.Debug("source still stuck in an earlier read, skipped", "collector", rs.name)
			res.Sources[i].Stuck = true
			snap.Sources[rs.name] = node.SourceFailed
			continue
		}
		started = append(started, i)
	}
	// Each goroutine writes its own slot and then flags it; only the last
	// one to finish wakes the waiter, since every wake-up costs a futex
	// call on the scrape path.
	slots := make([]done, len(started))
	finished := make([]atomic.Bool, len(started))
	var remaining atomic.Int64
	remaining.Store(int64(len(started)))
	allDone := make(chan struct{})
	for k, i := range started {
		rs := r.sources[i]
		go func() {
			begin := time.Now()
			apply, err := safeRead(rs, sc)
			slots[k] = done{apply: apply, err: err, duration: time.Since(begin)}
			finished[k].Store(true)
			// Clear busy before reporting, or the next read could start
			// before this goroutine runs again and skip the source as stuck.
			rs.busy.Store(false)
			if remaining.Add(-1) == 0 {
				close(allDone)
			}
		}()
	}
	if len(started) > 0 {
		timer := time.NewTimer(r.opts.Timeout)
		select {
		case <-allDone:
		case <-timer.C:
		}
		timer.Stop()
	}
	for k, i := range started {
		rs := r.sources[i]
		if !finished[k].Load() {
			r.logger.Warn("collector timed out; its source is not answering", "collector", rs.name, "timeout", r.opts.Timeout)
			res.Sources[i].TimedOut = true
			res.Sources[i].Duration = r.opts.Timeout
			snap.Sources[rs.name] = node.SourceFailed
			continue
		}
		d := slots[k]
		res.Sources[i].Err, res.Sources[i].Duration = d.err, d.duration
		snap.Sources[rs.name] = statusOf(d.err)
		if d.apply != nil {
			d.apply(snap)
		}
	}
	return res
}

// statusOf classifies a source's read error.
func statusOf(err error) node.SourceStatus {
	switch {
	case err == nil:
		return node.SourceOK
	case errors.Is(err, ErrNoData):
		return node.SourceAbsent
	case errors.Is(err, errPartial):
		return node.SourcePartial
	}
	return node.SourceFailed
}

// safeRead turns a panic in a source (a parser bug on garbage input) into a
// failed read instead of a dead exporter.
func safeRead(rs *runningSource, sc *scan) (apply func(*node.Snapshot), err error) {
	defer func() {
		if p := recover(); p != nil {
			apply, err = nil, fmt.Errorf("panic in source %s: %v", rs.name, p)
		}
	}()
	return rs.src.read(sc)
}

// Close releases the sources' open files and sockets. A source still
// blocked in a read keeps its resources until the process ends, and so do
// the shared sockets, which it may be using.
func (r *Reader) Close() error {
	var errs []error
	stuck := false
	for _, rs := range r.sources {
		if rs.busy.Load() {
			stuck = true
			continue
		}
		errs = append(errs, rs.src.close())
	}
	if !stuck {
		errs = append(errs, r.kernel.close())
	}
	return errors.Join(errs...)
}

// due reports whether what was read at `at` must be read again at now:
// never read, or read at least Refresh ago. All the slow-changing
// configuration follows this one interval.
func (r *Reader) due(at, now time.Time) bool {
	return at.IsZero() || now.Sub(at) >= r.opts.Refresh
}

func (r *Reader) deviceSelected(name string) bool {
	if r.opts.DeviceInclude != nil && !r.opts.DeviceInclude.MatchString(name) {
		return false
	}
	if r.opts.DeviceExclude != nil && r.opts.DeviceExclude.MatchString(name) {
		return false
	}
	return true
}

// proc returns a path under procfs, false when there is none to read (see
// Options.ProcPath).
func (r *Reader) proc(parts ...string) (string, bool) {
	root := r.opts.ProcPath
	if root == "" {
		if !r.live() {
			return "", false
		}
		root = "/proc"
	}
	return joinPath(append([]string{root}, parts...)...), true
}

func (r *Reader) sys(parts ...string) string {
	return joinPath(append([]string{r.opts.SysPath}, parts...)...)
}

// scan is what the sources of one Read share: the time, the device
// topology and the interface list, each computed once.
type scan struct {
	Time time.Time
	r    *Reader

	topoOnce sync.Once
	topo     *topology
	topoErr  error

	ifacesOnce sync.Once
	ifaces     []netdevTarget
	ifacesErr  error

	uverbsOnce sync.Once
	uverbs     map[string][]string // RDMA device → its uverbs class entries
}

func (sc *scan) topology() (*topology, error) {
	sc.topoOnce.Do(func() { sc.topo, sc.topoErr = sc.r.topology.get() })
	return sc.topo, sc.topoErr
}

// interfaces returns, once per read for the netdev, ethtool and dcb
// sources, the netdevs behind RDMA ports in topology order, then those
// NetdevInclude selects in name order.
func (sc *scan) interfaces() ([]netdevTarget, error) {
	sc.ifacesOnce.Do(func() { sc.ifaces, sc.ifacesErr = sc.listInterfaces() })
	return sc.ifaces, sc.ifacesErr
}

// ethernetInterfaces names the read's interfaces that are not IPoIB: IPoIB
// has no PFC or pause statistics and no DCB.
func (sc *scan) ethernetInterfaces() ([]string, error) {
	targets, err := sc.interfaces()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(targets))
	for _, t := range targets {
		if !t.ipoib {
			out = append(out, t.name)
		}
	}
	return out, nil
}

// capturedInterfaces is ethernetInterfaces for a source that asks the kernel
// about each interface (ethtool, modules, FEC): on a copied sysfs tree
// without captures of that kind it has nothing to read, since asking the
// live kernel would mix in this machine's interfaces of the same name.
func (sc *scan) capturedInterfaces(captures string) ([]string, error) {
	if sc.r.copyWithoutCaptures() {
		return nil, errors.Join(ErrNoData, fmt.Errorf("sysfs is a copy of another node and no replay directory holds its %s captures", captures))
	}
	return sc.ethernetInterfaces()
}

// readError counts and logs a file a source skipped.
func (sc *scan) readError(source, path string, err error) {
	if rs := sc.r.byName[source]; rs != nil {
		rs.readErrors.Add(1)
	}
	sc.r.warn.log(sc.r.logger, source, path, err, time.Now())
}

// forgetGone drops the entries of m whose key is not in live.
func forgetGone[V any](m map[string]V, live []string) {
	for k := range m {
		if !slices.Contains(live, k) {
			delete(m, k)
		}
	}
}

// live reports whether the Reader reads the running kernel's own sysfs:
// /sys, or sysfs mounted elsewhere (the DaemonSet's /host/sys). A copied
// tree (--path.sysfs at a fixture or a capture) is another machine: asking
// this machine's kernel about interfaces of the same name would mix in its
// data.
func (r *Reader) live() bool { return r.isLive }

// copyWithoutCaptures reports a Reader whose sources without sysfs files
// (ethtool ioctls, DCB netlink, driver info) have nobody to ask: the sysfs
// tree is a copy and no replay directory holds captures of that node. They
// then report nothing rather than this machine's interfaces of the same name.
func (r *Reader) copyWithoutCaptures() bool { return r.opts.ReplayDir == "" && !r.live() }

// sysfsMagic is SYSFS_MAGIC (include/uapi/linux/magic.h), the f_type
// statfs reports for a sysfs mount.
const sysfsMagic = 0x62656572

// IsLiveSysfs reports whether path is this kernel's sysfs: /sys, or sysfs
// mounted elsewhere (the DaemonSet's /host/sys); not a copied tree.
func IsLiveSysfs(path string) bool { return isLiveSysfs(path) }

func isLiveSysfs(path string) bool {
	if filepath.Clean(path) == "/sys" {
		return true
	}
	var st syscall.Statfs_t
	return syscall.Statfs(path, &st) == nil && st.Type == sysfsMagic
}
