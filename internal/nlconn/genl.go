package nlconn

import (
	"errors"
	"fmt"
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// DefaultTimeout bounds a request when the client's configuration names
// no other bound. The kernel answers these GET requests synchronously, but
// under locks a driver can hold for seconds (RTNL, a devlink instance's
// lock during a reload or firmware reset) or through the NIC's firmware (a
// module EEPROM page is an I2C transaction); a scrape must not wait on that
// forever.
const DefaultTimeout = 2 * time.Second

// ErrNoFamily matches the error of a request to a generic netlink family
// this kernel does not have (ethtool before Linux 5.6, devlink without
// CONFIG_NET_DEVLINK).
var ErrNoFamily = errors.New("generic netlink family not in this kernel")

// FamilyConfig tunes a Family.
type FamilyConfig struct {
	// Timeout bounds each request, and the family look-up of each dial;
	// zero means DefaultTimeout.
	Timeout time.Duration
	// Retry tunes the back-off after a failed dial.
	Retry Policy
	// Dial replaces genetlink.Dial(nil), for tests that make it fail.
	Dial func() (*genetlink.Conn, error)
}

// Family is one generic netlink family (ethtool, devlink) on one socket:
// dialled and resolved with github.com/mdlayher/genetlink, kept by Conn's
// rule (a failed dial or look-up is retried after its back-off, a socket a
// request broke is redialled). Its methods are safe for concurrent use;
// requests are serialised.
type Family struct {
	name    string
	timeout time.Duration
	conn    *Conn[*familySocket]
}

type familySocket struct {
	c  *genetlink.Conn
	id uint16
}

func (s *familySocket) Close() error { return s.c.Close() }

// NewFamily returns the family name; nothing is dialled before the first
// request.
func NewFamily(name string, cfg FamilyConfig) *Family {
	if cfg.Dial == nil {
		cfg.Dial = func() (*genetlink.Conn, error) { return genetlink.Dial(nil) }
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	f := &Family{name: name, timeout: cfg.Timeout}
	f.conn = New(func() (*familySocket, error) { return f.dial(cfg.Dial) }, NetlinkBroken, cfg.Retry)
	return f
}

func (f *Family) dial(dial func() (*genetlink.Conn, error)) (*familySocket, error) {
	c, err := dial()
	if err != nil {
		return nil, fmt.Errorf("dial generic netlink: %w", err)
	}
	if err := c.SetDeadline(time.Now().Add(f.timeout)); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("generic netlink: set deadline: %w", err)
	}
	fam, err := c.GetFamily(f.name)
	if err != nil {
		_ = c.Close()
		if errors.Is(err, unix.ENOENT) {
			return nil, fmt.Errorf("%w: %s (%w)", ErrNoFamily, f.name, err)
		}
		return nil, fmt.Errorf("generic netlink family %s: %w", f.name, err)
	}
	return &familySocket{c: c, id: fam.ID}, nil
}

// Execute sends one request (a command with its attributes) and returns the
// replies, a dump's too (flags netlink.Dump).
func (f *Family) Execute(cmd, version uint8, flags netlink.HeaderFlags, attrs []byte) ([]genetlink.Message, error) {
	var replies []genetlink.Message
	err := f.conn.Do(func(s *familySocket) error {
		if err := s.c.SetDeadline(time.Now().Add(f.timeout)); err != nil {
			return fmt.Errorf("generic netlink: set deadline: %w", err)
		}
		var err error
		replies, err = s.c.Execute(genetlink.Message{Header: genetlink.Header{Command: cmd, Version: version}, Data: attrs}, s.id, flags|netlink.Request)
		return err
	})
	return replies, err
}

// Close releases the socket; later requests fail with ErrClosed.
func (f *Family) Close() error { return f.conn.Close() }
