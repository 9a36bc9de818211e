package probes

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/safefile"
)

// The last incast of each device is kept in the state directory as well as
// in the store, so that `roce_exporter doctor`, a separate process, can show
// what the switch did: the exporter's probe state is not its to read.
const incastFile = "incast.json"

// maxIncastFileBytes bounds the file: one result per device, a few KB each.
const maxIncastFileBytes = 1 << 20

type incastDoc struct {
	Version int       `json:"version"`
	Saved   time.Time `json:"saved"`
	Node    string    `json:"node"`
	Results []*Result `json:"results"`
}

// saveIncast writes the store's last incast result of every device.
func (s *Scheduler) saveIncast() {
	if s.opts.StateDir == "" {
		return
	}
	var results []*Result
	s.store.mu.Lock()
	for _, r := range s.store.latest {
		if r.Probe == KindIncast {
			results = append(results, r)
		}
	}
	s.store.mu.Unlock()
	slices.SortFunc(results, func(a, b *Result) int { return strings.Compare(a.Device, b.Device) })
	data, err := json.MarshalIndent(incastDoc{Version: 1, Saved: s.opts.Now().UTC(), Node: s.self.Name, Results: results}, "", " ")
	if err == nil {
		err = writeFileAtomic(filepath.Join(s.opts.StateDir, incastFile), data)
	}
	if err != nil {
		s.logger.Warn("cannot save the last incast results for the doctor", "dir", s.opts.StateDir, "err", err)
	}
}

// LastIncast reads the last incast of each device that the exporter (or
// `probe run incast`) of node saved in the probe state directory dir; none
// and no error when no incast ran yet.
func LastIncast(dir, node string) ([]*Result, error) {
	if dir == "" {
		return nil, nil
	}
	data, err := safefile.ReadRegular(filepath.Join(dir, incastFile), maxIncastFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var doc incastDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, incastFile), err)
	}
	if doc.Version != 1 {
		return nil, fmt.Errorf("%s: not a version 1 incast file", filepath.Join(dir, incastFile))
	}
	if doc.Node != node {
		// A state directory copied from, or shared with, another node.
		return nil, fmt.Errorf("%s holds node %s's incasts, not %s's", filepath.Join(dir, incastFile), doc.Node, node)
	}
	var out []*Result
	for _, r := range doc.Results {
		if r != nil && r.Probe == KindIncast && r.Incast != nil {
			out = append(out, r)
		}
	}
	return out, nil
}
