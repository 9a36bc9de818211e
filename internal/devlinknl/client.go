package devlinknl

import (
	"errors"
	"fmt"
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/roce-exporter/roce_exporter/internal/nlconn"
)

// maxReportersPerDump cuts a runaway dump instead of holding it in memory.
const maxReportersPerDump = 4096

// Config tunes a Client.
type Config struct {
	// Timeout bounds each dump; zero means nlconn.DefaultTimeout. The
	// kernel answers HEALTH_REPORTER_GET from memory (counters and state
	// devlink keeps), but it takes each devlink instance's lock, which a
	// driver reload or a firmware reset holds for seconds.
	Timeout time.Duration
	// Retry tunes the back-off after a failed dial.
	Retry nlconn.Policy
}

// Client asks the devlink generic netlink family over one socket, dialled
// on first use and kept by the rule of internal/nlconn. Its methods are
// safe for concurrent use; requests are serialised.
type Client struct{ family *nlconn.Family }

// New returns a Client; nothing is dialled before the first request.
func New(cfg Config) *Client {
	return &Client{family: nlconn.NewFamily(familyName, nlconn.FamilyConfig{Timeout: cfg.Timeout, Retry: cfg.Retry})}
}

// Close releases the socket.
func (c *Client) Close() error { return c.family.Close() }

// HealthReporters dumps every health reporter of every devlink instance
// (and port) in the socket's network namespace. ErrNotSupported: the
// kernel has no devlink family or no health reporters.
func (c *Client) HealthReporters() ([]Reporter, error) {
	msgs, err := c.family.Execute(cmdHealthReporterGet, familyVersion, netlink.Dump, nil)
	switch {
	case errors.Is(err, nlconn.ErrNoFamily):
		return nil, fmt.Errorf("%w (%w)", ErrNotSupported, err)
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EINVAL):
		// A kernel before 5.1 knows no HEALTH_REPORTER_GET.
		return nil, fmt.Errorf("%w (%w)", ErrNotSupported, err)
	case err != nil:
		return nil, fmt.Errorf("devlinknl: HEALTH_REPORTER_GET dump: %w", err)
	}
	return decodeDump(msgs)
}

// decodeDump decodes the messages of a dump, in kernel order.
func decodeDump(msgs []genetlink.Message) ([]Reporter, error) {
	if len(msgs) > maxReportersPerDump {
		return nil, fmt.Errorf("devlinknl: %w: more than %d reporters in one dump", errMalformed, maxReportersPerDump)
	}
	out := make([]Reporter, 0, len(msgs))
	for _, m := range msgs {
		r, err := decodeReporter(m)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
