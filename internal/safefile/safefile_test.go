package safefile

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readWithin runs ReadRegular and fails t if it does not return within a
// few seconds (a FIFO opened for reading without O_NONBLOCK waits forever).
func readWithin(t *testing.T, path string, max int64) ([]byte, error) {
	t.Helper()
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		data, err := ReadRegular(path, max)
		done <- result{data, err}
	}()
	select {
	case r := <-done:
		return r.data, r.err
	case <-time.After(5 * time.Second):
		t.Fatalf("ReadRegular(%s) still blocked after 5s", path)
		return nil, nil
	}
}

func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "state.json")
	os.WriteFile(regular, []byte(`{"ok":true}`), 0o600)
	link := filepath.Join(dir, "link.json")
	os.Symlink(regular, link)
	for _, path := range []string{regular, link} {
		data, err := readWithin(t, path, 100)
		if err != nil || string(data) != `{"ok":true}` {
			t.Errorf("%s: %q, %v", path, data, err)
		}
	}
	if data, err := readWithin(t, regular, int64(len(`{"ok":true}`))); err != nil || len(data) == 0 {
		t.Errorf("a file of exactly the limit: %v", err)
	}
}

func TestReadRegularRefuses(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	os.Symlink("/dev/zero", zero)
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sub := filepath.Join(dir, "dir")
	os.Mkdir(sub, 0o700)
	big := filepath.Join(dir, "big")
	os.WriteFile(big, make([]byte, 101), 0o600)

	for _, c := range []struct {
		path string
		want error
		says string
	}{
		{fifo, ErrNotRegular, "named pipe (FIFO)"},
		{zero, ErrNotRegular, "character device"},
		{sock, ErrNotRegular, "socket"},
		{sub, ErrNotRegular, "directory"},
		{big, ErrTooLarge, "101 bytes, more than the limit of 100"},
	} {
		_, err := readWithin(t, c.path, 100)
		var pathErr *fs.PathError
		if !errors.Is(err, c.want) || !errors.As(err, &pathErr) || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("%s: %v, want a *fs.PathError matching %v that says %q", c.path, err, c.want, c.says)
		}
	}
	if _, err := readWithin(t, filepath.Join(dir, "missing"), 100); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
}

// procfs files are regular files that report a size of 0: the limit holds
// on what is read, not only on what stat says.
func TestReadRegularStopsAtTheLimitWhileReading(t *testing.T) {
	const path = "/proc/self/status" // about 1.5 KB
	if st, err := os.Stat(path); err != nil || st.Size() != 0 || !st.Mode().IsRegular() {
		t.Skipf("%s: %v, not a zero-size regular file here", path, err)
	}
	if _, err := ReadRegular(path, 100); !errors.Is(err, ErrTooLarge) {
		t.Errorf("%v, want ErrTooLarge", err)
	}
	if data, err := ReadRegular(path, 1<<20); err != nil || !strings.Contains(string(data), "Pid:") {
		t.Errorf("within the limit: %v", err)
	}
}

func TestReadAll(t *testing.T) {
	data, err := ReadAll(strings.NewReader("0123456789"), 10)
	if err != nil || string(data) != "0123456789" {
		t.Fatalf("at the limit: %q, %v", data, err)
	}
	_, err = ReadAll(strings.NewReader("0123456789x"), 10)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "more than the limit of 10 bytes") {
		t.Fatalf("one byte over: %v", err)
	}
	// An endless reader stops at the limit instead of filling memory.
	if _, err := ReadAll(zeros{}, 1<<20); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("endless reader: %v", err)
	}
	if _, err := ReadAll(failing{}, 10); err == nil || errors.Is(err, ErrTooLarge) {
		t.Fatalf("read error: %v", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

type failing struct{}

func (failing) Read([]byte) (int, error) { return 0, syscall.EIO }

// A child's output past the limit is accepted (the child is not blocked or
// failed) and reported, not truncated silently.
func TestLimitedBuffer(t *testing.T) {
	b := &LimitedBuffer{Limit: 8}
	for _, w := range []string{"abc", "defgh"} {
		if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", w, n, err)
		}
	}
	if data, err := b.Bytes(); err != nil || string(data) != "abcdefgh" {
		t.Fatalf("at the limit: %q, %v", data, err)
	}
	if n, err := b.Write([]byte("ij")); n != 2 || err != nil {
		t.Fatalf("Write past the limit = %d, %v; want the whole accepted", n, err)
	}
	if _, err := b.Bytes(); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "more than the limit of 8 bytes") {
		t.Fatalf("past the limit: %v", err)
	}
	if b.String() != "abcdefgh" {
		t.Errorf("kept %q", b.String())
	}
}
