package reader

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/rtnl"
	"github.com/roce-exporter/roce_exporter/internal/safefile"
	"github.com/roce-exporter/roce_exporter/node"
)

// Captures of the host's routing state in a replay directory.
const (
	ipRuleReplayFile  = "ip-rule.json"  // ip -j rule show
	ipRouteReplayFile = "ip-route.json" // ip -j route show table all
	ipNeighReplayFile = "ip-neigh.json" // ip -j neigh show
)

// maxEtcFile bounds a configuration file under /etc the source reads.
const maxEtcFile = 1 << 20

// hostSource reads what RDMA traffic and jobs depend on besides the NICs:
// the compute interfaces' ARP and reverse-path sysctls (procfs), the
// policy rules, routes and neighbours (rtnetlink, or `ip -j` captures), and
// the memlock limits jobs start with (systemd's and PAM's files under the
// root filesystem, and the exporter's own limit). All of it is
// configuration or changes slowly, so it is read on the refresh interval.
type hostSource struct {
	r      *Reader
	at     time.Time
	last   *node.HostState
	client *rtnl.Client
	replay replayCache
}

func init() {
	registerSource(node.SourceHost, "ARP sysctls, policy routing, neighbours, memlock limits.", newHostSource)
}

func newHostSource(r *Reader) source {
	c := &hostSource{r: r}
	if r.opts.ReplayDir == "" && r.live() {
		c.client = rtnl.New(rtnl.Config{Timeout: r.opts.Timeout})
	}
	return c
}

func (c *hostSource) close() error {
	if c.client != nil {
		return c.client.Close()
	}
	return nil
}

func (c *hostSource) read(sc *scan) (func(*node.Snapshot), error) {
	ifaces, err := sc.ethernetInterfaces()
	if err != nil {
		return nil, err
	}
	if c.last == nil || c.r.due(c.at, sc.Time) {
		c.at = sc.Time
		c.last = c.load(sc, ifaces)
	}
	h := c.last
	if h.IPv4Conf == nil && h.Rules == nil && h.Routes == nil && h.Neighbors == nil && h.Memlock == nil {
		return nil, errors.Join(ErrNoData, errors.New("no procfs, routing capture or root filesystem of this node to read"))
	}
	return func(sn *node.Snapshot) { sn.Host = h }, nil
}

func (c *hostSource) load(sc *scan, ifaces []string) *node.HostState {
	h := &node.HostState{IPv4Conf: c.readSysctls(sc, ifaces)}
	switch {
	case c.r.opts.ReplayDir != "":
		dir := c.r.opts.ReplayDir
		h.Rules = loadCapture(c, sc, filepath.Join(dir, ipRuleReplayFile), rtnl.ParseRules)
		h.Routes = loadCapture(c, sc, filepath.Join(dir, ipRouteReplayFile), rtnl.ParseRoutes)
		h.Neighbors = loadCapture(c, sc, filepath.Join(dir, ipNeighReplayFile), rtnl.ParseNeighbors)
	case c.client != nil:
		if t, err := c.client.Dump(); err != nil {
			sc.readError(node.SourceHost, "rtnetlink rules, routes and neighbours", err)
		} else {
			h.Rules, h.Routes, h.Neighbors = t.Rules, t.Routes, t.Neighbors
		}
	}
	h.Memlock = c.readMemlock(sc)
	return h
}

// loadCapture reads one `ip -j` capture; a missing one is not read, a
// broken one a read error.
func loadCapture[T any](c *hostSource, sc *scan, path string, parse func(io.Reader) ([]T, error)) []T {
	v, err := c.replay.load(path, func(f io.Reader) (any, error) { return parse(f) })
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			sc.readError(node.SourceHost, path, err)
		}
		return nil
	}
	return v.([]T)
}

var sysctlNames = [3]string{"arp_ignore", "arp_announce", "rp_filter"}

// readSysctls reads net.ipv4.conf.{all,<if>} of the compute interfaces
// from procfs (the exporter's network namespace: the host's when it runs
// with the host network, as it must to see the NICs).
func (c *hostSource) readSysctls(sc *scan, ifaces []string) map[string]*node.IPv4Conf {
	if _, ok := c.r.proc("sys", "net", "ipv4", "conf", "all"); !ok {
		return nil
	}
	out := map[string]*node.IPv4Conf{}
	for _, name := range append([]string{"all"}, ifaces...) {
		conf := &node.IPv4Conf{}
		found := false
		for i, v := range []*int{&conf.ARPIgnore, &conf.ARPAnnounce, &conf.RPFilter} {
			*v = -1
			p, _ := c.r.proc("sys", "net", "ipv4", "conf", name, sysctlNames[i])
			text, err := readSysfsFile(c.r.fs, p)
			if err != nil {
				if !isVanished(err) {
					sc.readError(node.SourceHost, p, err)
				}
				continue
			}
			n, err := strconv.Atoi(text)
			if err != nil || n < 0 {
				sc.readError(node.SourceHost, p, fmt.Errorf("%q is not a sysctl value", text))
				continue
			}
			*v, found = n, true
		}
		if found {
			out[name] = conf
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// rootFS is where the host's files are, false when there is none to read:
// --path.rootfs, else / on a live node; a copied sysfs tree has no root
// filesystem of its node unless one is given.
func (c *hostSource) rootFS() (string, bool) {
	switch {
	case c.r.opts.RootFS != "":
		return c.r.opts.RootFS, true
	case c.r.live():
		return "/", true
	}
	return "", false
}

// readMemlock reads what sets RLIMIT_MEMLOCK for jobs, and the exporter's
// own limit and CAP_IPC_LOCK.
func (c *hostSource) readMemlock(sc *scan) *node.Memlock {
	m := &node.Memlock{}
	known := false
	if p, ok := c.r.proc("self", "limits"); ok {
		if text, err := safefile.ReadRegular(p, maxEtcFile); err == nil {
			soft, hard, perr := node.ParseProcLimitsMemlock(text)
			if perr != nil {
				sc.readError(node.SourceHost, p, perr)
			} else {
				m.SelfSoft, m.SelfHard, m.SelfKnown, known = soft, hard, true, true
			}
			if st, _ := c.r.proc("self", "status"); m.SelfKnown {
				if text, err := safefile.ReadRegular(st, maxEtcFile); err == nil {
					m.SelfCapIPCLock = node.HasCapability(text, node.CapIPCLock)
				}
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			sc.readError(node.SourceHost, p, err)
		}
	}
	root, ok := c.rootFS()
	if !ok {
		if !known {
			return nil
		}
		return m
	}
	m.HostConfig = true
	if c.r.opts.RootFS == "" {
		if why := c.container(root); why != "" {
			m.HostConfig, m.Container = false, why
		}
	}
	etc := filepath.Join(root, "etc")
	var err error
	m.SystemdDefault, err = readSystemdMemlock(root)
	if err != nil {
		sc.readError(node.SourceHost, filepath.Join(etc, "systemd", "system.conf"), err)
	}
	files := []string{filepath.Join(etc, "security", "limits.conf")}
	if more, err := filepath.Glob(filepath.Join(etc, "security", "limits.d", "*.conf")); err == nil {
		files = append(files, more...) // Glob sorts, as pam_limits does
	}
	for _, f := range files {
		data, err := safefile.ReadRegular(f, maxEtcFile)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				sc.readError(node.SourceHost, f, err)
			}
			continue
		}
		m.Limits = append(m.Limits, node.ParseLimitsConf(f, data)...)
	}
	return m
}

// container names the sign that the exporter runs in a container whose
// root is not the host's, "" when it sees none.
func (c *hostSource) container(root string) string {
	for _, f := range []string{".dockerenv", "run/.containerenv"} {
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			return "/" + f
		}
	}
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		return "a Kubernetes pod (KUBERNETES_SERVICE_HOST)"
	}
	if p, ok := c.r.proc("self", "cgroup"); ok {
		if data, err := safefile.ReadRegular(p, maxEtcFile); err == nil {
			for _, word := range []string{"kubepods", "docker", "containerd", "libpod", "lxc"} {
				if bytes.Contains(data, []byte(word)) {
					return "cgroup " + strings.TrimSpace(firstLineWith(data, word))
				}
			}
		}
	}
	return ""
}

func firstLineWith(data []byte, word string) string {
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, word) {
			return l
		}
	}
	return ""
}

// readSystemdMemlock reads DefaultLimitMEMLOCK= the way systemd reads its
// manager configuration: system.conf, then the drop-ins of
// system.conf.d/*.conf in /usr/lib, /usr/local/lib, /run and /etc, by file
// name (a name in /etc hides the same name in /run, and so on), the last
// assignment winning.
func readSystemdMemlock(root string) (*node.MemlockSetting, error) {
	byName := map[string]string{}
	for _, dir := range []string{"usr/lib", "usr/local/lib", "run", "etc"} {
		matches, _ := filepath.Glob(filepath.Join(root, dir, "systemd", "system.conf.d", "*.conf"))
		for _, m := range matches {
			byName[filepath.Base(m)] = m
		}
	}
	files := []string{filepath.Join(root, "etc", "systemd", "system.conf")}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		files = append(files, byName[n])
	}
	var out *node.MemlockSetting
	var errs []error
	for _, f := range files {
		data, err := safefile.ReadRegular(f, maxEtcFile)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		s, err := node.ParseSystemdMemlock(f, data)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f, err))
		}
		if s != nil {
			out = s
		}
	}
	return out, errors.Join(errs...)
}
