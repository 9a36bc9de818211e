package nlconn

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mdlayher/netlink"
)

// clock is a settable clock for the back-off.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// fakeSocket checks that requests never overlap and counts its closing.
type fakeSocket struct {
	id     int
	inUse  atomic.Bool
	closed atomic.Int32
}

func (s *fakeSocket) Close() error { s.closed.Add(1); return nil }

var errDial = errors.New("socket: too many open files")

// dialer fails its first `failFirst` dials, then hands out new sockets.
type dialer struct {
	mu        sync.Mutex
	failFirst int
	dials     int
	at        []time.Time
	clock     *clock
	sockets   []*fakeSocket
}

func (d *dialer) dial() (*fakeSocket, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dials++
	if d.clock != nil {
		d.at = append(d.at, d.clock.Now())
	}
	if d.dials <= d.failFirst {
		return nil, errDial
	}
	s := &fakeSocket{id: d.dials}
	d.sockets = append(d.sockets, s)
	return s, nil
}

func newConn(d *dialer, broken func(error) bool) *Conn[*fakeSocket] {
	d.clock = &clock{now: time.Unix(1_700_000_000, 0)}
	return New(d.dial, broken, Policy{Now: d.clock.Now})
}

func ok(*fakeSocket) error { return nil }

func TestNoDialBeforeFirstUse(t *testing.T) {
	d := &dialer{}
	c := newConn(d, nil)
	if d.dials != 0 {
		t.Fatalf("%d dials before the first request", d.dials)
	}
	if err := c.Do(ok); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ok); err != nil {
		t.Fatal(err)
	}
	if d.dials != 1 {
		t.Errorf("%d dials for two requests on a healthy socket, want 1", d.dials)
	}
}

// A socket whose first dial fails recovers, which the clients of phy and
// transceiver never did: they kept the first dial's error for good.
func TestRecoversAfterFailedFirstDial(t *testing.T) {
	for _, failFirst := range []int{1, 5} {
		d := &dialer{failFirst: failFirst}
		c := newConn(d, nil)
		for i := 1; i <= failFirst; i++ {
			err := c.Do(ok)
			if !errors.Is(err, ErrNotDialled) || !errors.Is(err, errDial) {
				t.Fatalf("dial %d: err = %v, want ErrNotDialled wrapping the dial's error", i, err)
			}
			// Within the back-off the request fails at once, with the
			// reason, and no dial is made.
			before := d.dials
			if err := c.Do(ok); !errors.Is(err, ErrNotDialled) || !errors.Is(err, errDial) {
				t.Fatalf("within the back-off: %v", err)
			}
			if d.dials != before {
				t.Fatalf("dialled within the back-off")
			}
			d.clock.advance(Policy{}.withDefaults().wait(i))
		}
		var used *fakeSocket
		if err := c.Do(func(s *fakeSocket) error { used = s; return nil }); err != nil {
			t.Fatalf("after %d failed dials and their back-off: %v", failFirst, err)
		}
		if used == nil || d.dials != failFirst+1 {
			t.Fatalf("dials = %d, socket %v", d.dials, used)
		}
		// Success resets the back-off: a later failure waits FirstWait again.
		if c.failures != 0 {
			t.Errorf("failures = %d after a good dial", c.failures)
		}
	}
}

// The back-off bounds the dial rate of a socket that never dials, whatever
// the request rate, and never stops trying.
func TestBackoffBoundsDialRate(t *testing.T) {
	d := &dialer{failFirst: 1 << 30}
	c := newConn(d, nil)
	const (
		hour  = time.Hour
		every = 100 * time.Millisecond // far more often than any scrape
	)
	for elapsed := time.Duration(0); elapsed < hour; elapsed += every {
		_ = c.Do(ok)
		d.clock.advance(every)
	}
	// 1+2+4+8+16+32 s, then one a minute: 6 + (3600-63)/60 ≈ 65 dials.
	if d.dials < 60 || d.dials > 67 {
		t.Errorf("%d dials in an hour of requests every %s; want about 65", d.dials, every)
	}
	for i := 1; i < len(d.at); i++ {
		gap := d.at[i].Sub(d.at[i-1])
		if gap < FirstWait || gap > MaxWait+every {
			t.Fatalf("dials %d and %d %s apart, outside [%s, %s]", i, i+1, gap, FirstWait, MaxWait)
		}
		if i > 1 && gap+every < d.at[i-1].Sub(d.at[i-2]) {
			t.Fatalf("back-off shrank: %s after %s", gap, d.at[i-1].Sub(d.at[i-2]))
		}
	}
}

func TestWait(t *testing.T) {
	p := Policy{}.withDefaults()
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 6: 32 * time.Second, 7: time.Minute, 100: time.Minute} {
		if got := p.wait(n); got != want {
			t.Errorf("wait(%d) = %s, want %s", n, got, want)
		}
	}
}

var errTimeout = errors.New("i/o timeout")

// A request that broke the socket closes it, and the next request dials a
// new one at once (no back-off: the dial did not fail); an error that is
// the kernel's answer keeps the socket.
func TestBrokenSocketRedialledOnce(t *testing.T) {
	d := &dialer{}
	c := newConn(d, func(err error) bool { return errors.Is(err, errTimeout) })
	if err := c.Do(func(*fakeSocket) error { return syscall.ENODEV }); !errors.Is(err, syscall.ENODEV) {
		t.Fatal(err)
	}
	if d.dials != 1 || d.sockets[0].closed.Load() != 0 {
		t.Fatalf("an answered request replaced the socket: %d dials", d.dials)
	}
	if err := c.Do(func(*fakeSocket) error { return errTimeout }); !errors.Is(err, errTimeout) {
		t.Fatal(err)
	}
	if d.sockets[0].closed.Load() != 1 {
		t.Fatal("broken socket not closed")
	}
	if d.dials != 1 {
		t.Fatal("redialled before the next request")
	}
	var used *fakeSocket
	if err := c.Do(func(s *fakeSocket) error { used = s; return nil }); err != nil {
		t.Fatal(err)
	}
	if d.dials != 2 || used != d.sockets[1] {
		t.Fatalf("next request: %d dials, socket %v", d.dials, used)
	}
	// The redial of a broken socket that fails falls under the back-off.
	d.failFirst = 1 << 30
	_ = c.Do(func(*fakeSocket) error { return errTimeout })
	_ = c.Do(ok)
	_ = c.Do(ok)
	if d.dials != 3 {
		t.Errorf("%d dials; a failed redial must wait its back-off", d.dials)
	}
}

func TestClose(t *testing.T) {
	d := &dialer{}
	c := newConn(d, nil)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ok); !errors.Is(err, ErrClosed) || d.dials != 0 {
		t.Fatalf("after Close: %v, %d dials", err, d.dials)
	}
	c = newConn(d, nil)
	_ = c.Do(ok)
	if err := c.Close(); err != nil || d.sockets[0].closed.Load() != 1 {
		t.Fatalf("Close: %v, closed %d", err, d.sockets[0].closed.Load())
	}
	if err := c.Close(); err != nil || d.sockets[0].closed.Load() != 1 {
		t.Fatalf("second Close: %v, closed %d", err, d.sockets[0].closed.Load())
	}
}

// Requests from many goroutines never overlap on the socket, while dials
// fail, requests break sockets and time passes (run with -race).
func TestConcurrentUse(t *testing.T) {
	d := &dialer{failFirst: 3}
	c := newConn(d, func(err error) bool { return errors.Is(err, errTimeout) })
	var wg sync.WaitGroup
	var overlaps, served atomic.Int64
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				d.clock.advance(10 * time.Millisecond)
				_ = c.Do(func(s *fakeSocket) error {
					if !s.inUse.CompareAndSwap(false, true) {
						overlaps.Add(1)
					}
					defer s.inUse.Store(false)
					if s.closed.Load() != 0 {
						overlaps.Add(1)
					}
					served.Add(1)
					if (g+i)%50 == 0 {
						return errTimeout
					}
					return nil
				})
			}
		}()
	}
	wg.Wait()
	if overlaps.Load() != 0 {
		t.Errorf("%d requests overlapped or used a closed socket", overlaps.Load())
	}
	if served.Load() == 0 {
		t.Error("no request was served")
	}
	_ = c.Close()
	for _, s := range d.sockets {
		if s.closed.Load() != 1 {
			t.Errorf("socket %d closed %d times", s.id, s.closed.Load())
		}
	}
}

func TestNetlinkBroken(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"errno answer", &netlink.OpError{Op: "receive", Err: syscall.EOPNOTSUPP}, false},
		{"deadline", &netlink.OpError{Op: "receive", Err: os.NewSyscallError("recvmsg", os.ErrDeadlineExceeded)}, true},
		{"not a netlink error", errors.New("short reply"), true},
	} {
		if got := NetlinkBroken(tc.err); got != tc.want {
			t.Errorf("%s: NetlinkBroken = %v, want %v", tc.name, got, tc.want)
		}
	}
}
