package reader

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
	"github.com/roce-exporter/roce_exporter/node"
)

// hostFixture lays out what the host source reads of a captured node in
// dir: procfs (net.ipv4.conf of all and the healthy fixture's first two
// interfaces, and the process's limits and status), the `ip -j` captures of
// internal/rtnl/testdata, and a root filesystem with limits and systemd
// files. It returns the reader's options.
func hostFixture(t *testing.T, dir string) Options {
	t.Helper()
	o := fixtureOptions("mlx5-8x400g-healthy", node.SourceHost)
	proc, root, replay := filepath.Join(dir, "proc"), filepath.Join(dir, "root"), filepath.Join(dir, "replay")
	for name, v := range map[string]string{"all": "1 2 2", "ens1f0np0": "0 0 1", "ens2f0np0": "0 0 0"} {
		f := strings.Fields(v)
		for i, k := range []string{"arp_ignore", "arp_announce", "rp_filter"} {
			testenv.WriteFile(t, mkdir(t, proc, "sys/net/ipv4/conf", name), k, f[i]+"\n")
		}
	}
	testenv.WriteFile(t, mkdir(t, proc, "self"), "limits", "Limit                     Soft Limit           Hard Limit           Units     \nMax locked memory         8388608              8388608              bytes     \n")
	testenv.WriteFile(t, filepath.Join(proc, "self"), "status", "Name:\troce_exporter\nCapEff:\t0000000000004000\n")
	for from, to := range map[string]string{"ip-rule-per-rail.json": ipRuleReplayFile, "ip-route-per-rail.json": ipRouteReplayFile, "ip-neigh-arp-flux.json": ipNeighReplayFile} {
		b, err := os.ReadFile(filepath.Join("..", "internal", "rtnl", "testdata", from))
		if err != nil {
			t.Fatal(err)
		}
		testenv.WriteFile(t, mkdir(t, replay), to, string(b))
	}
	testenv.WriteFile(t, mkdir(t, root, "etc/security"), "limits.conf", "#<domain> <type> <item> <value>\n*  soft  memlock  65536\n")
	testenv.WriteFile(t, mkdir(t, root, "etc/security/limits.d"), "rdma.conf", "@rdma - memlock unlimited\n")
	testenv.WriteFile(t, mkdir(t, root, "etc/systemd"), "system.conf", "[Manager]\n#DefaultLimitMEMLOCK=8M\n")
	testenv.WriteFile(t, mkdir(t, root, "usr/lib/systemd/system.conf.d"), "10-memlock.conf", "[Manager]\nDefaultLimitMEMLOCK=64M\n")
	testenv.WriteFile(t, mkdir(t, root, "etc/systemd/system.conf.d"), "20-memlock.conf", "[Manager]\nDefaultLimitMEMLOCK=infinity\n")
	o.ProcPath, o.RootFS, o.ReplayDir = proc, root, replay
	return o
}

func mkdir(t *testing.T, parts ...string) string {
	t.Helper()
	p := filepath.Join(parts...)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHostSourceFromCaptures(t *testing.T) {
	res := newTestReader(t, hostFixture(t, t.TempDir())).Read()
	h := res.Snapshot.Host
	if st := res.Snapshot.Sources[node.SourceHost]; st != node.SourceOK || h == nil {
		t.Fatalf("host source %s: %+v", st, res.Sources)
	}
	if c := h.IPv4Conf; c["all"] == nil || *c["all"] != (node.IPv4Conf{ARPIgnore: 1, ARPAnnounce: 2, RPFilter: 2}) ||
		*c["ens1f0np0"] != (node.IPv4Conf{RPFilter: 1}) || c["ens3f0np0"] != nil {
		t.Errorf("sysctls %+v", c)
	}
	if len(h.Rules) != 5 || h.Rules[1].Table != "101" || len(h.Routes) == 0 || len(h.Neighbors) != 2 || h.Neighbors[1].MAC != "0a:ab:ea:c9:46:ca" {
		t.Errorf("routing %+v %+v %+v", h.Rules, h.Routes, h.Neighbors)
	}
	m := h.Memlock
	want := node.Memlock{HostConfig: true, SelfKnown: true, SelfSoft: 8 << 20, SelfHard: 8 << 20, SelfCapIPCLock: true}
	if m == nil || m.HostConfig != want.HostConfig || m.SelfKnown != want.SelfKnown || m.SelfSoft != want.SelfSoft || m.SelfCapIPCLock != want.SelfCapIPCLock {
		t.Fatalf("memlock %+v", m)
	}
	// The /etc drop-in hides nothing here (other names): the last in name
	// order, 20-memlock.conf, wins.
	if m.SystemdDefault == nil || m.SystemdDefault.Soft != node.Unlimited || !strings.HasSuffix(m.SystemdDefault.File, "etc/systemd/system.conf.d/20-memlock.conf") {
		t.Errorf("systemd default %+v", m.SystemdDefault)
	}
	if len(m.Limits) != 2 || m.Limits[0].Domain != "*" || m.Limits[0].Soft != 64<<20 || m.Limits[1].Domain != "@rdma" {
		t.Errorf("limits %+v", m.Limits)
	}
	if n := newTestReader(t, hostFixture(t, t.TempDir())).ReadErrors(node.SourceHost); n != 0 {
		t.Errorf("%d read errors", n)
	}
}

// A broken capture costs its part and is counted; a copied tree without
// procfs, captures or root filesystem has nothing to read: absent.
func TestHostSourceBadAndMissingInput(t *testing.T) {
	dir := t.TempDir()
	o := hostFixture(t, dir)
	testenv.WriteFile(t, o.ReplayDir, ipRouteReplayFile, "default via 10.0.0.1 dev eth0\n")
	testenv.WriteFile(t, filepath.Join(o.ProcPath, "sys/net/ipv4/conf/all"), "arp_ignore", "garbage\n")
	r := newTestReader(t, o)
	res := r.Read()
	h := res.Snapshot.Host
	if h == nil || h.Routes != nil || h.Rules == nil || h.IPv4Conf["all"].ARPIgnore != -1 || h.IPv4Conf["all"].RPFilter != 2 {
		t.Errorf("host %+v", h)
	}
	if n := r.ReadErrors(node.SourceHost); n != 2 {
		t.Errorf("%d read errors, want 2 (the route capture, the sysctl)", n)
	}
	bare := newTestReader(t, fixtureOptions("mlx5-8x400g-healthy", node.SourceHost)).Read()
	if st := bare.Snapshot.Sources[node.SourceHost]; st != node.SourceAbsent || bare.Snapshot.Host != nil {
		t.Errorf("copied tree without host files: %s %+v", st, bare.Snapshot.Host)
	}
}

// The container signs: without --path.rootfs the root is the exporter's.
func TestHostSourceContainer(t *testing.T) {
	o := hostFixture(t, t.TempDir())
	root := o.RootFS
	testenv.WriteFile(t, root, ".dockerenv", "")
	c := &hostSource{r: newTestReader(t, o)}
	if why := c.container(root); why != "/.dockerenv" {
		t.Errorf("container(%s) = %q", root, why)
	}
	if why := c.container(t.TempDir()); why != "" && !strings.Contains(why, "cgroup") && !strings.Contains(why, "KUBERNETES") {
		t.Errorf("a plain root is a container: %q", why)
	}
}
