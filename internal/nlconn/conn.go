// Package nlconn is the one rule by which the exporter keeps a kernel
// socket (DCB netlink, ethtool and devlink generic netlink, the ethtool
// ioctl socket): dialled on first use, not before; after a failed dial,
// dialled again only once a back-off has passed, which doubles with each
// failure up to a cap; after a request broke the socket (a timeout, a
// socket error: a late reply could be read as the next request's answer),
// closed and dialled afresh for the next request.
//
// Without the back-off a client either gives up for good after one failed
// dial (a transient EMFILE at start-up then costs the source until the
// exporter restarts) or dials on every request (a kernel without the
// family is asked once per interface per scrape).
package nlconn

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// The back-off: FirstWait after the first failed dial, doubled per
// consecutive failure, at most MaxWait. One second lets the next scrape
// retry a transient failure (EMFILE in a burst of connections); a minute
// bounds both the time a source stays dark after the cause went away and
// the cost of a cause that stays (a kernel without the family: one socket
// and one request a minute).
const (
	FirstWait = time.Second
	MaxWait   = time.Minute
)

var (
	// ErrNotDialled matches (errors.Is) the error of a request that was
	// not sent because there is no socket: its dial failed now or earlier.
	// The dial's own error is wrapped too.
	ErrNotDialled = errors.New("no socket")
	// ErrClosed is the error of a request after Close.
	ErrClosed = errors.New("socket closed")
)

// Policy tunes the back-off; the zero value is FirstWait, MaxWait and the
// wall clock.
type Policy struct {
	FirstWait, MaxWait time.Duration
	// Now replaces the clock, for tests.
	Now func() time.Time
}

func (p Policy) withDefaults() Policy {
	if p.FirstWait <= 0 {
		p.FirstWait = FirstWait
	}
	if p.MaxWait < p.FirstWait {
		p.MaxWait = max(MaxWait, p.FirstWait)
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	return p
}

// wait is the back-off after the n-th consecutive failed dial (n ≥ 1).
func (p Policy) wait(n int) time.Duration {
	w := p.FirstWait
	for i := 1; i < n && w < p.MaxWait; i++ {
		w *= 2
	}
	return min(w, p.MaxWait)
}

// Conn holds one socket of type C. Its methods are safe for concurrent
// use; requests are serialised, as they must be on one netlink socket.
type Conn[C io.Closer] struct {
	dial   func() (C, error)
	broken func(error) bool
	policy Policy

	mu       sync.Mutex
	conn     C
	up       bool
	closed   bool
	failures int // consecutive failed dials
	retryAt  time.Time
	lastErr  error
}

// New returns a Conn that dials with dial on first use. broken says
// whether a request's error left the socket unusable; nil means never.
func New[C io.Closer](dial func() (C, error), broken func(error) bool, p Policy) *Conn[C] {
	if broken == nil {
		broken = func(error) bool { return false }
	}
	return &Conn[C]{dial: dial, broken: broken, policy: p.withDefaults()}
}

// Do runs request with the socket, dialling it first when there is none
// and the back-off allows. An error that broken accepts closes the socket,
// and the next Do dials a new one at once.
func (c *Conn[C]) Do(request func(C) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if !c.up {
		if err := c.dialLocked(); err != nil {
			return err
		}
	}
	err := request(c.conn)
	if err != nil && c.broken(err) {
		_ = c.conn.Close()
		var zero C
		c.conn, c.up = zero, false
	}
	return err
}

func (c *Conn[C]) dialLocked() error {
	now := c.policy.Now()
	if c.failures > 0 && now.Before(c.retryAt) {
		return fmt.Errorf("%w: not dialled again for %s after %d failed dials: %w",
			ErrNotDialled, c.retryAt.Sub(now).Round(time.Millisecond), c.failures, c.lastErr)
	}
	conn, err := c.dial()
	if err != nil {
		c.failures++
		c.retryAt = now.Add(c.policy.wait(c.failures))
		c.lastErr = err
		return fmt.Errorf("%w: %w", ErrNotDialled, err)
	}
	c.conn, c.up, c.failures, c.lastErr = conn, true, 0, nil
	return nil
}

// Close releases the socket; later requests fail with ErrClosed. It waits
// for a request in progress, which the socket's deadline bounds.
func (c *Conn[C]) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if !c.up {
		return nil
	}
	err := c.conn.Close()
	var zero C
	c.conn, c.up = zero, false
	return err
}

// NetlinkBroken is the broken rule of a netlink socket
// (github.com/mdlayher/netlink): an errno carried in a netlink error
// message is the kernel's answer and leaves the socket in step; any other
// failure (a deadline, a socket error, a reply that does not parse) may
// leave a reply unread, which the next request would take for its own.
func NetlinkBroken(err error) bool {
	var oe *netlink.OpError
	if !errors.As(err, &oe) {
		return true
	}
	_, answered := oe.Err.(unix.Errno)
	return !answered
}
