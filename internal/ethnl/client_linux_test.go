//go:build linux

package ethnl

import (
	"errors"
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// Asks this kernel for the loopback's link state and FEC: the requests
// must be well formed (lo has a link; it has no FEC, which the kernel
// says with EOPNOTSUPP, not EINVAL).
func TestLiveKernel(t *testing.T) {
	c, err := Dial()
	if errors.Is(err, ErrNoFamily) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := net.InterfaceByName("lo"); err != nil {
		t.Skip(err)
	}
	ls, err := c.Linkstate("lo")
	if err != nil {
		t.Fatal(err)
	}
	if !ls.LinkKnown || !ls.Link {
		t.Errorf("lo link = %+v", ls)
	}
	if _, err := c.FEC("lo"); !errors.Is(err, unix.EOPNOTSUPP) {
		t.Errorf("FEC(lo) = %v, want EOPNOTSUPP", err)
	}
	if _, err := c.ModuleEEPROM("lo", 0, 0, 0, 128); !errors.Is(err, unix.EOPNOTSUPP) {
		t.Errorf("ModuleEEPROM(lo) = %v, want EOPNOTSUPP", err)
	}
	if _, err := c.Linkstate("no-such-if0"); !errors.Is(err, unix.ENODEV) {
		t.Errorf("Linkstate(missing) = %v, want ENODEV", err)
	}
}
