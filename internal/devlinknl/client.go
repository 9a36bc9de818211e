//go:build linux

package devlinknl

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// defaultTimeout bounds one dump when Config.Timeout is zero. The kernel
// answers HEALTH_REPORTER_GET from memory (counters and state devlink
// keeps), but it takes each devlink instance's lock, which a driver reload
// or a firmware reset holds for seconds.
const defaultTimeout = 2 * time.Second

// Generic netlink controller (include/uapi/linux/genetlink.h).
const (
	genlIDCtrl          = 0x10 // GENL_ID_CTRL
	ctrlCmdGetFamily    = 3    // CTRL_CMD_GETFAMILY
	ctrlAttrFamilyID    = 1    // CTRL_ATTR_FAMILY_ID, u16
	ctrlAttrFamilyName  = 2    // CTRL_ATTR_FAMILY_NAME, string
	ctrlVersion         = 2
	maxReportersPerDump = 4096 // a runaway dump is cut here, not held in memory
)

// Config tunes a Client.
type Config struct {
	// Timeout bounds each request; zero means 2 s.
	Timeout time.Duration
}

// Client is a generic netlink socket bound to the devlink family. Its
// methods are safe for concurrent use; requests are serialised.
type Client struct {
	cfg    Config
	mu     sync.Mutex
	conn   *netlink.Conn
	family uint16
	// stale: a request ended without its reply read; the socket is
	// replaced before the next one so a late reply is never misread.
	stale bool
}

// Dial opens a Client. It returns ErrNotSupported when the kernel has no
// devlink family.
func Dial(cfg Config) (*Client, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = defaultTimeout
	}
	c := &Client{cfg: cfg}
	if err := c.redial(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Client) redial() error {
	conn, err := netlink.Dial(unix.NETLINK_GENERIC, nil)
	if err != nil {
		return fmt.Errorf("devlinknl: dial NETLINK_GENERIC: %w", err)
	}
	fam, err := resolveFamily(conn, c.cfg.Timeout)
	if err != nil {
		_ = conn.Close()
		return err
	}
	if c.conn != nil {
		_ = c.conn.Close()
	}
	c.conn, c.family, c.stale = conn, fam, false
	return nil
}

// resolveFamily asks the generic netlink controller for devlink's id.
func resolveFamily(conn *netlink.Conn, timeout time.Duration) (uint16, error) {
	ae := netlink.NewAttributeEncoder()
	ae.ByteOrder = native
	ae.String(ctrlAttrFamilyName, familyName)
	attrs, err := ae.Encode()
	if err != nil {
		return 0, err
	}
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return 0, fmt.Errorf("devlinknl: set deadline: %w", err)
	}
	msgs, err := conn.Execute(netlink.Message{
		Header: netlink.Header{Type: genlIDCtrl, Flags: netlink.Request},
		Data:   append([]byte{ctrlCmdGetFamily, ctrlVersion, 0, 0}, attrs...),
	})
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return 0, fmt.Errorf("%w (%w)", ErrNotSupported, err)
		}
		return 0, fmt.Errorf("devlinknl: resolving the devlink family: %w", err)
	}
	for _, m := range msgs {
		if id, ok := familyID(m.Data); ok {
			return id, nil
		}
	}
	return 0, fmt.Errorf("devlinknl: %w: no family id in the controller's reply", errMalformed)
}

// familyID reads CTRL_ATTR_FAMILY_ID from a controller reply body.
func familyID(b []byte) (uint16, bool) {
	if len(b) < genlHeaderLen {
		return 0, false
	}
	ad, err := netlink.NewAttributeDecoder(b[genlHeaderLen:])
	if err != nil {
		return 0, false
	}
	ad.ByteOrder = native
	var id uint16
	for ad.Next() {
		if ad.Type() == ctrlAttrFamilyID {
			id = ad.Uint16()
		}
	}
	return id, ad.Err() == nil && id != 0
}

// Close releases the socket.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn = nil
	return err
}

// HealthReporters dumps every health reporter of every devlink instance
// (and port) in the socket's network namespace.
func (c *Client) HealthReporters() ([]Reporter, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil, errors.New("devlinknl: client closed")
	}
	if c.stale {
		if err := c.redial(); err != nil {
			return nil, err
		}
	}
	if err := c.conn.SetDeadline(time.Now().Add(c.cfg.Timeout)); err != nil {
		return nil, fmt.Errorf("devlinknl: set deadline: %w", err)
	}
	msgs, err := c.conn.Execute(netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(c.family), Flags: netlink.Request | netlink.Dump},
		Data:   []byte{cmdHealthReporterGet, familyVersion, 0, 0},
	})
	if err != nil {
		var oe *netlink.OpError
		if !errors.As(err, &oe) {
			c.stale = true
		} else if _, kernel := oe.Err.(unix.Errno); !kernel {
			c.stale = true
		}
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) {
			// A kernel before 5.1 knows no HEALTH_REPORTER_GET.
			return nil, fmt.Errorf("%w (%w)", ErrNotSupported, err)
		}
		return nil, fmt.Errorf("devlinknl: HEALTH_REPORTER_GET dump: %w", err)
	}
	return decodeDump(msgs)
}

// decodeDump decodes the messages of a dump, in kernel order.
func decodeDump(msgs []netlink.Message) ([]Reporter, error) {
	var out []Reporter
	for _, m := range msgs {
		if m.Header.Type == netlink.Done || m.Header.Type == netlink.Error {
			continue
		}
		if len(out) >= maxReportersPerDump {
			return nil, fmt.Errorf("devlinknl: %w: more than %d reporters in one dump", errMalformed, maxReportersPerDump)
		}
		r, err := decodeReporter(m.Data)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
