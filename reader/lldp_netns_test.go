package reader

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
	"github.com/roce-exporter/roce_exporter/node"
)

// The child half of TestLLDPNeighbourFromLLDPDInNetns runs inside the
// reading namespace (ip netns exec mounts that namespace's /sys), so the
// reader lists the veth there as it lists a NIC on a node.
const (
	lldpChildSocket = "ROCE_TEST_LLDP_SOCKET"
	lldpChildIface  = "ROCE_TEST_LLDP_IFACE"
	lldpChildWant   = "ROCE_TEST_LLDP_WANT" // "present", "kept" or "gone"
)

// lldpLab is network namespaces joined by veth pairs with an lldpd in
// each, every lldpd with its own control socket and configuration, all
// removed when the test ends.
type lldpLab struct {
	t        *testing.T
	ip       string
	lldpd    string
	lldpcli  string
	dir, tag string
}

func newLLDPLab(t *testing.T, tag string) *lldpLab {
	t.Helper()
	testenv.RequireRoot(t)
	l := &lldpLab{t: t, ip: testenv.LookPath(t, "iproute2", "ip"), lldpd: testenv.LookPath(t, "lldpd", "lldpd"),
		lldpcli: testenv.LookPath(t, "lldpd", "lldpcli"), tag: fmt.Sprintf("%s-%d", tag, os.Getpid()%100000)}
	// lldpd's privileged half creates the socket but lldpcli's requests
	// go through paths _lldpd must traverse: t.TempDir's parent is 0700.
	dir, err := os.MkdirTemp("", "roce-lldp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	l.dir = dir
	return l
}

func (l *lldpLab) run(args ...string) {
	l.t.Helper()
	if out, err := exec.Command(l.ip, args...).CombinedOutput(); err != nil {
		l.t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// netns adds a namespace named after role and the lab's tag.
func (l *lldpLab) netns(role string) string {
	l.t.Helper()
	ns := "roce-lldp-" + role + "-" + l.tag
	l.run("netns", "add", ns)
	l.t.Cleanup(func() { _ = exec.Command(l.ip, "netns", "del", ns).Run() })
	return ns
}

// veth joins a in nsA and b in nsB, both up.
func (l *lldpLab) veth(nsA, a, nsB, b string) {
	l.t.Helper()
	l.run("link", "add", a, "netns", nsA, "type", "veth", "peer", "name", b, "netns", nsB)
	l.run("-n", nsA, "link", "set", a, "up")
	l.run("-n", nsB, "link", "set", b, "up")
}

// startLLDPD runs lldpd in ns on ifaces with conf, and returns it and its
// control socket.
func (l *lldpLab) startLLDPD(ns, ifaces, name, conf string) (*exec.Cmd, string) {
	l.t.Helper()
	sock := filepath.Join(l.dir, name+".sock")
	confPath := testenv.WriteFile(l.t, l.dir, name+".conf", conf)
	logf, err := os.Create(filepath.Join(l.dir, name+".log"))
	if err != nil {
		l.t.Fatal(err)
	}
	// -d: foreground, no pid file to clash with a system lldpd; -u and
	// -O: this test's own control socket and configuration only.
	cmd := exec.Command(l.ip, "netns", "exec", ns, l.lldpd, "-d", "-u", sock, "-O", confPath, "-I", ifaces)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
	})
	return cmd, sock
}

// configure runs `lldpcli -u sock configure args...`: as arguments, a
// value reaches lldpd unchanged (its configuration file's tokenizer would
// not pass a newline).
func (l *lldpLab) configure(sock string, args ...string) {
	l.t.Helper()
	// A freshly started lldpd needs a moment to open its socket.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, err := exec.Command(l.lldpcli, append([]string{"-u", sock, "configure"}, args...)...).CombinedOutput()
		if err == nil {
			return
		}
		if !strings.Contains(string(out), "unable to connect") || time.Now().After(deadline) {
			l.t.Fatalf("lldpcli configure %q: %v\n%s", args, err, out)
		}
	}
}

// child runs the test function name inside ns with env added, and returns
// its output; it fails the test when the child fails.
func (l *lldpLab) child(ns, name string, env ...string) string {
	l.t.Helper()
	cmd := exec.Command(l.ip, "netns", "exec", ns, os.Args[0], "-test.run=^"+name+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		var logs []string
		for _, f := range []string{"switch", "hostile"} {
			if b, rerr := os.ReadFile(filepath.Join(l.dir, f+".log")); rerr == nil {
				logs = append(logs, f+" lldpd log:\n"+string(b))
			}
		}
		l.t.Fatalf("reader in %s: %v\n%s\n%s", ns, err, out, strings.Join(logs, "\n"))
	}
	return string(out)
}

// TestLLDPNeighbourFromLLDPDInNetns is the lldp source against the real
// lldpd: two network namespaces joined by a veth pair, an lldpd in each
// with its own control socket, the "switch" side announcing itself as
// leaf-3 port Ethernet12. The exporter's reader, in the other namespace
// and pointed at that side's lldpd socket, must report the neighbour; once
// the switch side's lldpd stops, the neighbour must age out (TTL 4 s).
func TestLLDPNeighbourFromLLDPDInNetns(t *testing.T) {
	l := newLLDPLab(t, "basic")
	nsSwitch, nsHost := l.netns("sw"), l.netns("host")
	l.veth(nsSwitch, "lldpsw0", nsHost, "lldphost0")
	sw, _ := l.startLLDPD(nsSwitch, "lldpsw0", "switch", `configure system hostname leaf-3
configure lldp tx-interval 1
configure ports lldpsw0 lldp portidsubtype local Ethernet12 description "leaf-3 Ethernet12 to gpu-07 rail 0"
`)
	_, hostSock := l.startLLDPD(nsHost, "lldphost0", "host", "configure system hostname gpu-07\nconfigure lldp tx-interval 1\n")

	child := func(want string) string {
		t.Helper()
		return l.child(nsHost, "TestLLDPNetnsChild", lldpChildSocket+"="+hostSock, lldpChildIface+"=lldphost0", lldpChildWant+"="+want)
	}
	out := child("present")
	t.Logf("reader inside %s:\n%s", nsHost, grepLines(out, "neighbour"))

	// The link goes down (the child takes its interface down once it has
	// seen the neighbour): lldpd forgets the neighbour after its TTL, the
	// exporter keeps the last one, marked link down.
	out = child("kept")
	t.Logf("link down:\n%s", grepLines(out, "neighbour"))
	l.run("-n", nsHost, "link", "set", "lldphost0", "up")

	// The switch side goes silent with the link up: the neighbour must
	// leave the snapshot.
	_ = sw.Process.Kill()
	_ = sw.Wait()
	child("gone")
}

// spoofingSystemName is a system name that, written by lldpd up to 1.0.21
// as an unescaped `-f json` key, closes its key and writes a neighbour
// "spoofed-sw" port "Ethernet99" of its own (internal/lldpcli/testdata).
const spoofingSystemName = `spoofed-sw": {"id": {"type": "mac", "value": "02:00:00:00:00:99"}}}, "port": {"id": {"type": "local", "value": "Ethernet99"}}}}, {"zz": {"chassis": {"x`

// TestLLDPHostileNeighboursInNetns puts hostile neighbours before the
// exporter's reader through the real lldpd: a chassis whose system name is
// spoofingSystemName on h0, and on leaf-3's ports h2..h5 port descriptions
// with a newline, 300 bytes, 90 bytes that are not UTF-8 and a raw 0x1F,
// next to an ordinary port h1. Each hostile neighbour may cost its own
// port, never another's; nobody may be cabled to what a name wrote.
func TestLLDPHostileNeighboursInNetns(t *testing.T) {
	l := newLLDPLab(t, "hostile25")
	nsSwitch, nsHostile, nsHost := l.netns("sw"), l.netns("evil"), l.netns("host")
	l.veth(nsHostile, "x0", nsHost, "h0")
	for i := 1; i <= 5; i++ {
		l.veth(nsSwitch, fmt.Sprintf("s%d", i), nsHost, fmt.Sprintf("h%d", i))
	}
	_, swSock := l.startLLDPD(nsSwitch, "s1,s2,s3,s4,s5", "switch", `configure system hostname leaf-3
configure lldp tx-interval 1
configure ports s1 lldp portidsubtype local Ethernet12 description "leaf-3 Ethernet12 to gpu-07 rail 0"
`)
	_, evilSock := l.startLLDPD(nsHostile, "x0", "hostile", "configure lldp tx-interval 1\n")
	_, hostSock := l.startLLDPD(nsHost, "h0,h1,h2,h3,h4,h5", "host", "configure system hostname gpu-07\nconfigure lldp tx-interval 1\n")
	l.configure(evilSock, "system", "hostname", spoofingSystemName)
	l.configure(evilSock, "ports", "x0", "lldp", "portidsubtype", "local", "Ethernet1", "description", "hostile Ethernet1")

	env := []string{lldpChildSocket + "=" + hostSock, lldpChildIface + "=h0,h1,h2,h3,h4,h5"}
	out := l.child(nsHost, "TestLLDPHostileNetnsChild", append(env, lldpChildWant+"=spoof")...)
	t.Logf("the spoofing name:\n%s", grepLines(out, "neighbour"))

	for i, descr := range []string{"first line\nsecond line", strings.Repeat("L", 300), strings.Repeat("\xff", 90), "unit\x1fseparator"} {
		l.configure(swSock, "ports", fmt.Sprintf("s%d", i+2), "lldp", "portidsubtype", "local", fmt.Sprintf("Ethernet%d", 13+i), "description", descr)
	}
	out = l.child(nsHost, "TestLLDPHostileNetnsChild", append(env, lldpChildWant+"=isolated")...)
	t.Logf("bad port descriptions:\n%s", grepLines(out, "neighbour"))
}

// TestLLDPHostileNetnsChild runs only as the child of the test above. With
// "spoof" it waits for h0's neighbour as the hostile chassis sent it; with
// "isolated" for h2..h5's neighbours to be skipped, each logged, while h0's
// and h1's stay.
func TestLLDPHostileNetnsChild(t *testing.T) {
	sock, want := os.Getenv(lldpChildSocket), os.Getenv(lldpChildWant)
	if sock == "" {
		t.Skip("child of TestLLDPHostileNeighboursInNetns")
	}
	logs := &testenv.SyncBuffer{}
	o := Options{Timeout: 5 * time.Second, Sources: []string{node.SourceLLDP},
		NetdevInclude: regexp.MustCompile(`^h[0-9]$`), LLDPSocket: sock}
	r, err := New(o, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	skipped := []string{"h2", "h3", "h4", "h5"}
	deadline := time.Now().Add(20 * time.Second)
	for {
		res := r.Read()
		st, got := res.Snapshot.Sources[node.SourceLLDP], res.Snapshot.LLDP
		for _, n := range got {
			if n.PortID == "Ethernet99" || n.ChassisName == "spoofed-sw" || n.ChassisID == "02:00:00:00:00:99" {
				t.Fatalf("%s is cabled to what a system name wrote: %+v", n.Interface, n)
			}
		}
		h0, h1 := got["h0"], got["h1"]
		ready := st == node.SourceOK && h0 != nil && h0.ChassisName == spoofingSystemName && h0.SwitchPort() == "Ethernet1" &&
			h1 != nil && h1.Switch() == "leaf-3" && h1.SwitchPort() == "Ethernet12"
		if want == "isolated" {
			for _, iface := range skipped {
				ready = ready && got[iface] == nil && strings.Contains(logs.String(), "LLDP neighbour of "+iface)
			}
		}
		if ready {
			for _, iface := range slices.Sorted(maps.Keys(got)) {
				b, _ := json.Marshal(got[iface])
				t.Logf("neighbour of %s: %s", iface, b)
			}
			if want == "isolated" {
				t.Logf("neighbours skipped: %d read errors\n%s", r.ReadErrors(node.SourceLLDP), grepLines(logs.String(), "LLDP neighbour"))
			}
			return
		}
		if time.Now().After(deadline) {
			b, _ := json.MarshalIndent(got, "", " ")
			t.Fatalf("want %s: status %s, results %+v, neighbours %s\nlog:\n%s", want, st, res.Sources, b, logs)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// TestLLDPNetnsChild runs only as the child of the test above.
func TestLLDPNetnsChild(t *testing.T) {
	sock, iface, want := os.Getenv(lldpChildSocket), os.Getenv(lldpChildIface), os.Getenv(lldpChildWant)
	if sock == "" {
		t.Skip("child of TestLLDPNeighbourFromLLDPDInNetns")
	}
	o := Options{Timeout: 5 * time.Second, Sources: []string{node.SourceLLDP},
		NetdevInclude: regexp.MustCompile("^" + regexp.QuoteMeta(iface) + "$"), LLDPSocket: sock}
	r := newTestReader(t, o)
	deadline := time.Now().Add(20 * time.Second)
	tookDown := false
	for {
		res := r.Read()
		st := res.Snapshot.Sources[node.SourceLLDP]
		n := res.Snapshot.LLDP[iface]
		switch {
		case want == "present" && st == node.SourceOK && n != nil:
			b, _ := json.Marshal(n)
			t.Logf("neighbour of %s: %s", iface, b)
			if n.ChassisName != "leaf-3" || n.SwitchPort() != "Ethernet12" || n.PortIDType != "local" ||
				n.PortDescr != "leaf-3 Ethernet12 to gpu-07 rail 0" || n.ChassisIDType != "mac" || n.ChassisID == "" {
				t.Fatalf("neighbour %+v", n)
			}
			return
		case want == "kept" && !tookDown && st == node.SourceOK && n != nil:
			// The reader has seen the neighbour: now the link goes down.
			if out, err := exec.Command("ip", "link", "set", iface, "down").CombinedOutput(); err != nil {
				t.Fatalf("ip link set %s down: %v\n%s", iface, err, out)
			}
			tookDown = true
		case want == "kept" && tookDown && st == node.SourceOK && n != nil && n.LinkDown:
			if n.ChassisName != "leaf-3" || n.SwitchPort() != "Ethernet12" {
				t.Fatalf("kept neighbour %+v", n)
			}
			b, _ := json.Marshal(n)
			t.Logf("neighbour of %s kept while its link is down: %s", iface, b)
			return
		case want == "gone" && st == node.SourceOK && n == nil:
			t.Logf("neighbour of %s gone; lldpd still answers (status %s)", iface, st)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("want %s: status %s, neighbours %+v, results %+v", want, st, res.Snapshot.LLDP, res.Sources)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return strings.Join(out, "\n")
}
