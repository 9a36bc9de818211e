package reader

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/dcbnl"
	"github.com/roce-exporter/roce_exporter/internal/nicstats"
	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
	"github.com/roce-exporter/roce_exporter/node"
)

// spyKernel stands for the live ethtool and DCB sources and counts the
// questions they were asked.
type spyKernel struct{ calls atomic.Int32 }

func (s *spyKernel) stats(string) (nicstats.Stats, error) {
	s.calls.Add(1)
	return nicstats.Stats{Names: []string{"rx_prio3_pause"}, Values: []uint64{7}}, nil
}
func (s *spyKernel) pause(string) (*node.GlobalPause, error) {
	s.calls.Add(1)
	return &node.GlobalPause{RX: true}, nil
}
func (s *spyKernel) ieee(string) (*dcbnl.IEEE, error) {
	s.calls.Add(1)
	return &dcbnl.IEEE{PFC: &dcbnl.PFC{Cap: 8, Enabled: [8]bool{3: true}}}, nil
}
func (s *spyKernel) close() error { return nil }

// hostInterfaceWithDriver names an interface of this machine whose driver
// the kernel reports (eth0's virtio_net on a VM), or "" when none does.
func hostInterfaceWithDriver(t *testing.T) (string, string) {
	t.Helper()
	ifaces, err := net.Interfaces()
	if err != nil {
		return "", ""
	}
	h := nicstats.NewReader()
	defer h.Close()
	d := driverInfoSource{ioctl: h}
	for _, i := range ifaces {
		if di, err := d.info(i.Name); err == nil && di.Driver != "" && i.Name != "lo" {
			return i.Name, di.Driver
		}
	}
	return "", ""
}

// A node read from a copied sysfs tree (--path.sysfs at a fixture or a
// capture) without a replay directory must not mix in this machine's live
// data: a fixture's eth0 used to be reported with this machine's virtio_net
// driver, its PFC state and its ethtool counters.
func TestCopiedTreeDoesNotAskTheLiveKernel(t *testing.T) {
	hostIface, hostDriver := hostInterfaceWithDriver(t)
	n := sysfixture.HealthyCX7(1)
	if hostIface != "" {
		n.Devices[0].Netdev = hostIface
		for i := range n.Devices[0].GIDs {
			n.Devices[0].GIDs[i].Ndev = hostIface
		}
		t.Logf("this machine's %s has driver %s", hostIface, hostDriver)
	}
	netdev := n.Devices[0].Netdev
	root := filepath.Join(t.TempDir(), "node")
	if err := sysfixture.Write(root, n); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	r, err := New(Options{
		SysPath: filepath.Join(root, "sys"), DevPath: filepath.Join(root, "dev"), Timeout: 2 * time.Second,
		Sources:       []string{node.SourceNetdev, node.SourceEthtool, node.SourceDCB},
		NetdevInclude: regexp.MustCompile("^lo$"), // the fixture's lo is named like this machine's
	}, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if r.live() {
		t.Fatal("a copied tree taken for the live sysfs")
	}
	spy := &spyKernel{}
	r.byName[node.SourceEthtool].src.(*ethtoolSource).src = spy
	r.byName[node.SourceDCB].src.(*dcbSource).src = spy

	res := r.Read()
	if c := spy.calls.Load(); c != 0 {
		t.Errorf("the kernel was asked %d times about a copied tree's interfaces", c)
	}
	for _, sr := range res.Sources {
		if sr.Name != node.SourceNetdev && !errors.Is(sr.Err, ErrNoData) {
			t.Errorf("%s: %v, want absent (no data)", sr.Name, sr.Err)
		}
	}
	sn := res.Snapshot
	if len(sn.Ethtool) != 0 || len(sn.DCB) != 0 {
		t.Errorf("ethtool %v, DCB %v from a copied tree", sn.Ethtool, sn.DCB)
	}
	iface := sn.Interfaces[netdev]
	if iface == nil {
		t.Fatalf("%s not read from the tree: %v", netdev, sn.Interfaces)
	}
	// The driver and bus come from the tree's own links, nothing from ethtool -i.
	if iface.Driver != "mlx5_core" || iface.BusInfo != n.Devices[0].PCIAddress || iface.FirmwareVersion != "" {
		t.Errorf("%s: driver %q bus %q firmware %q; want the tree's mlx5_core at %s and no firmware",
			netdev, iface.Driver, iface.BusInfo, iface.FirmwareVersion, n.Devices[0].PCIAddress)
	}
	if lo := sn.Interfaces["lo"]; lo == nil || lo.Driver != "" || lo.AddressesKnown {
		t.Errorf("lo = %+v, want the tree's (no driver, addresses unknown)", lo)
	}
	for _, src := range []string{node.SourceNetdev, node.SourceEthtool, node.SourceDCB} {
		if n := r.ReadErrors(src); n != 0 {
			t.Errorf("%s: %d read errors", src, n)
		}
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			t.Errorf("not asking the kernel must be quiet: %s", line)
		}
	}
}

// The DaemonSet mounts the host's /sys at /host/sys: that is the running
// kernel's sysfs, and ethtool and DCB must still be read there.
func TestLiveSysfsIsRecognisedAtAnotherPath(t *testing.T) {
	if _, err := os.Stat("/sys/class/net"); err != nil {
		t.Skip("no sysfs mounted at /sys")
	}
	hostSys := filepath.Join(t.TempDir(), "host-sys")
	if err := os.Symlink("/sys", hostSys); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, replay string
		live, copy   bool
	}{
		{"/sys", "", true, false},
		{"/sys/", "", true, false},
		{hostSys, "", true, false},
		{filepath.Join(fixtures, "ib-hdr", "sys"), "", false, true},
		{filepath.Join(fixtures, "mlx5-8x400g-healthy", "sys"), filepath.Join(fixtures, "mlx5-8x400g-healthy", "replay"), false, false},
	} {
		o := Options{SysPath: tc.path, ReplayDir: tc.replay}
		r := newTestReader(t, o)
		if r.live() != tc.live || r.copyWithoutCaptures() != tc.copy {
			t.Errorf("%s (replay %q): live %v copy-without-captures %v, want %v %v", tc.path, tc.replay, r.live(), r.copyWithoutCaptures(), tc.live, tc.copy)
		}
	}
}
