package reader

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/roce-exporter/roce_exporter/node"
)

// FS is the narrow view of the filesystem the sources need. It exists so
// tests can inject the errors real sysfs produces but plain files cannot
// (EINVAL on an empty GID slot, EIO from firmware, a read that never returns).
type FS interface {
	OpenAttr(path string) (AttrFile, error)
	ReadDirNames(path string) ([]string, error)
	Readlink(path string) (string, error)
	// Realpath resolves every symlink in path. sysfs class entries are
	// links into /sys/devices and their own links are relative to the
	// real directory, so a lexical join would go wrong.
	Realpath(path string) (string, error)
	// Inode identifies a kernfs node: a device that is removed and re-added
	// under the same name gets a new inode, which invalidates cached layout.
	Inode(path string) (uint64, error)
}

// AttrFile is one sysfs attribute kept open between scrapes.
type AttrFile interface {
	// PreadAt0 reads from offset 0 in a single syscall; sysfs regenerates
	// the value on every read that starts at offset 0.
	PreadAt0(buf []byte) (int, error)
	Close() error
}

// OSFS is the real filesystem.
type OSFS struct{}

type osAttrFile struct{ fd int }

func (OSFS) OpenAttr(path string) (AttrFile, error) {
	// A blocking open is deliberate: tests plant a FIFO to model a sysfs
	// read that hangs in firmware, and the source timeout must cope.
	fd, err := openRetry(path, syscall.O_RDONLY|syscall.O_CLOEXEC)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &osAttrFile{fd: fd}, nil
}

func (f *osAttrFile) PreadAt0(buf []byte) (int, error) {
	for {
		n, err := syscall.Pread(f.fd, buf, 0)
		if err == syscall.EINTR {
			continue
		}
		return n, err
	}
}

func (f *osAttrFile) Close() error { return syscall.Close(f.fd) }

// readDirNames lists a directory with raw getdents: os.Open would also try
// to register the descriptor with the netpoller, one more syscall on a
// listing made every scrape.
func (OSFS) ReadDirNames(path string) ([]string, error) {
	fd, err := openRetry(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var buf [8192]byte
	var names []string
	for {
		n, err := syscall.ReadDirent(fd, buf[:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "readdirent", Path: path, Err: err}
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = syscall.ParseDirent(buf[:n], -1, names)
	}
}

func openRetry(path string, flags int) (int, error) {
	for {
		fd, err := syscall.Open(path, flags, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

func (OSFS) Readlink(path string) (string, error) { return os.Readlink(path) }

func (OSFS) Realpath(path string) (string, error) { return filepath.EvalSymlinks(path) }

func (OSFS) Inode(path string) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	return st.Ino, nil
}

// isDir reports whether path is a directory or a link to one: the trailing
// slash makes the kernel resolve it as a directory, so a regular file fails
// with ENOTDIR and a dangling link with ENOENT.
func isDir(f FS, path string) bool {
	_, err := f.Inode(path + "/")
	return err == nil
}

// isVanished reports whether err means the file or device went away, as
// opposed to the file being present but unreadable.
func isVanished(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENODEV) ||
		errors.Is(err, syscall.ENXIO) || errors.Is(err, syscall.ESTALE) || errors.Is(err, syscall.EBADF)
}

// attrCache keeps sysfs attribute files open across scrapes so that a scrape
// costs one pread per value instead of open+read+close. Files not touched in
// a scrape are closed by sweep, so a vanished device does not leak fds.
// Files are keyed by (directory, name) so that a steady-state read builds no
// path string, and the last text read is kept so that an unchanged value
// needs no new string. Not safe for concurrent use: each source owns its
// cache, and the Reader never runs a source concurrently with itself.
type attrCache struct {
	fs    FS
	files map[attrKey]*cachedAttr
	gen   uint64
	buf   [4096]byte
}

type attrKey struct{ dir, name string }

type cachedAttr struct {
	// closed is set when the cache drops the file, so a holder of the
	// pointer (see readUintVia) knows to look it up again.
	closed  bool
	path    string
	f       AttrFile
	seen    uint64
	lastRaw []byte
	lastStr string
}

func newAttrCache(f FS) *attrCache {
	return &attrCache{fs: f, files: make(map[attrKey]*cachedAttr)}
}

// begin starts a new scrape generation.
func (c *attrCache) begin() { c.gen++ }

// sweep closes every file that was not read since begin.
func (c *attrCache) sweep() {
	for k, a := range c.files {
		if a.seen != c.gen {
			c.drop(k, a)
		}
	}
}

// closeAll releases every cached file.
func (c *attrCache) closeAll() {
	for k, a := range c.files {
		c.drop(k, a)
	}
}

// drop closes a cached file and marks it, so a holder of the pointer (see
// readUintVia) looks it up again.
func (c *attrCache) drop(k attrKey, a *cachedAttr) {
	a.f.Close()
	openFiles.release()
	a.closed = true
	delete(c.files, k)
}

func (c *attrCache) readEntry(dir, name string) (*cachedAttr, []byte, error) {
	k := attrKey{dir, name}
	a, ok := c.files[k]
	if !ok {
		path := dir
		if name != "" {
			path = joinPath(dir, name)
		}
		f, err := c.fs.OpenAttr(path)
		if err != nil {
			return nil, nil, err
		}
		if !openFiles.acquire() {
			// Over the process's budget of kept-open files: read and close.
			// The returned entry is marked closed, so a holder looks the
			// file up again next time, when the budget may have room.
			defer f.Close()
			n, err := f.PreadAt0(c.buf[:])
			if err != nil {
				return nil, nil, &fs.PathError{Op: "read", Path: path, Err: err}
			}
			return &cachedAttr{path: path, closed: true}, c.buf[:n], nil
		}
		a = &cachedAttr{path: path, f: f}
		c.files[k] = a
	}
	a.seen = c.gen
	n, err := a.f.PreadAt0(c.buf[:])
	if err != nil && ok && isVanished(err) {
		// The device behind a cached fd was removed, possibly re-added under
		// the same name: retry once with a fresh open.
		c.drop(k, a)
		return c.readEntry(dir, name)
	}
	if err != nil {
		c.drop(k, a)
		return nil, nil, &fs.PathError{Op: "read", Path: a.path, Err: err}
	}
	return a, c.buf[:n], nil
}

// readUintVia reads a counter through a handle the caller keeps between
// scrapes, skipping the map lookup (two string hashes) of readUint; the
// handle is refreshed when the cache dropped the file.
func (c *attrCache) readUintVia(h **cachedAttr, path string) (uint64, error) {
	a := *h
	if a == nil || a.closed {
		var b []byte
		var err error
		a, b, err = c.readEntry(path, "")
		if err != nil {
			*h = nil
			return 0, err
		}
		*h = a
		return parseCounterAt(a.path, b)
	}
	a.seen = c.gen
	n, err := a.f.PreadAt0(c.buf[:])
	if err != nil {
		// Let the general path handle reopening and cleanup.
		a.seen = 0
		*h = nil
		return c.readUint(path, "")
	}
	return parseCounterAt(a.path, c.buf[:n])
}

// readString returns the trimmed text of a sysfs attribute. An unchanged
// value returns the string of the previous read without allocating.
func (c *attrCache) readString(dir, name string) (string, error) {
	a, b, err := c.readEntry(dir, name)
	if err != nil {
		return "", err
	}
	if a.lastRaw != nil && bytes.Equal(a.lastRaw, b) {
		return a.lastStr, nil
	}
	a.lastRaw = append(a.lastRaw[:0], b...)
	a.lastStr = string(bytes.TrimSpace(b))
	return a.lastStr, nil
}

// readUint parses a sysfs counter. It never turns an error into 0.
func (c *attrCache) readUint(dir, name string) (uint64, error) {
	a, b, err := c.readEntry(dir, name)
	if err != nil {
		return 0, err
	}
	return parseCounterAt(a.path, b)
}

// parseCounterAt parses a counter read from path, naming the path in the
// error.
func parseCounterAt(path string, b []byte) (uint64, error) {
	v, err := node.ParseCounter(b)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// sysfsBufPool holds read buffers: a sysfs attribute is at most a page.
var sysfsBufPool = sync.Pool{New: func() any { b := make([]byte, 8192); return &b }}

// readSysfsFile is the uncached read used for files read once (GID tables,
// topology, doctor): open, one read, close.
func readSysfsFile(f FS, path string) (string, error) {
	a, err := f.OpenAttr(path)
	if err != nil {
		return "", err
	}
	defer a.Close()
	bp := sysfsBufPool.Get().(*[]byte)
	defer sysfsBufPool.Put(bp)
	n, err := a.PreadAt0(*bp)
	if err != nil {
		return "", &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return strings.TrimSpace(string((*bp)[:n])), nil
}

// joinPath avoids filepath.Join's Clean pass on the hot path; every part is
// a plain name produced by the sources themselves.
func joinPath(parts ...string) string {
	n := len(parts)
	for _, p := range parts {
		n += len(p)
	}
	var b strings.Builder
	b.Grow(n)
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(p)
	}
	return b.String()
}
