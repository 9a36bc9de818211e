package collector

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/pipeline"
	"github.com/roce-exporter/roce_exporter/probes"
	"github.com/roce-exporter/roce_exporter/reader"
)

// Options say which collectors run and what the derived ones judge
// against.
type Options struct {
	// Enabled lists the collectors to run.
	Enabled []string
	// NodeName is this node's name in the cluster plan.
	NodeName string
	// Plan is the cluster plan the health checks compare against; nil runs
	// only the checks that need none.
	Plan *config.Plan
	// Probes is the result store of the probe scheduler; nil when the
	// plan does not enable probes.
	Probes *probes.Store
	// AllPriorities exports the per-priority families for all eight
	// priorities (--collector.priority.all), not only those that matter.
	AllPriorities bool
	// HealthOKSubjects exports roce_health_check_ok 1 for every subject
	// that passed (--collector.health.ok-subjects), not only the failing ones.
	HealthOKSubjects bool
	// IBCountersOnEthernet exports the InfiniBand link-layer PortCounters on
	// RoCE ports too (--collector.rdma.ib-counters-on-ethernet).
	IBCountersOnEthernet bool

	prio *prioritySet // shared by the DCB and ethtool collectors
	// TransceiverLaneMonitors also exports per-lane Tx power and laser
	// bias; per-lane Rx power is always exported.
	TransceiverLaneMonitors bool
	// Sample names the node whose data is read when it is not this machine
	// (--scenario, a copied sysfs tree, replayed captures); "" on a live node.
	Sample string
}

// PipelineOptions are the options of the pipeline these collectors export:
// on r, with the plan and node name the checks judge by, running the checks
// when the health collector is enabled.
func (o Options) PipelineOptions(r pipeline.Reader) pipeline.Options {
	return pipeline.Options{Reader: r, Plan: o.Plan, NodeName: o.NodeName, Health: slices.Contains(o.Enabled, healthCollectorName)}
}

// flagGroup is a kingpin application or command: either can hold flags.
type flagGroup interface {
	Flag(name, help string) *kingpin.FlagClause
}

// PathFlags say where the node's files are and how long a read may take:
// all a command needs that reads the node without exporting it.
type PathFlags struct {
	sysPath, devPath, procPath, rootFS *string
	timeout                            *time.Duration
	// set records the path flags given on the command line, which a
	// scenario must not silently override.
	set map[string]*bool
}

// RegisterPathFlags adds --path.sysfs, --path.dev, --path.proc,
// --path.rootfs and --collector.timeout.
func RegisterPathFlags(g flagGroup) *PathFlags {
	f := &PathFlags{set: map[string]*bool{"path.sysfs": new(bool), "path.dev": new(bool), "path.proc": new(bool), "path.rootfs": new(bool)}}
	f.sysPath = g.Flag("path.sysfs", "sysfs mountpoint (point it at a fixture tree to replay a captured node).").Default("/sys").IsSetByUser(f.set["path.sysfs"]).String()
	f.devPath = g.Flag("path.dev", "devfs mountpoint, used to find /dev/infiniband.").Default("/dev").IsSetByUser(f.set["path.dev"]).String()
	f.procPath = g.Flag("path.proc", "procfs mountpoint (IOMMU and NVIDIA driver facts); empty: /proc when --path.sysfs is live.").Default("").IsSetByUser(f.set["path.proc"]).String()
	f.rootFS = g.Flag("path.rootfs", "Root filesystem whose /etc has the memlock limits; empty: / if --path.sysfs is live.").Default("").IsSetByUser(f.set["path.rootfs"]).String()
	f.timeout = g.Flag("collector.timeout", "Per-scrape time limit for each collector; a collector that exceeds it reports roce_scrape_collector_success 0 and its stuck read is not retried until it returns.").Default("5s").Duration()
	return f
}

// ReaderOptions are the reader's options for the given sources, after
// checking that the paths exist (a *UsageError when one does not).
func (f *PathFlags) ReaderOptions(sources ...string) (reader.Options, error) {
	o := reader.Options{SysPath: *f.sysPath, DevPath: *f.devPath, ProcPath: *f.procPath, RootFS: *f.rootFS, Timeout: *f.timeout, Sources: sources}
	return o, checkPaths(o)
}

// Flags are the command-line settings of the reader and the collectors.
type Flags struct {
	*PathFlags
	disableDefaults   *bool
	enable            map[string]*bool
	explicit          map[string]bool
	devInclude        *string
	devExclude        *string
	netdevInclude     *string
	refresh           *time.Duration
	ethtoolReplay     *string
	ethtoolRawInclude *string
	allPriorities     *bool
	healthOKSubjects  *bool
	ibOnEthernet      *bool
	// transceiverLanes is nil for a command without it (the doctor).
	transceiverLanes *bool
	lldpSocket       *string
	scenario         *string
	scenarioDir      *string
	replaySet        bool
}

// RegisterFlags adds the collector flags to a command, in node_exporter's
// style.
func RegisterFlags(app flagGroup) *Flags { return registerFlags(app, false) }

// RegisterSourceFlags adds the flags of a command that reads the node but
// exports nothing (the doctor): those of the source collectors only.
func RegisterSourceFlags(app flagGroup) *Flags { return registerFlags(app, true) }

func registerFlags(app flagGroup, sourcesOnly bool) *Flags {
	f := &Flags{PathFlags: RegisterPathFlags(app), enable: map[string]*bool{}, explicit: map[string]bool{}}
	f.disableDefaults = app.Flag("collector.disable-defaults", "Disable all collectors that are enabled by default; enable the ones you want with --collector.<name>.").Default("false").Bool()
	for _, name := range Names() {
		reg := registry[name]
		if sourcesOnly && !reg.source {
			continue
		}
		state := "disabled"
		if reg.defaultEnabled {
			state = "enabled"
		}
		f.enable[name] = app.Flag("collector."+name, fmt.Sprintf("Enable the %s collector (default: %s). %s", name, state, Help(name))).
			Default(fmt.Sprint(reg.defaultEnabled)).
			Action(func(*kingpin.ParseContext) error { f.explicit[name] = true; return nil }).Bool()
	}
	f.devInclude = app.Flag("collector.rdma.device-include", "Regexp of RDMA devices to read (all collectors); others are never touched.").PlaceHolder("REGEX").String()
	f.devExclude = app.Flag("collector.rdma.device-exclude", "Regexp of RDMA devices never to read (all collectors), e.g. firmware-restricted functions.").PlaceHolder("REGEX").String()
	f.refresh = app.Flag("collector.rdma.gid-refresh", "How long slow-changing data (GID tables, RoCE mode, MTU, device metadata, optics EEPROM, LLDP) is cached (0 = every scrape).").Default("60s").Duration()
	f.netdevInclude = app.Flag("collector.netdev.include", "Regexp of extra network interfaces to report besides those backing RDMA ports.").PlaceHolder("REGEX").String()
	f.ethtoolReplay = app.Flag("collector.ethtool.replay-dir", "Read captures (`ethtool -S/-i/-a/-m/--show-fec`, DCB, devlink, lldpcli) from DIR instead of the kernel; the sample nodes' replay/ shows the file names.").PlaceHolder("DIR").IsSetByUser(&f.replaySet).String()
	f.scenario = app.Flag("scenario", "Read the bundled sample node NAME (README, \"Sample nodes\") instead of this machine: it sets --path.sysfs, --path.dev, --path.proc, --path.rootfs and --collector.ethtool.replay-dir.").PlaceHolder("NAME").String()
	f.scenarioDir = app.Flag("scenario.dir", "Where --scenario's sample nodes are.").Default(DefaultScenarioDir).PlaceHolder("DIR").String()
	f.ethtoolRawInclude = app.Flag("collector.ethtool.raw-include", "Regexp of raw ethtool stat names to export as roce_ethtool_<name> (off by default: NICs have thousands).").PlaceHolder("REGEX").String()
	if !sourcesOnly {
		f.allPriorities = app.Flag("collector.priority.all", "Export the per-priority families (roce_priority_*, roce_pfc_*, roce_pfc_enabled, roce_ecn_enabled) for all 8 priorities. By default only the priorities that matter are exported: the plan's RoCE priority, those with PFC on, and those whose counters ever rose above zero; ECN settings equal on all 8 priorities collapse to priority=\"all\".").Default("false").Bool()
		f.healthOKSubjects = app.Flag("collector.health.ok-subjects", "Export roce_health_check_ok 1 for every subject that passed a check. By default only failing or warning subjects have a series (0), and roce_health_check_subjects counts the subjects each check judged.").Default("false").Bool()
		f.ibOnEthernet = app.Flag("collector.rdma.ib-counters-on-ethernet", "Also export the InfiniBand link-layer counters (VL15_dropped, switch relay, constraint, link integrity and buffer overrun errors) of RoCE ports, where they stay 0.").Default("false").Bool()
		f.transceiverLanes = app.Flag("collector.transceiver.lane-monitors", "Also export each optic lane's Tx power and laser bias (2 series per lane) and every threshold of the module; per-lane Rx power and the thresholds the alerts use (temperature high, Rx power low) are always exported.").Default("false").Bool()
	}
	f.lldpSocket = app.Flag("collector.lldp.socket", "lldpd control socket (lldpcli -u).").PlaceHolder("PATH").String()
	return f
}

// Options turns parsed flags into the collectors' and the reader's
// options; the reader reads the sources of the enabled collectors.
// Collectors named explicitly on the command line survive
// --collector.disable-defaults.
func (f *Flags) Options() (Options, reader.Options, error) {
	ro := reader.Options{SysPath: *f.sysPath, DevPath: *f.devPath, ProcPath: *f.procPath, RootFS: *f.rootFS, Timeout: *f.timeout}
	ro.ReplayDir = *f.ethtoolReplay
	if *f.scenario != "" {
		for _, flag := range []string{"path.sysfs", "path.dev", "path.proc", "path.rootfs"} {
			if *f.set[flag] {
				return Options{}, ro, usageErrorf("--scenario=%s sets --%s itself: give one or the other", *f.scenario, flag)
			}
		}
		if f.replaySet {
			return Options{}, ro, usageErrorf("--scenario=%s sets --collector.ethtool.replay-dir itself: give one or the other", *f.scenario)
		}
		var err error
		if ro.SysPath, ro.DevPath, ro.ReplayDir, ro.ProcPath, ro.RootFS, err = scenarioPaths(*f.scenarioDir, *f.scenario); err != nil {
			return Options{}, ro, err
		}
	}
	if err := checkPaths(ro); err != nil {
		return Options{}, ro, err
	}
	ro.Refresh = *f.refresh
	var err error
	if ro.DeviceInclude, err = compileOptional("collector.rdma.device-include", *f.devInclude); err != nil {
		return Options{}, ro, err
	}
	if ro.DeviceExclude, err = compileOptional("collector.rdma.device-exclude", *f.devExclude); err != nil {
		return Options{}, ro, err
	}
	if ro.NetdevInclude, err = compileOptional("collector.netdev.include", *f.netdevInclude); err != nil {
		return Options{}, ro, err
	}
	ro.LLDPSocket = *f.lldpSocket
	if ro.EthtoolRawInclude, err = compileOptional("collector.ethtool.raw-include", *f.ethtoolRawInclude); err != nil {
		return Options{}, ro, err
	}
	var o Options
	o.AllPriorities = f.allPriorities != nil && *f.allPriorities
	o.HealthOKSubjects = f.healthOKSubjects != nil && *f.healthOKSubjects
	o.IBCountersOnEthernet = f.ibOnEthernet != nil && *f.ibOnEthernet
	if f.transceiverLanes != nil {
		o.TransceiverLaneMonitors = *f.transceiverLanes
	}
	for _, name := range Names() {
		if f.enable[name] == nil {
			continue
		}
		on := *f.enable[name]
		if *f.disableDefaults && !f.explicit[name] {
			on = false
		}
		if on {
			o.Enabled = append(o.Enabled, name)
		}
	}
	sort.Strings(o.Enabled)
	ro.Sources = Sources(o.Enabled)
	o.Sample = sampleName(*f.scenario, ro)
	return o, ro, nil
}

func compileOptional(flag, expr string) (*regexp.Regexp, error) {
	if expr == "" {
		return nil, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", flag, err)
	}
	return re, nil
}
