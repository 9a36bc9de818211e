//go:build linux

package dcbnl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/roce-exporter/roce_exporter/internal/nlconn"
)

// Config tunes a Client.
type Config struct {
	// NetNS is an open file descriptor of a network namespace (for example
	// of /run/netns/NAME) to query instead of the caller's. The Client does
	// not take ownership of it.
	NetNS int
	// Timeout bounds each request; zero means nlconn.DefaultTimeout. A
	// dcbnl GET is answered synchronously under RTNL; only a stuck RTNL or
	// firmware command makes it wait long.
	Timeout time.Duration
	// Retry tunes the back-off after a failed dial (nlconn.Policy).
	Retry nlconn.Policy
}

// Client is a long-lived NETLINK_ROUTE socket for RTM_GETDCB requests,
// dialled on first use and kept by the rule of internal/nlconn. Its
// methods are safe for concurrent use; requests are serialised.
type Client struct {
	cfg  Config
	conn *nlconn.Conn[*netlink.Conn]
}

// New returns a Client; the socket is dialled by the first request.
func New(cfg Config) *Client {
	if cfg.Timeout <= 0 {
		cfg.Timeout = nlconn.DefaultTimeout
	}
	return &Client{cfg: cfg, conn: nlconn.New(func() (*netlink.Conn, error) { return dial(cfg) }, nlconn.NetlinkBroken, cfg.Retry)}
}

func dial(cfg Config) (*netlink.Conn, error) {
	conn, err := netlink.Dial(unix.NETLINK_ROUTE, &netlink.Config{NetNS: cfg.NetNS})
	if err != nil {
		return nil, fmt.Errorf("dcbnl: dial NETLINK_ROUTE: %w", err)
	}
	return conn, nil
}

// Close releases the socket. Further requests fail.
func (c *Client) Close() error { return c.conn.Close() }

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

	var msgs []netlink.Message
	err = c.conn.Do(func(conn *netlink.Conn) error {
		deadline := time.Now().Add(c.cfg.Timeout)
		if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
			deadline = d
		}
		if err := conn.SetDeadline(deadline); err != nil {
			return fmt.Errorf("dcbnl: set deadline: %w", err)
		}
		// A deadline in the past wakes a blocked receive at once, which is how
		// cancellation reaches a syscall that knows nothing about contexts.
		stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
		defer stop()
		var err error
		msgs, err = conn.Execute(netlink.Message{
			Header: netlink.Header{Type: rtmGetDCB, Flags: netlink.Request},
			Data:   body,
		})
		return err
	})
	if err != nil {
		return nil, requestError(ctx, cmd, ifname, err)
	}
	for _, m := range msgs {
		if m.Header.Type == rtmGetDCB {
			return m.Data, nil
		}
	}
	return nil, fmt.Errorf("dcbnl: cmd %d %s: %w: no RTM_GETDCB message in %d replies", cmd, ifname, errMalformed, len(msgs))
}

// requestError names a failed request's cause (the socket itself was
// retired by nlconn.NetlinkBroken when the kernel did not answer).
func requestError(ctx context.Context, cmd uint8, ifname string, err error) error {
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
