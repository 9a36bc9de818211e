package nlconn

import (
	"errors"
	"testing"
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

// A family this kernel lacks is ErrNoFamily, and it is asked for again only
// after the back-off, not on every request.
func TestFamilyMissingFromKernel(t *testing.T) {
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	dials := 0
	f := NewFamily("roce-nofamily", FamilyConfig{
		Retry: Policy{Now: clk.Now},
		Dial:  func() (*genetlink.Conn, error) { dials++; return genetlink.Dial(nil) },
	})
	defer f.Close()
	for range 3 {
		if _, err := f.Execute(1, 1, 0, nil); !errors.Is(err, ErrNoFamily) || !errors.Is(err, ErrNotDialled) {
			t.Fatalf("Execute = %v, want ErrNoFamily", err)
		}
	}
	if dials != 1 {
		t.Fatalf("%d dials within the back-off, want 1", dials)
	}
	clk.advance(FirstWait)
	_, _ = f.Execute(1, 1, 0, nil)
	if dials != 2 {
		t.Fatalf("%d dials after the back-off, want 2", dials)
	}
}

// The controller family itself answers through Family: a request, its
// reply, the socket kept for the next one.
func TestFamilyExecute(t *testing.T) {
	dials := 0
	f := NewFamily("nlctrl", FamilyConfig{Dial: func() (*genetlink.Conn, error) { dials++; return genetlink.Dial(nil) }})
	defer f.Close()
	for range 2 {
		// CTRL_CMD_GETFAMILY dump: every family of the kernel.
		msgs, err := f.Execute(3, 1, netlink.Dump, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 0 {
			t.Fatal("no family listed")
		}
	}
	if dials != 1 {
		t.Errorf("%d dials for two requests, want 1", dials)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Execute(3, 1, netlink.Dump, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}
