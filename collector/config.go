package collector

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/roce-exporter/roce_exporter/probes"
)

// Config holds everything the collectors need, filled from flags or by tests.
type Config struct {
	SysPath string // root of sysfs, "/sys" on a live node
	DevPath string // root of /dev
	Timeout time.Duration

	// Enabled lists the collectors to run.
	Enabled []string

	// DeviceInclude / DeviceExclude select RDMA devices by name. They are
	// applied before any file of an excluded device is touched: reading
	// firmware-restricted functions floods dmesg on some systems.
	DeviceInclude *regexp.Regexp
	DeviceExclude *regexp.Regexp

	// NetdevInclude adds interfaces that do not back an RDMA port.
	NetdevInclude *regexp.Regexp

	// GIDRefresh is how long a port's GID table is cached. A full table is
	// up to 256 files per port; GIDs change only when addresses change.
	GIDRefresh time.Duration

	Ethtool EthtoolConfig

	// Health is filled by the caller that loaded the cluster plan.
	Health HealthConfig

	// Probes is the result store of the probe scheduler; nil when the
	// plan does not enable probes.
	Probes *probes.Store

	fs fsys
}

// EthtoolConfig configures the ethtool and dcb collectors.
type EthtoolConfig struct {
	// ReplayDir, when set, makes the ethtool and dcb collectors read
	// recorded `ethtool -S/-i/-a` and DCB text instead of the kernel.
	ReplayDir  string
	RawInclude *regexp.Regexp
}

func (c *Config) finish() error {
	if c.SysPath == "" {
		c.SysPath = "/sys"
	}
	if c.DevPath == "" {
		c.DevPath = "/dev"
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Second
	}
	if c.GIDRefresh < 0 {
		return fmt.Errorf("gid refresh interval must not be negative")
	}
	if c.fs == nil {
		c.fs = osFS{}
	}
	return nil
}

func (c *Config) sys(parts ...string) string {
	return filepath.Join(append([]string{c.SysPath}, parts...)...)
}

// deviceSelected applies the include/exclude filter to an RDMA device name.
// due reports whether what was read at `at` must be read again at now:
// never read, or read at least --collector.rdma.gid-refresh ago. All the
// slow-changing configuration (GIDs, device and interface metadata, PCIe
// chains, ECN settings, topology) follows this one interval.
func (c *Config) due(at, now time.Time) bool {
	return at.IsZero() || now.Sub(at) >= c.GIDRefresh
}

func (c *Config) deviceSelected(name string) bool {
	if c.DeviceInclude != nil && !c.DeviceInclude.MatchString(name) {
		return false
	}
	if c.DeviceExclude != nil && c.DeviceExclude.MatchString(name) {
		return false
	}
	return true
}

// Flags are the command-line settings of the collectors.
type Flags struct {
	sysPath, devPath  *string
	timeout           *time.Duration
	disableDefaults   *bool
	enable            map[string]*bool
	explicit          map[string]bool
	devInclude        *string
	devExclude        *string
	netdevInclude     *string
	gidRefresh        *time.Duration
	ethtoolReplay     *string
	ethtoolRawInclude *string
}

// RegisterFlags adds the collector flags to app, in node_exporter's style.
func RegisterFlags(app *kingpin.Application) *Flags {
	f := &Flags{enable: map[string]*bool{}, explicit: map[string]bool{}}
	f.sysPath = app.Flag("path.sysfs", "sysfs mountpoint (point it at a fixture tree to replay a captured node).").Default("/sys").String()
	f.devPath = app.Flag("path.dev", "devfs mountpoint, used to find /dev/infiniband.").Default("/dev").String()
	f.timeout = app.Flag("collector.timeout", "Per-scrape time limit for each collector; a collector that exceeds it reports roce_scrape_collector_success 0 and its stuck read is not retried until it returns.").Default("5s").Duration()
	f.disableDefaults = app.Flag("collector.disable-defaults", "Disable all collectors that are enabled by default; enable the ones you want with --collector.<name>.").Default("false").Bool()
	for _, name := range Names() {
		reg := registry[name]
		state := "disabled"
		if reg.defaultEnabled {
			state = "enabled"
		}
		f.enable[name] = app.Flag("collector."+name, fmt.Sprintf("Enable the %s collector (default: %s). %s", name, state, reg.help)).
			Default(fmt.Sprint(reg.defaultEnabled)).
			Action(func(*kingpin.ParseContext) error { f.explicit[name] = true; return nil }).Bool()
	}
	f.devInclude = app.Flag("collector.rdma.device-include", "Regexp of RDMA devices to read (all collectors); others are never touched.").PlaceHolder("REGEX").String()
	f.devExclude = app.Flag("collector.rdma.device-exclude", "Regexp of RDMA devices never to read (all collectors), e.g. firmware-restricted functions.").PlaceHolder("REGEX").String()
	f.gidRefresh = app.Flag("collector.rdma.gid-refresh", "How long a port's configuration (GID table, default RoCE mode, active MTU) and slow-changing device metadata are cached before they are read again (0 = every scrape).").Default("60s").Duration()
	f.netdevInclude = app.Flag("collector.netdev.include", "Regexp of extra network interfaces to report besides those backing RDMA ports.").PlaceHolder("REGEX").String()
	f.ethtoolReplay = app.Flag("collector.ethtool.replay-dir", "Read recorded `ethtool -S/-i/-a` and DCB text from DIR/<iface>.txt, <iface>.driver.txt, <iface>.pause.txt, <iface>.dcb.txt instead of the kernel.").PlaceHolder("DIR").String()
	f.ethtoolRawInclude = app.Flag("collector.ethtool.raw-include", "Regexp of raw ethtool stat names to export as roce_ethtool_<name> (off by default: NICs have thousands).").PlaceHolder("REGEX").String()
	return f
}

// Config turns parsed flags into a Config. Collectors named explicitly on
// the command line survive --collector.disable-defaults.
func (f *Flags) Config() (*Config, error) {
	cfg := &Config{
		SysPath:    *f.sysPath,
		DevPath:    *f.devPath,
		Timeout:    *f.timeout,
		GIDRefresh: *f.gidRefresh,
	}
	var err error
	if cfg.DeviceInclude, err = compileOptional("collector.rdma.device-include", *f.devInclude); err != nil {
		return nil, err
	}
	if cfg.DeviceExclude, err = compileOptional("collector.rdma.device-exclude", *f.devExclude); err != nil {
		return nil, err
	}
	if cfg.NetdevInclude, err = compileOptional("collector.netdev.include", *f.netdevInclude); err != nil {
		return nil, err
	}
	cfg.Ethtool.ReplayDir = *f.ethtoolReplay
	if cfg.Ethtool.RawInclude, err = compileOptional("collector.ethtool.raw-include", *f.ethtoolRawInclude); err != nil {
		return nil, err
	}
	for _, name := range Names() {
		on := *f.enable[name]
		if *f.disableDefaults && !f.explicit[name] {
			on = false
		}
		if on {
			cfg.Enabled = append(cfg.Enabled, name)
		}
	}
	sort.Strings(cfg.Enabled)
	return cfg, nil
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
