//go:build linux

package ethnl

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// requestTimeout bounds one request: a module EEPROM read is an I2C
// transaction the firmware may take long over, and a scrape must not wait
// on it forever.
const requestTimeout = 2 * time.Second

// Client is a generic netlink socket bound to the ethtool family. Its
// methods are safe for concurrent use; requests are serialised.
type Client struct {
	mu     sync.Mutex
	conn   *netlink.Conn
	family uint16
	// stale: a request ended without its reply read; the socket is
	// replaced before the next one so a late reply is never taken for it.
	stale bool
}

// ErrNoFamily means the kernel has no ethtool netlink (before 5.6).
var ErrNoFamily = errors.New("ethnl: kernel has no ethtool generic netlink family")

// Dial opens a Client.
func Dial() (*Client, error) {
	c := &Client{}
	if err := c.redial(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Client) redial() error {
	conn, err := netlink.Dial(unix.NETLINK_GENERIC, nil)
	if err != nil {
		return fmt.Errorf("ethnl: dial NETLINK_GENERIC: %w", err)
	}
	fam, err := resolveFamily(conn)
	if err != nil {
		conn.Close()
		return err
	}
	if c.conn != nil {
		c.conn.Close()
	}
	c.conn, c.family, c.stale = conn, fam, false
	return nil
}

// resolveFamily asks the generic netlink controller for ethtool's id.
func resolveFamily(conn *netlink.Conn) (uint16, error) {
	ae := netlink.NewAttributeEncoder()
	ae.String(unix.CTRL_ATTR_FAMILY_NAME, "ethtool")
	b, err := ae.Encode()
	if err != nil {
		return 0, err
	}
	if err := conn.SetDeadline(time.Now().Add(requestTimeout)); err != nil {
		return 0, err
	}
	msgs, err := conn.Execute(netlink.Message{
		Header: netlink.Header{Type: unix.GENL_ID_CTRL, Flags: netlink.Request},
		Data:   append(genlHeader(unix.CTRL_CMD_GETFAMILY), b...),
	})
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return 0, ErrNoFamily
		}
		return 0, fmt.Errorf("ethnl: resolve family: %w", err)
	}
	for _, m := range msgs {
		ad, err := attrs(m.Data)
		if err != nil {
			continue
		}
		for ad.Next() {
			if ad.Type() == unix.CTRL_ATTR_FAMILY_ID {
				return ad.Uint16(), nil
			}
		}
	}
	return 0, ErrNoFamily
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

func (c *Client) do(body []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil, errors.New("ethnl: client closed")
	}
	if c.stale {
		if err := c.redial(); err != nil {
			return nil, err
		}
	}
	if err := c.conn.SetDeadline(time.Now().Add(requestTimeout)); err != nil {
		return nil, err
	}
	msgs, err := c.conn.Execute(netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(c.family), Flags: netlink.Request},
		Data:   body,
	})
	if err != nil {
		// An errno in a netlink error message means the kernel answered and
		// the socket is in step; anything else may leave a reply unread.
		var oe *netlink.OpError
		if !errors.As(err, &oe) {
			c.stale = true
		} else if _, answered := oe.Err.(unix.Errno); !answered {
			c.stale = true
		}
		return nil, err
	}
	for _, m := range msgs {
		if m.Header.Type == netlink.HeaderType(c.family) {
			return m.Data, nil
		}
	}
	return nil, fmt.Errorf("%w: no ethtool message in %d replies", errMalformed, len(msgs))
}

// ModuleEEPROM reads length bytes at offset of a module page (see
// EncodeModuleEEPROMRequest). EOPNOTSUPP: the driver has no netlink module
// access (the caller falls back to the ioctl).
func (c *Client) ModuleEEPROM(ifname string, page, bank uint8, offset, length uint32) ([]byte, error) {
	body, err := EncodeModuleEEPROMRequest(ifname, page, bank, offset, length)
	if err != nil {
		return nil, err
	}
	reply, err := c.do(body)
	if err != nil {
		return nil, err
	}
	return DecodeModuleEEPROM(reply)
}

// FEC reads the FEC configuration and statistics of an interface.
func (c *Client) FEC(ifname string) (*FEC, error) {
	body, err := encodeRequest(msgFECGet, ifname, flagStats, nil)
	if err != nil {
		return nil, err
	}
	reply, err := c.do(body)
	if err != nil {
		return nil, err
	}
	return DecodeFEC(reply)
}

// Linkstate reads the link state and its extended down reason.
func (c *Client) Linkstate(ifname string) (*Linkstate, error) {
	body, err := encodeRequest(msgLinkstateGet, ifname, 0, nil)
	if err != nil {
		return nil, err
	}
	reply, err := c.do(body)
	if err != nil {
		return nil, err
	}
	return DecodeLinkstate(reply)
}
