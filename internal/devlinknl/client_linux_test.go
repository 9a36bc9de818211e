//go:build linux

package devlinknl

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// TestLiveKernel asks this machine's kernel. Without a devlink family (a
// container kernel, CONFIG_NET_DEVLINK=n) Dial must say ErrNotSupported;
// with one, the dump must decode, whatever NICs the machine has.
func TestLiveKernel(t *testing.T) {
	c := New(Config{})
	defer c.Close()
	reps, err := c.HealthReporters()
	if errors.Is(err, ErrNotSupported) {
		t.Logf("no devlink family or no health reporters here: %v", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		t.Logf("%s %s: %s errors=%d recoveries=%d", r.Handle(), r.Name, r.State, r.Errors, r.Recoveries)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.HealthReporters(); err == nil {
		t.Fatal("a closed client answered")
	}
}

// TestNetdevsimReporters asks the kernel about a real devlink instance
// where the kernel can make one: netdevsim (CONFIG_NETDEVSIM) registers the
// health reporters "empty" and "dummy" on each simulated device
// (drivers/net/netdevsim/health.c). It needs root and the module; without
// them it skips (this is a bonus over the recorded messages, not the
// decoder's only test).
func TestNetdevsimReporters(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := os.Stat("/sys/bus/netdevsim"); err != nil {
		_ = exec.Command("modprobe", "netdevsim").Run()
		if _, err := os.Stat("/sys/bus/netdevsim"); err != nil {
			t.Skip("no netdevsim in this kernel")
		}
	}
	id := 900 + os.Getpid()%90
	if err := os.WriteFile("/sys/bus/netdevsim/new_device", []byte(fmt.Sprintf("%d 1", id)), 0); err != nil {
		t.Skipf("cannot create a netdevsim device: %v", err)
	}
	defer os.WriteFile("/sys/bus/netdevsim/del_device", []byte(fmt.Sprint(id)), 0)
	c := New(Config{})
	defer c.Close()
	reps, err := c.HealthReporters()
	if err != nil {
		t.Fatal(err)
	}
	dev := fmt.Sprintf("netdevsim%d", id)
	got := map[string]Reporter{}
	for _, r := range reps {
		if r.Bus == "netdevsim" && r.Device == dev {
			got[r.Name] = r
		}
	}
	for _, name := range []string{"empty", "dummy"} {
		r, ok := got[name]
		if !ok {
			t.Fatalf("reporter %s of netdevsim/%s missing from %+v", name, dev, reps)
		}
		if r.State != StateHealthy || r.Errors != 0 {
			t.Errorf("fresh reporter %+v", r)
		}
	}
}
