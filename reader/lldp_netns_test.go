package reader

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// TestLLDPNeighbourFromLLDPDInNetns is the lldp source against the real
// lldpd: two network namespaces joined by a veth pair, an lldpd in each
// with its own control socket, the "switch" side announcing itself as
// leaf-3 port Ethernet12. The exporter's reader, in the other namespace
// and pointed at that side's lldpd socket, must report the neighbour; once
// the switch side's lldpd stops, the neighbour must age out (TTL 4 s).
func TestLLDPNeighbourFromLLDPDInNetns(t *testing.T) {
	testenv.RequireRoot(t)
	ip := testenv.LookPath(t, "iproute2", "ip")
	lldpd := testenv.LookPath(t, "lldpd", "lldpd")
	testenv.LookPath(t, "lldpd", "lldpcli")

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
	tag := fmt.Sprintf("%d", os.Getpid()%100000)
	nsSwitch, nsHost := "roce-lldp-sw-"+tag, "roce-lldp-host-"+tag
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, ns := range []string{nsSwitch, nsHost} {
		run("netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command(ip, "netns", "del", ns).Run() })
	}
	run("link", "add", "lldpsw0", "netns", nsSwitch, "type", "veth", "peer", "name", "lldphost0", "netns", nsHost)
	run("-n", nsSwitch, "link", "set", "lldpsw0", "up")
	run("-n", nsHost, "link", "set", "lldphost0", "up")

	startLLDPD := func(ns, iface, name, conf string) (*exec.Cmd, string) {
		t.Helper()
		sock := filepath.Join(dir, name+".sock")
		confPath := testenv.WriteFile(t, dir, name+".conf", conf)
		logf, err := os.Create(filepath.Join(dir, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		// -d: foreground, no pid file to clash with a system lldpd; -u and
		// -O: this test's own control socket and configuration only.
		cmd := exec.Command(ip, "netns", "exec", ns, lldpd, "-d", "-u", sock, "-O", confPath, "-I", iface)
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			logf.Close()
		})
		return cmd, sock
	}
	sw, _ := startLLDPD(nsSwitch, "lldpsw0", "switch", `configure system hostname leaf-3
configure lldp tx-interval 1
configure ports lldpsw0 lldp portidsubtype local Ethernet12 description "leaf-3 Ethernet12 to gpu-07 rail 0"
`)
	_, hostSock := startLLDPD(nsHost, "lldphost0", "host", "configure system hostname gpu-07\nconfigure lldp tx-interval 1\n")

	child := func(want string) string {
		t.Helper()
		cmd := exec.Command(ip, "netns", "exec", nsHost, os.Args[0], "-test.run=^TestLLDPNetnsChild$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), lldpChildSocket+"="+hostSock, lldpChildIface+"=lldphost0", lldpChildWant+"="+want)
		out, err := cmd.CombinedOutput()
		if err != nil {
			logs, _ := os.ReadFile(filepath.Join(dir, "switch.log"))
			t.Fatalf("reader in %s (want %s): %v\n%s\nswitch lldpd log:\n%s", nsHost, want, err, out, logs)
		}
		return string(out)
	}
	out := child("present")
	t.Logf("reader inside %s:\n%s", nsHost, grepLines(out, "neighbour"))

	// The link goes down (the child takes its interface down once it has
	// seen the neighbour): lldpd forgets the neighbour after its TTL, the
	// exporter keeps the last one, marked link down.
	out = child("kept")
	t.Logf("link down:\n%s", grepLines(out, "neighbour"))
	run("-n", nsHost, "link", "set", "lldphost0", "up")

	// The switch side goes silent with the link up: the neighbour must
	// leave the snapshot.
	_ = sw.Process.Kill()
	_ = sw.Wait()
	child("gone")
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
