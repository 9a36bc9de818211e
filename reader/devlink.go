package reader

import (
	"cmp"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/devlinknl"
	"github.com/roce-exporter/roce_exporter/node"
)

// The captures of a replay directory: `devlink health show` and
// `devlink dev info`, each with -j (.json) or without (.txt); the parsers
// tell the two apart by content, so either name may hold either.
const (
	devlinkReplayFile     = "devlink-health.json"
	devlinkTextReplayFile = "devlink-health.txt"
	devlinkInfoReplayFile = "devlink-info.json"
	devlinkInfoTextFile   = "devlink-info.txt"
)

type devlinkReader interface {
	reporters() ([]devlinknl.Reporter, error)
	info() ([]devlinknl.Info, error)
	close() error
}

// devlinkSource reads the devlink health reporters of the node's NICs and
// their `devlink dev info`. The reporters are read every scrape: the kernel
// answers from the counters it keeps, no firmware command is sent, and a
// reporter going into error is the news. dev info is read once per refresh
// interval: mlx5 asks its firmware for the versions, and they change only
// with a flash or a reset.
type devlinkSource struct {
	r   *Reader
	src devlinkReader
	// infoAt is when info was last read, infos what it gave.
	infoAt time.Time
	infos  []*node.DevlinkInfo
}

func init() {
	registerSource(node.SourceDevlink, "NIC devlink health reporters and firmware versions.", newDevlinkSource)
}

func newDevlinkSource(r *Reader) source {
	c := &devlinkSource{r: r}
	if r.opts.ReplayDir != "" {
		c.src = &replayDevlink{dir: r.opts.ReplayDir}
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
		reps = nil
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
	slices.SortStableFunc(out, func(a, b *node.HealthReporter) int {
		return cmp.Or(cmp.Compare(a.Handle, b.Handle), cmp.Compare(a.Name, b.Name))
	})
	if c.r.due(c.infoAt, sc.Time) {
		c.infoAt, c.infos = sc.Time, c.readInfo(sc)
	}
	infos := c.infos
	if len(out) == 0 && len(infos) == 0 {
		return nil, errors.Join(ErrNoData, errors.New("no devlink health reporter or dev info"))
	}
	return func(sn *node.Snapshot) { sn.HealthReporters, sn.DevlinkInfo = out, infos }, nil
}

// readInfo reads `devlink dev info`. What could not be read is a read
// error and is left out; the instances that answered are kept.
func (c *devlinkSource) readInfo(sc *scan) []*node.DevlinkInfo {
	infos, err := c.src.info()
	switch {
	case errors.Is(err, devlinknl.ErrNotSupported), errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		sc.readError(node.SourceDevlink, "dev info", err)
	}
	var out []*node.DevlinkInfo
	for _, i := range infos {
		if len(i.Fixed)+len(i.Running)+len(i.Stored) == 0 {
			continue // mlx5's auxiliary instances: a driver name only
		}
		di := &node.DevlinkInfo{Handle: i.Handle(), Driver: i.Driver,
			Fixed: i.Fixed, Running: i.Running, Stored: i.Stored}
		if i.Bus == "pci" {
			di.PCIAddress = i.Device
		}
		out = append(out, di)
	}
	slices.SortStableFunc(out, func(a, b *node.DevlinkInfo) int { return cmp.Compare(a.Handle, b.Handle) })
	return out
}

// liveDevlink asks over one long-lived generic netlink socket.
type liveDevlink struct{ client *devlinknl.Client }

func (l *liveDevlink) reporters() ([]devlinknl.Reporter, error) { return l.client.HealthReporters() }

func (l *liveDevlink) info() ([]devlinknl.Info, error) { return l.client.Info() }

func (l *liveDevlink) close() error { return l.client.Close() }

// replayDevlink reads the captures of a replay directory.
type replayDevlink struct {
	dir   string
	cache replayCache
}

func (r *replayDevlink) reporters() ([]devlinknl.Reporter, error) {
	v, err := r.load(func(f io.Reader) (any, error) { return devlinknl.ParseRecorded(f) }, devlinkReplayFile, devlinkTextReplayFile)
	if err != nil {
		return nil, err
	}
	return v.([]devlinknl.Reporter), nil
}

func (r *replayDevlink) info() ([]devlinknl.Info, error) {
	v, err := r.load(func(f io.Reader) (any, error) { return devlinknl.ParseInfoRecorded(f) }, devlinkInfoReplayFile, devlinkInfoTextFile)
	if err != nil {
		return nil, err
	}
	return v.([]devlinknl.Info), nil
}

// load parses the first of names that exists.
func (r *replayDevlink) load(parse func(io.Reader) (any, error), names ...string) (any, error) {
	var err error
	for _, name := range names {
		var v any
		v, err = r.cache.load(filepath.Join(r.dir, name), parse)
		if !errors.Is(err, fs.ErrNotExist) {
			return v, err
		}
	}
	return nil, err
}

func (*replayDevlink) close() error { return nil }
