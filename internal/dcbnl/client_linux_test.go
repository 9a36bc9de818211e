//go:build linux

package dcbnl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mdlayher/netlink"

	"github.com/roce-exporter/roce_exporter/internal/nlconn"
	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// RTM_GETDCB needs no privilege, and lo never has dcbnl_ops, so these run
// anywhere with a Linux kernel.
func TestClientLoopback(t *testing.T) {
	c := New(Config{})
	defer c.Close()

	if _, err := c.IEEE("lo"); !errors.Is(err, ErrNotSupported) {
		t.Errorf("IEEE(lo) = %v, want ErrNotSupported", err)
	}
	// The kernel's error reply keeps the socket in step, so the next request
	// gets its own answer.
	if _, err := c.IEEE("rocenosuchdev0"); !errors.Is(err, ErrNoDevice) || errors.Is(err, ErrNotSupported) {
		t.Errorf("IEEE(rocenosuchdev0) = %v, want only ErrNoDevice", err)
	}
	if _, err := c.IEEE("bad/name"); err == nil {
		t.Error("invalid name accepted")
	}
}

func TestClientContextAndBrokenSocket(t *testing.T) {
	dials := 0
	c := New(Config{Timeout: time.Second})
	c.conn = nlconn.New(func() (*netlink.Conn, error) { dials++; return dial(c.cfg) }, nlconn.NetlinkBroken, nlconn.Policy{})
	defer c.Close()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.ieeeContext(ctx, "lo"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
	ctx, cancel = context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if _, err := c.ieeeContext(ctx, "lo"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("expired context: %v", err)
	}

	// The kernel's errno replies keep the socket.
	for range 2 {
		if _, err := c.IEEE("lo"); !errors.Is(err, ErrNotSupported) {
			t.Fatalf("IEEE(lo) = %v", err)
		}
	}
	if dials != 1 {
		t.Fatalf("%d dials for answered requests, want 1", dials)
	}
	// A request that times out retires the socket; the next one dials
	// afresh and gets its own answer.
	c.cfg.Timeout = time.Nanosecond
	if _, err := c.IEEE("lo"); err == nil || errors.Is(err, ErrNotSupported) {
		t.Fatalf("a request past its deadline answered: %v", err)
	}
	c.cfg.Timeout = time.Second
	if _, err := c.IEEE("lo"); !errors.Is(err, ErrNotSupported) {
		t.Errorf("after the timeout: %v", err)
	}
	if dials != 2 {
		t.Errorf("%d dials; the timed-out socket must be replaced once", dials)
	}

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := c.IEEE("lo"); !errors.Is(err, nlconn.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// TestIntegrationNetNS queries a veth pair inside a fresh network namespace:
// veth has no dcbnl_ops, so the kernel must answer EOPNOTSUPP, and names
// that exist only outside the namespace must be ENODEV.
func TestIntegrationNetNS(t *testing.T) {
	testenv.RequireRoot(t)
	ip := testenv.LookPath(t, "iproute2", "ip")
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	ns := fmt.Sprintf("roce-dcbnl-%d", os.Getpid())
	run("netns", "add", ns)
	t.Cleanup(func() {
		if out, err := exec.Command(ip, "netns", "del", ns).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v\n%s", ns, err, out)
		}
	})
	run("-n", ns, "link", "add", "dcbtest0", "type", "veth", "peer", "name", "dcbtest1")
	run("-n", ns, "link", "set", "dcbtest0", "up")

	f, err := os.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := New(Config{NetNS: int(f.Fd()), Timeout: 2 * time.Second})
	defer c.Close()

	for _, dev := range []string{"dcbtest0", "dcbtest1", "lo"} {
		if got, err := c.IEEE(dev); !errors.Is(err, ErrNotSupported) {
			t.Errorf("IEEE(%s) = %+v, %v; want ErrNotSupported", dev, got, err)
		}
	}
	if _, err := c.IEEE("rocenosuchdev0"); !errors.Is(err, ErrNoDevice) {
		t.Errorf("IEEE(rocenosuchdev0) = %v, want ErrNoDevice", err)
	}

	// Proof that the client really lives in the namespace: an interface of
	// the test's own namespace (other than lo) is unknown there.
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		if i.Name == "lo" || strings.HasPrefix(i.Name, "dcbtest") {
			continue
		}
		if _, err := c.IEEE(i.Name); !errors.Is(err, ErrNoDevice) {
			t.Errorf("host interface %s seen from the namespace: %v", i.Name, err)
		}
		break
	}
}
