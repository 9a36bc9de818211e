//go:build linux

package rtnl

import (
	"errors"
	"fmt"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/roce-exporter/roce_exporter/internal/nlconn"
	"github.com/roce-exporter/roce_exporter/node"
)

// maxEntries bounds a dump: a host with more routes than this (a router
// carrying a full table) is not what the checks judge, and the dump is
// refused rather than held in memory.
const maxEntries = 100_000

// Config tunes a Client.
type Config struct {
	// NetNS is an open file descriptor of a network namespace to query
	// instead of the caller's (the Client does not own it).
	NetNS int
	// Timeout bounds each dump; zero means nlconn.DefaultTimeout.
	Timeout time.Duration
	Retry   nlconn.Policy
}

// Client is a long-lived NETLINK_ROUTE socket for the dumps, kept by the
// rule of internal/nlconn. Its methods are safe for concurrent use.
type Client struct {
	cfg  Config
	conn *nlconn.Conn[*netlink.Conn]
}

// New returns a Client; the socket is dialled by the first dump.
func New(cfg Config) *Client {
	if cfg.Timeout <= 0 {
		cfg.Timeout = nlconn.DefaultTimeout
	}
	dial := func() (*netlink.Conn, error) {
		c, err := netlink.Dial(unix.NETLINK_ROUTE, &netlink.Config{NetNS: cfg.NetNS, Strict: true})
		if err != nil {
			return nil, fmt.Errorf("rtnl: dial NETLINK_ROUTE: %w", err)
		}
		return c, nil
	}
	return &Client{cfg: cfg, conn: nlconn.New(dial, nlconn.NetlinkBroken, cfg.Retry)}
}

// Close releases the socket.
func (c *Client) Close() error { return c.conn.Close() }

// Tables is one reading of the namespace's IPv4 routing state.
type Tables struct {
	Rules     []node.PolicyRule
	Routes    []node.Route
	Neighbors []node.Neighbor
}

// Dump reads the IPv4 policy rules, the routes of every table and the
// neighbour entries, with interface names for their indexes.
func (c *Client) Dump() (*Tables, error) {
	links, err := c.dump(rtmGetLink, sizeofIfinfomsg, rtmNewLink)
	if err != nil {
		return nil, err
	}
	names := map[int]string{}
	for _, m := range links {
		index, name, err := decodeLink(m)
		if err != nil {
			return nil, err
		}
		names[index] = name
	}
	name := func(index int) string {
		if n, ok := names[index]; ok {
			return n
		}
		if index == 0 {
			return ""
		}
		return fmt.Sprintf("if%d", index)
	}
	t := &Tables{Rules: []node.PolicyRule{}, Routes: []node.Route{}, Neighbors: []node.Neighbor{}}
	msgs, err := c.dump(rtmGetRule, sizeofFibRuleHdr, rtmNewRule)
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		r, ok, err := decodeRule(m)
		if err != nil {
			return nil, err
		}
		if ok {
			t.Rules = append(t.Rules, r)
		}
	}
	if msgs, err = c.dump(rtmGetRoute, sizeofRtmsg, rtmNewRoute); err != nil {
		return nil, err
	}
	for _, m := range msgs {
		r, oif, ok, err := decodeRoute(m)
		if err != nil {
			return nil, err
		}
		if ok {
			r.Dev = name(oif)
			t.Routes = append(t.Routes, r)
		}
	}
	if msgs, err = c.dump(rtmGetNeigh, sizeofNdmsg, rtmNewNeigh); err != nil {
		return nil, err
	}
	for _, m := range msgs {
		n, ifindex, ok, err := decodeNeigh(m)
		if err != nil {
			return nil, err
		}
		if ok {
			n.Dev = name(ifindex)
			t.Neighbors = append(t.Neighbors, n)
		}
	}
	return t, nil
}

// dump sends a dump request whose header struct (hdrSize bytes, zero but
// for the family) asks for IPv4, and returns the bodies of the replies of
// type want.
func (c *Client) dump(typ uint16, hdrSize int, want uint16) ([][]byte, error) {
	body := make([]byte, hdrSize)
	if typ != rtmGetLink {
		body[0] = afInet
	}
	var msgs []netlink.Message
	err := c.conn.Do(func(conn *netlink.Conn) error {
		if err := conn.SetDeadline(time.Now().Add(c.cfg.Timeout)); err != nil {
			return fmt.Errorf("rtnl: set deadline: %w", err)
		}
		var err error
		msgs, err = conn.Execute(netlink.Message{
			Header: netlink.Header{Type: netlink.HeaderType(typ), Flags: netlink.Request | netlink.Dump},
			Data:   body,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("rtnl: dump %d: %w", typ, err)
	}
	if len(msgs) > maxEntries {
		return nil, fmt.Errorf("rtnl: dump %d: %d entries, more than the %d read: %w", typ, len(msgs), maxEntries, errTooMany)
	}
	out := make([][]byte, 0, len(msgs))
	for _, m := range msgs {
		if uint16(m.Header.Type) == want {
			out = append(out, m.Data)
		}
	}
	return out, nil
}

var errTooMany = errors.New("too many entries")
