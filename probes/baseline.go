package probes

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/safefile"
)

// baselineWindow is how many good runs a link's baseline is the median of:
// enough to ride out one odd run, short enough to follow a deliberate
// hardware change within a day of hourly probes.
const baselineWindow = 9

// minBaselineSamples is how many good runs a link needs before regressions
// are judged against its baseline.
const minBaselineSamples = 3

// RegressionFactor: a run below this share of the link's baseline is a
// regression.
const RegressionFactor = 0.8

const baselineFile = "baselines.json"

// Baselines holds the recent good results per link, persisted in the state
// directory so that a restart does not forget what "normal" is.
type Baselines struct {
	mu     sync.Mutex
	path   string
	logger *slog.Logger
	links  map[string][]float64
	// saveErr is why the last save failed, nil after one that worked.
	saveErr error
}

type baselineDoc struct {
	Version int                  `json:"version"`
	Saved   time.Time            `json:"saved"`
	Links   map[string][]float64 `json:"links"`
}

// LoadBaselines reads dir/baselines.json. A missing file is an empty
// store; a corrupt or truncated one, or one that is not a regular file of
// at most maxBaselineBytes (a FIFO, a directory, a symlink to a device), is
// renamed aside and logged, never fatal. The error says that dir cannot be
// created or written to (a read-only root file system without a state
// volume): the caller decides whether to go on without persistence.
func LoadBaselines(dir string, logger *slog.Logger) (*Baselines, error) {
	b := &Baselines{logger: logger, links: map[string][]float64{}}
	if dir == "" {
		return b, nil
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("probe state directory: %w", err)
	}
	// An existing directory on a read-only mount, or one this user may not
	// write, would fail every save: found now, not at the first good run.
	probe, err := os.CreateTemp(dir, "."+baselineFile+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("probe state directory: %w", err)
	}
	probe.Close()
	os.Remove(probe.Name())
	b.path = filepath.Join(dir, baselineFile)
	// Temporary files of a writer killed mid-write are garbage.
	stale, _ := filepath.Glob(filepath.Join(dir, "."+baselineFile+".tmp-*"))
	for _, f := range stale {
		os.Remove(f)
	}
	data, err := safefile.ReadRegular(b.path, maxBaselineBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return b, nil
	case errors.Is(err, safefile.ErrNotRegular), errors.Is(err, safefile.ErrTooLarge):
		// Moved, not ignored: the next save renames a new file over the
		// path, which fails on a directory, and a FIFO or device left in
		// place would be met again at every start.
		b.setAside("is not a usable baseline file", err)
		return b, nil
	case err != nil:
		// Unreadable (permissions, I/O error): left where it is for the
		// operator to look at; the next good run replaces it.
		b.logger.Error("cannot read the probe baseline file; starting with empty baselines", "file", b.path, "err", err)
		return b, nil
	}
	var doc baselineDoc
	if err := json.Unmarshal(data, &doc); err != nil || doc.Version != 1 || !validLinks(doc.Links) {
		if err == nil {
			err = errors.New("not a version 1 baseline document")
		}
		b.setAside("was corrupt", err)
		return b, nil
	}
	for k, v := range doc.Links {
		b.links[k] = v
	}
	return b, nil
}

// maxBaselineBytes bounds the baseline file: a node keeps one entry of
// about 210 bytes per peer and rail, so a 16,384-node cluster with 8 rails
// writes 28 MB.
const maxBaselineBytes = 64 << 20

// setAside renames the file at b.path (a symlink itself, not its target)
// out of the way so that the exporter starts with empty baselines. Losing
// baselines costs a few runs; refusing to start costs the whole exporter,
// so not even a failed rename is fatal.
func (b *Baselines) setAside(why string, cause error) {
	aside := fmt.Sprintf("%s.corrupt-%d", b.path, time.Now().Unix())
	if err := os.Rename(b.path, aside); err != nil {
		b.logger.Error("probe baseline file "+why+" and cannot be moved aside; starting with empty baselines, which will not be saved until it is removed",
			"file", b.path, "err", cause, "rename_err", err)
		return
	}
	b.logger.Warn("probe baseline file "+why+"; moved aside, starting with empty baselines", "file", b.path, "moved_to", aside, "err", cause)
}

func validLinks(links map[string][]float64) bool {
	for k, v := range links {
		if k == "" || len(v) > baselineWindow*4 {
			return false
		}
		for _, x := range v {
			if x <= 0 || x != x || x > 1e15 {
				return false
			}
		}
	}
	return true
}

// Baseline returns the median of the link's recent good runs, and whether
// there are enough of them to judge a regression.
func (b *Baselines) Baseline(key string) (float64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v := b.links[key]
	if len(v) == 0 {
		return 0, false
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	var m float64
	if len(s)%2 == 1 {
		m = s[len(s)/2]
	} else {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return m, len(s) >= minBaselineSamples
}

// Record adds a good run and persists the store.
func (b *Baselines) Record(key string, value float64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	v := append(b.links[key], value)
	if len(v) > baselineWindow {
		v = v[len(v)-baselineWindow:]
	}
	b.links[key] = v
	b.saveErr = b.saveLocked()
	return b.saveErr
}

// SaveError is why the last save failed; nil when it worked, or when
// nothing was saved yet.
func (b *Baselines) SaveError() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.saveErr
}

// saveLocked writes atomically: a temporary file in the same directory,
// fsync, rename over the old file, fsync the directory. A kill -9 at any
// point leaves either the old or the new file, never a torn one.
func (b *Baselines) saveLocked() error {
	if b.path == "" {
		return nil
	}
	data, err := json.MarshalIndent(baselineDoc{Version: 1, Saved: time.Now().UTC(), Links: b.links}, "", " ")
	if err != nil {
		return err
	}
	return writeFileAtomic(b.path, data)
}

// writeFileAtomic replaces the baselines file (owner-only, as
// os.CreateTemp makes it).
func writeFileAtomic(path string, data []byte) error { return safefile.WriteAtomic(path, data, 0o600) }
