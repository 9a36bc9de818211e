package reader

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/roce-exporter/roce_exporter/internal/safefile"
)

// replayCache remembers what a capture file parsed to, keyed by path and
// invalidated when the file's identity, size or modification time
// changes: replaying a node costs one stat per file per scrape instead of
// a parse, and a driver program rewriting captures is still seen at once.
type replayCache struct {
	mu      sync.Mutex
	entries map[string]replayEntry
}

type replayEntry struct {
	info  os.FileInfo
	value any
	err   error
}

// maxReplayBytes bounds a capture file: a ConnectX's `ethtool -S` is about
// 100 KB, so 16 MiB is room for any real NIC while a 30-million-line file
// (or a FIFO fed forever) no longer grows the exporter to gigabytes.
const maxReplayBytes = 16 << 20

// load returns the parsed content of path, calling parse only when the
// file changed. Only a regular file of at most maxReplayBytes is read: a
// FIFO or a device must not block or flood a scrape.
func (c *replayCache) load(path string, parse func(io.Reader) (any, error)) (any, error) {
	st, err := os.Stat(path)
	if err != nil {
		c.mu.Lock()
		delete(c.entries, path)
		c.mu.Unlock()
		return nil, err
	}
	c.mu.Lock()
	e, ok := c.entries[path]
	c.mu.Unlock()
	if ok && os.SameFile(e.info, st) && e.info.Size() == st.Size() && e.info.ModTime().Equal(st.ModTime()) {
		return e.value, e.err
	}
	data, err := safefile.ReadRegular(path, maxReplayBytes)
	if err != nil {
		return nil, err
	}
	v, perr := parse(bytes.NewReader(data))
	if perr != nil {
		perr = fmt.Errorf("%s: %w", path, perr)
	}
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]replayEntry{}
	}
	c.entries[path] = replayEntry{info: st, value: v, err: perr}
	c.mu.Unlock()
	return v, perr
}
