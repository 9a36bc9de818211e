package reader

import (
	"os"
	"sync"
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

// load returns the parsed content of path, calling parse only when the
// file changed.
func (c *replayCache) load(path string, parse func(*os.File) (any, error)) (any, error) {
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
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	v, perr := parse(f)
	f.Close()
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]replayEntry{}
	}
	c.entries[path] = replayEntry{info: st, value: v, err: perr}
	c.mu.Unlock()
	return v, perr
}
