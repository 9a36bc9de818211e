package reader

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"
)

// A real /proc/net/route (Linux 6.1, a host with a docker bridge and a
// second default route of higher metric).
const procNetRoute = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT                                                       \n" +
	"eno2\t00000000\t0100000A\t0003\t0\t0\t200\t00000000\t0\t0\t0                                                                               \n" +
	"eno1\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0                                                                               \n" +
	"eno1\t0000000A\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0                                                                               \n" +
	"docker0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0                                                                               \n"

func TestDefaultRouteInterface(t *testing.T) {
	if got := defaultRouteInterface(procNetRoute); got != "eno1" {
		t.Errorf("default route via %q, want eno1 (the lower metric)", got)
	}
	if got := defaultRouteInterface("Iface\tDestination\n"); got != "" {
		t.Errorf("no default route: %q", got)
	}
	proc := t.TempDir()
	os.MkdirAll(filepath.Join(proc, "net"), 0o755)
	os.WriteFile(filepath.Join(proc, "net", "route"), []byte(procNetRoute), 0o644)
	if got := DefaultRouteInterface(Options{SysPath: t.TempDir(), ProcPath: proc}); got != "eno1" {
		t.Errorf("from --path.proc: %q", got)
	}
	// A copied sysfs without --path.proc says nothing of this machine's routes.
	if got := DefaultRouteInterface(Options{SysPath: t.TempDir()}); got != "" {
		t.Errorf("copied sysfs: %q", got)
	}
}

func TestHostAddresses(t *testing.T) {
	replay := t.TempDir()
	os.WriteFile(filepath.Join(replay, "ip-addr.txt"), []byte("lo UNKNOWN 127.0.0.1/8 ::1/128\neno1 UP 10.0.0.11/24 fe80::1/64\nens1f0np0 UP 192.168.100.11/24\n"), 0o644)
	all, ok := HostAddresses(Options{SysPath: t.TempDir(), ReplayDir: replay})
	if !ok || len(all["eno1"]) != 2 || all["eno1"][0] != netip.MustParsePrefix("10.0.0.11/24") {
		t.Errorf("replay: %v %v", all, ok)
	}
	if _, ok := HostAddresses(Options{SysPath: t.TempDir()}); ok {
		t.Error("a copied sysfs without captures took this machine's addresses")
	}
	live, ok := HostAddresses(Options{SysPath: "/sys"})
	if !ok || len(live["lo"]) == 0 {
		t.Errorf("live: %v %v", live, ok)
	}
}
