package reader

import (
	"cmp"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/roce-exporter/roce_exporter/internal/devlinknl"
	"github.com/roce-exporter/roce_exporter/node"
)

// devlinkReplayFile is the `devlink health show -j` capture in a replay
// directory.
const devlinkReplayFile = "devlink-health.json"

type devlinkReporters interface {
	reporters() ([]devlinknl.Reporter, error)
	close() error
}

// devlinkSource reads the devlink health reporters of the node's NICs. It
// is read every scrape: the kernel answers from the counters it keeps, no
// firmware command is sent, and a reporter going into error is the news.
type devlinkSource struct {
	r   *Reader
	src devlinkReporters
}

func init() { registerSource(node.SourceDevlink, "NIC devlink health reporters.", newDevlinkSource) }

func newDevlinkSource(r *Reader) source {
	c := &devlinkSource{r: r}
	if r.opts.ReplayDir != "" {
		c.src = &replayDevlink{path: filepath.Join(r.opts.ReplayDir, devlinkReplayFile)}
	} else {
		c.src = &liveDevlink{client: devlinknl.New(devlinknl.Config{Timeout: r.opts.Timeout})}
	}
	return c
}

func (c *devlinkSource) close() error { return c.src.close() }

func (c *devlinkSource) read(sc *scan) (func(*node.Snapshot), error) {
	if c.r.copyWithoutCaptures() {
		return nil, errors.Join(ErrNoData, errNoKernel)
	}
	reps, err := c.src.reporters()
	switch {
	case errors.Is(err, devlinknl.ErrNotSupported), errors.Is(err, fs.ErrNotExist):
		return nil, errors.Join(ErrNoData, err)
	case err != nil:
		return nil, err
	}
	seen := map[[2]string]bool{}
	var out []*node.HealthReporter
	for _, rep := range reps {
		h := rep.Handle()
		if seen[[2]string{h, rep.Name}] {
			continue // one series per reporter, even if a dump repeats one
		}
		seen[[2]string{h, rep.Name}] = true
		hr := &node.HealthReporter{Handle: h, Name: rep.Name, Healthy: rep.State == devlinknl.StateHealthy,
			Errors: rep.Errors, Recoveries: rep.Recoveries}
		if rep.Bus == "pci" {
			hr.PCIAddress = rep.Device
		}
		out = append(out, hr)
	}
	if len(out) == 0 {
		return nil, errors.Join(ErrNoData, errors.New("no devlink health reporter"))
	}
	slices.SortStableFunc(out, func(a, b *node.HealthReporter) int {
		return cmp.Or(cmp.Compare(a.Handle, b.Handle), cmp.Compare(a.Name, b.Name))
	})
	return func(sn *node.Snapshot) { sn.HealthReporters = out }, nil
}

// liveDevlink dumps the reporters over one long-lived generic netlink socket.
type liveDevlink struct{ client *devlinknl.Client }

func (l *liveDevlink) reporters() ([]devlinknl.Reporter, error) { return l.client.HealthReporters() }

func (l *liveDevlink) close() error { return l.client.Close() }

// replayDevlink reads a `devlink health show -j` capture.
type replayDevlink struct {
	path  string
	cache replayCache
}

func (r *replayDevlink) reporters() ([]devlinknl.Reporter, error) {
	v, err := r.cache.load(r.path, func(f io.Reader) (any, error) { return devlinknl.ParseRecorded(f) })
	if err != nil {
		return nil, err
	}
	return v.([]devlinknl.Reporter), nil
}

func (*replayDevlink) close() error { return nil }
