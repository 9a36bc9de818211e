package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// requireRoot skips tests that create network namespaces unless they can;
// CI runs as root, so there they run.
func requireRoot(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.LookPath(t, "iproute2", "ip")
}

func ipCmd(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// newNetns creates a named network namespace that is deleted when the test ends.
func newNetns(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("roce-test-%d-%d", os.Getpid(), time.Now().UnixNano()%100000)
	ipCmd(t, "netns", "add", name)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	ipCmd(t, "-n", name, "link", "set", "lo", "up")
	return name
}

// nsHTTPClient dials from inside the namespace: a socket belongs to the
// namespace of the thread that created it.
func nsHTTPClient(ns string) *http.Client {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		type result struct {
			c   net.Conn
			err error
		}
		ch := make(chan result, 1)
		go func() {
			runtime.LockOSThread()
			// The thread is left locked and so is discarded when the
			// goroutine exits, instead of returning to the pool inside
			// the test namespace.
			f, err := os.Open("/run/netns/" + ns)
			if err != nil {
				ch <- result{nil, err}
				return
			}
			defer f.Close()
			if err := unix.Unshare(unix.CLONE_FS); err != nil {
				ch <- result{nil, err}
				return
			}
			if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
				ch <- result{nil, err}
				return
			}
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			ch <- result{c, err}
		}()
		r := <-ch
		return r.c, r.err
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true}}
}

func nsGet(t *testing.T, client *http.Client, url string) string {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func metricValue(body, name string, fragments ...string) (string, bool) {
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, f := range fragments {
			ok = ok && strings.Contains(line, f)
		}
		if ok {
			return line[strings.LastIndexByte(line, ' ')+1:], true
		}
	}
	return "", false
}

// TestVethThroughRealKernelPaths runs the exporter inside a fresh network
// namespace on a veth pair: the ethtool ioctl (driver info, statistics),
// sysfs link state and MTU, and a DCB netlink query that veth does not
// support.
func TestVethThroughRealKernelPaths(t *testing.T) {
	requireRoot(t)
	ns := newNetns(t)
	ipCmd(t, "-n", ns, "link", "add", "vroce0", "type", "veth", "peer", "name", "vroce1")
	ipCmd(t, "-n", ns, "link", "set", "vroce0", "mtu", "9000")
	ipCmd(t, "-n", ns, "link", "set", "vroce1", "mtu", "9000")
	ipCmd(t, "-n", ns, "link", "set", "vroce0", "up")
	ipCmd(t, "-n", ns, "link", "set", "vroce1", "up")
	peerIndex := strings.TrimSpace(strings.SplitN(ipCmd(t, "-n", ns, "-o", "link", "show", "vroce1"), ":", 2)[0])

	addr := "127.0.0.1:14791"
	logs := runExporter(t, addr, exec.Command("ip", "netns", "exec", ns, binary,
		"--web.listen-address="+addr, "--collector.netdev.include=^vroce",
		"--collector.ethtool.raw-include=^peer_ifindex$", "--collector.rdma.gid-refresh=0s", "--log.level=debug")).logs
	client := nsHTTPClient(ns)
	var body string
	for deadline := time.Now().Add(10 * time.Second); ; {
		resp, err := client.Get("http://" + addr + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("exporter in namespace not reachable: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	if _, ok := metricValue(body, "roce_interface_info", `interface="vroce0"`, `driver="veth"`); !ok {
		t.Errorf("driver info from the ethtool ioctl missing:\n%s", grepLines(body, "vroce0"))
	}
	if v, _ := metricValue(body, "roce_interface_mtu_bytes", `interface="vroce0"`); v != "9000" {
		t.Errorf("MTU = %q", v)
	}
	if v, _ := metricValue(body, "roce_interface_up", `interface="vroce0"`); v != "1" {
		t.Errorf("up = %q", v)
	}
	if v, _ := metricValue(body, "roce_ethtool_peer_ifindex", `interface="vroce0"`); v != peerIndex {
		t.Errorf("ethtool stat peer_ifindex = %q, want the peer's ifindex %s", v, peerIndex)
	}
	if v, _ := metricValue(body, "roce_scrape_collector_success", `collector="ethtool"`); v != "1" {
		t.Errorf("ethtool success = %q", v)
	}
	if v, _ := metricValue(body, "roce_scrape_collector_success", `collector="dcb"`); v != "0" {
		t.Errorf("dcb success on veth = %q, want 0 (not supported)", v)
	}
	if _, ok := metricValue(body, "roce_pfc_enabled"); ok {
		t.Error("PFC state reported for veth")
	}
	before, _ := metricValue(body, "roce_interface_carrier_changes_total", `interface="vroce0"`)

	ipCmd(t, "-n", ns, "link", "set", "vroce0", "down")
	body = nsGet(t, client, "http://"+addr+"/metrics")
	if v, _ := metricValue(body, "roce_interface_up", `interface="vroce0"`); v != "0" {
		t.Errorf("after ip link set down: up = %q", v)
	}
	ipCmd(t, "-n", ns, "link", "set", "vroce0", "up")
	var after string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		body = nsGet(t, client, "http://"+addr+"/metrics")
		if v, _ := metricValue(body, "roce_interface_up", `interface="vroce0"`); v == "1" {
			after, _ = metricValue(body, "roce_interface_carrier_changes_total", `interface="vroce0"`)
			break
		}
	}
	if after == "" {
		t.Fatal("interface did not come back up")
	}
	if after == before {
		t.Errorf("carrier changes did not move after a flap (%s)", before)
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "collector=dcb") && (strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR")) {
			t.Errorf("DCB on veth must be a quiet skip: %s", line)
		}
	}
}

func grepLines(body, substr string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestInterfaceNameThatIsNotUTF8 gives a real veth a name that is not
// UTF-8 (Linux allows any bytes but '/', ':' and white space): the page
// must stay valid for Prometheus, which rejects a whole scrape over one
// invalid label value. Its peer is named with the text `v\xff\xfe`, which
// is how the first one is written: the two must stay two series.
func TestInterfaceNameThatIsNotUTF8(t *testing.T) {
	requireRoot(t)
	ns := newNetns(t)
	ipCmd(t, "-n", ns, "link", "add", "v\xff\xfe", "type", "veth", "peer", "name", `v\xff\xfe`)
	ipCmd(t, "-n", ns, "link", "set", "v\xff\xfe", "up")

	addr := "127.0.0.1:14791"
	runExporter(t, addr, exec.Command("ip", "netns", "exec", ns, binary,
		"--web.listen-address="+addr, "--collector.netdev.include=^(v|p0)", "--collector.ethtool.raw-include=^peer_ifindex$"))
	client := nsHTTPClient(ns)
	var body string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := client.Get("http://" + addr + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("exporter in namespace not reachable: %v", err)
		}
	}
	if !utf8.ValidString(body) {
		t.Error("/metrics is not valid UTF-8")
	}
	if _, ok := metricValue(body, "roce_interface_up", `interface="v\\xff\\xfe"`); !ok {
		t.Errorf("the interface is not reported under its escaped name:\n%s", grepLines(body, "interface="))
	}
	if _, ok := metricValue(body, "roce_interface_up", `interface="v\\\\xff\\\\xfe"`); !ok {
		t.Errorf("the interface named with the text `v\\xff\\xfe` is not reported under its own name:\n%s", grepLines(body, "interface="))
	}
	promtoolCheck(t, body)
}
