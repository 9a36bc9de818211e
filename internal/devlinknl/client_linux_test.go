//go:build linux

package devlinknl

import (
	"errors"
	"testing"
)

// TestLiveKernel asks this machine's kernel. Without a devlink family (a
// container kernel, CONFIG_NET_DEVLINK=n) Dial must say ErrNotSupported;
// with one, the dump must decode, whatever NICs the machine has.
func TestLiveKernel(t *testing.T) {
	c, err := Dial(Config{})
	if errors.Is(err, ErrNotSupported) {
		t.Logf("no devlink family here: %v", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reps, err := c.HealthReporters()
	if errors.Is(err, ErrNotSupported) {
		t.Logf("no health reporters here: %v", err)
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
