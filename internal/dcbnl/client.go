//go:build linux

package dcbnl

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// defaultTimeout bounds one request when Config.Timeout is zero. A dcbnl GET
// is answered synchronously under RTNL; the only way to wait long is a stuck
// RTNL or firmware command, and a scrape must not wait on that forever.
const defaultTimeout = 2 * time.Second

// Config tunes a Client.
type Config struct {
	// NetNS is an open file descriptor of a network namespace (for example
	// of /run/netns/NAME) to query instead of the caller's. The Client does
	// not take ownership of it.
	NetNS int
	// Timeout bounds each request; zero means 2 s (defaultTimeout).
	Timeout time.Duration
}

// Client is a long-lived NETLINK_ROUTE socket for RTM_GETDCB requests. Its
// methods are safe for concurrent use; requests are serialised.
type Client struct {
	cfg Config

	mu   sync.Mutex
	conn *netlink.Conn
	// stale is set when a request ended without its reply being read
	// (timeout, cancellation, socket error): a late reply would then be read
	// as the answer to the next request, so the socket is replaced first.
	stale bool
}

// errClosed is returned by requests on a closed Client.
var errClosed = errors.New("dcbnl: client closed")

// DialConfig opens a Client with the given options.
func DialConfig(cfg Config) (*Client, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = defaultTimeout
	}
	conn, err := dial(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{cfg: cfg, conn: conn}, nil
}

func dial(cfg Config) (*netlink.Conn, error) {
	conn, err := netlink.Dial(unix.NETLINK_ROUTE, &netlink.Config{NetNS: cfg.NetNS})
	if err != nil {
		return nil, fmt.Errorf("dcbnl: dial NETLINK_ROUTE: %w", err)
	}
	return conn, nil
}

// Close releases the socket. Further requests fail.
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

// IEEE returns the IEEE 802.1Qaz state (PFC, ETS, APP table, DCBX) of ifname.
func (c *Client) IEEE(ifname string) (*IEEE, error) {
	return c.ieeeContext(context.Background(), ifname)
}

// ieeeContext is IEEE bounded by ctx as well as by the client's timeout.
func (c *Client) ieeeContext(ctx context.Context, ifname string) (*IEEE, error) {
	body, err := c.get(ctx, cmdIEEEGet, ifname)
	if err != nil {
		return nil, err
	}
	ieee, err := decodeIEEE(body)
	if err != nil {
		return nil, fmt.Errorf("dcbnl: IEEE_GET %s: %w", ifname, err)
	}
	return ieee, nil
}

// get sends one GET request and returns the reply body.
func (c *Client) get(ctx context.Context, cmd uint8, ifname string) ([]byte, error) {
	body, err := encodeGetRequest(cmd, ifname)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("dcbnl: cmd %d %s: %w", cmd, ifname, err)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil, errClosed
	}
	if c.stale {
		conn, err := dial(c.cfg)
		if err != nil {
			return nil, err
		}
		_ = c.conn.Close()
		c.conn, c.stale = conn, false
	}
	conn := c.conn

	deadline := time.Now().Add(c.cfg.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return nil, fmt.Errorf("dcbnl: set deadline: %w", err)
	}
	// A deadline in the past wakes a blocked receive at once, which is how
	// cancellation reaches a syscall that knows nothing about contexts.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	msgs, err := conn.Execute(netlink.Message{
		Header: netlink.Header{Type: rtmGetDCB, Flags: netlink.Request},
		Data:   body,
	})
	if err != nil {
		return nil, c.requestError(ctx, cmd, ifname, err)
	}
	for _, m := range msgs {
		if m.Header.Type == rtmGetDCB {
			return m.Data, nil
		}
	}
	return nil, fmt.Errorf("dcbnl: cmd %d %s: %w: no RTM_GETDCB message in %d replies", cmd, ifname, errMalformed, len(msgs))
}

// requestError translates a failed Execute. An errno carried in a netlink
// error message means the kernel answered and the socket is still in step;
// anything else leaves an unread reply possible, so the socket is retired.
func (c *Client) requestError(ctx context.Context, cmd uint8, ifname string, err error) error {
	// mdlayher/netlink puts a netlink error message's code in OpError.Err as
	// a bare Errno; socket failures arrive wrapped in *os.SyscallError.
	var oe *netlink.OpError
	if !errors.As(err, &oe) {
		c.stale = true
	} else if _, kernelAnswered := oe.Err.(unix.Errno); !kernelAnswered {
		c.stale = true
	}
	switch {
	case errors.Is(err, unix.EOPNOTSUPP):
		return fmt.Errorf("dcbnl: %s: %w (%w)", ifname, ErrNotSupported, err)
	case errors.Is(err, unix.ENODEV):
		return fmt.Errorf("dcbnl: %s: %w (%w)", ifname, ErrNoDevice, err)
	case ctx.Err() != nil:
		return fmt.Errorf("dcbnl: cmd %d %s: %w (%w)", cmd, ifname, ctx.Err(), err)
	}
	return fmt.Errorf("dcbnl: cmd %d %s: %w", cmd, ifname, err)
}
