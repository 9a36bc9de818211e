// Package safefile reads files whose path the exporter does not control
// (its probe state, the cluster plan, replayed captures) without the ways
// such a path can take the process down: a FIFO blocks open() until a writer
// comes (and the start-up hangs, deaf to SIGTERM), a symlink to /dev/zero
// never ends (the process grew to 24 GB), a directory or a huge file fails
// or fills memory. Only regular files are read, opened without blocking,
// and only up to a size the caller names.
//
// ReadAll and LimitedBuffer are the same bound for what is not a file (a
// recorded capture handed over as a reader, a child's output): at most the
// caller's limit is kept, and more is an error naming the limit, never a
// silent truncation that a parser would take for the whole.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
)

// ErrNotRegular matches (errors.Is) the error for a path that is not a
// regular file (after following symlinks): a directory, FIFO, socket or
// device.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge matches the error for a file larger than the caller's limit.
var ErrTooLarge = errors.New("file too large")

// OpenRegular opens path for reading if it is a regular file of at most
// maxBytes. The file is checked before it is opened, so opening a device
// (which can have side effects: /dev/watchdog arms the watchdog) is never
// attempted, and again on the open descriptor, so a path swapped for a FIFO
// in between cannot block: the open is non-blocking. The errors are
// *fs.PathError, wrapping ErrNotRegular or ErrTooLarge where they apply.
func OpenRegular(path string, maxBytes int64) (*os.File, fs.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if err := check(path, st, maxBytes); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	if st, err = f.Stat(); err != nil {
		f.Close()
		return nil, nil, err
	}
	if err := check(path, st, maxBytes); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// ReadRegular reads the whole of path under OpenRegular's rules. A file
// that grows past maxBytes while it is read is refused too.
func ReadRegular(path string, maxBytes int64) ([]byte, error) {
	f, _, err := OpenRegular(path, maxBytes)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := ReadAll(f, maxBytes)
	if errors.Is(err, ErrTooLarge) {
		err = &sizeError{limit: maxBytes, grew: true}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return data, nil
}

// ReadAll reads r to its end, at most maxBytes of it. A reader with more
// fails with an error wrapping ErrTooLarge that names the limit.
func ReadAll(r io.Reader, maxBytes int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > maxBytes {
		return nil, &sizeError{limit: maxBytes}
	}
	return data, nil
}

// LimitedBuffer is ReadAll's bound for output written to the caller (an
// exec.Cmd's Stdout): it keeps at most Limit bytes, accepts and drops the
// rest so the writer is never blocked or failed, and Bytes reports the
// excess. It is safe for concurrent use.
type LimitedBuffer struct {
	Limit int64

	mu   sync.Mutex
	buf  []byte
	over bool
}

func (b *LimitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if room := b.Limit - int64(len(b.buf)); int64(n) > room {
		b.over = true
		p = p[:max(room, 0)]
	}
	b.buf = append(b.buf, p...)
	return n, nil
}

// Bytes returns what was written, or an error wrapping ErrTooLarge that
// names the limit when more was.
func (b *LimitedBuffer) Bytes() ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.over {
		return nil, &sizeError{limit: b.Limit}
	}
	return b.buf, nil
}

// String is what was kept, for a message (a child's stderr) where the
// excess does not matter.
func (b *LimitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

func check(path string, st fs.FileInfo, maxBytes int64) error {
	if !st.Mode().IsRegular() {
		return &fs.PathError{Op: "open", Path: path, Err: kindError(Kind(st.Mode()))}
	}
	if st.Size() > maxBytes {
		return &fs.PathError{Op: "open", Path: path, Err: &sizeError{size: st.Size(), limit: maxBytes}}
	}
	return nil
}

// Kind names the file type of mode for a log line or an error.
func Kind(mode fs.FileMode) string {
	switch {
	case mode.IsRegular():
		return "regular file"
	case mode.IsDir():
		return "directory"
	case mode&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case mode&fs.ModeSocket != 0:
		return "socket"
	case mode&fs.ModeCharDevice != 0:
		return "character device"
	case mode&fs.ModeDevice != 0:
		return "block device"
	case mode&fs.ModeSymlink != 0:
		return "symbolic link"
	}
	return "special file"
}

type kindError string

func (k kindError) Error() string        { return "is a " + string(k) + ", not a regular file" }
func (k kindError) Is(target error) bool { return target == ErrNotRegular }

type sizeError struct {
	size, limit int64
	grew        bool
}

func (e *sizeError) Error() string {
	switch {
	case e.grew:
		return fmt.Sprintf("grew past the limit of %d bytes while being read", e.limit)
	case e.size == 0:
		return fmt.Sprintf("more than the limit of %d bytes", e.limit)
	}
	return fmt.Sprintf("is %d bytes, more than the limit of %d", e.size, e.limit)
}

func (e *sizeError) Is(target error) bool { return target == ErrTooLarge }
