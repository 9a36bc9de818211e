package collector

import (
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// faultFS wraps the real filesystem and injects the failures real sysfs
// produces: EINVAL on empty GID slots, EIO from firmware, reads that hang.
type faultFS struct {
	osFS
	mu      sync.Mutex
	errs    map[string]error         // path suffix -> error on open
	hang    map[string]chan struct{} // path suffix -> read blocks until closed
	touched map[string]int
}

func newFaultFS() *faultFS {
	return &faultFS{errs: map[string]error{}, hang: map[string]chan struct{}{}, touched: map[string]int{}}
}

func (f *faultFS) match(path string) (error, chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.touched[path]++
	for suffix, err := range f.errs {
		if strings.HasSuffix(path, suffix) {
			return err, nil
		}
	}
	for suffix, ch := range f.hang {
		if strings.HasSuffix(path, suffix) {
			return nil, ch
		}
	}
	return nil, nil
}

func (f *faultFS) setErr(suffix string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.errs, suffix)
	} else {
		f.errs[suffix] = err
	}
}

func (f *faultFS) setHang(suffix string) chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan struct{})
	f.hang[suffix] = ch
	return ch
}

func (f *faultFS) touchedMatching(substr string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for p := range f.touched {
		if strings.Contains(p, substr) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

type faultFile struct {
	attrFile
	path string
	fs   *faultFS
}

func (f *faultFS) openAttr(path string) (attrFile, error) {
	if err, _ := f.match(path); err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	a, err := f.osFS.openAttr(path)
	if err != nil {
		return nil, err
	}
	return &faultFile{attrFile: a, path: path, fs: f}, nil
}

func (ff *faultFile) preadAt0(buf []byte) (int, error) {
	err, hang := ff.fs.match(ff.path)
	if hang != nil {
		<-hang
	}
	if err != nil {
		return 0, err
	}
	return ff.attrFile.preadAt0(buf)
}

func (f *faultFS) readDirNames(path string) ([]string, error) {
	if err, hang := f.match(path); err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	} else if hang != nil {
		<-hang
	}
	return f.osFS.readDirNames(path)
}

func (f *faultFS) readlink(path string) (string, error) {
	if err, _ := f.match(path); err != nil {
		return "", &os.PathError{Op: "readlink", Path: path, Err: err}
	}
	return f.osFS.readlink(path)
}

func (f *faultFS) realpath(path string) (string, error) {
	if err, _ := f.match(path); err != nil {
		return "", &os.PathError{Op: "realpath", Path: path, Err: err}
	}
	return f.osFS.realpath(path)
}

func (f *faultFS) inode(path string) (uint64, error) {
	if err, _ := f.match(path); err != nil {
		return 0, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return f.osFS.inode(path)
}

// writeNode writes a fixture node into a temp dir and returns its root.
func writeNode(t testing.TB, n sysfixture.Node) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "node")
	if err := sysfixture.Write(root, n); err != nil {
		t.Fatal(err)
	}
	return root
}

func testConfig(root string, collectors ...string) *Config {
	return &Config{
		SysPath: filepath.Join(root, "sys"),
		DevPath: filepath.Join(root, "dev"),
		Timeout: 2 * time.Second,
		Enabled: collectors,
	}
}

func newTestExporter(t testing.TB, cfg *Config) (*Exporter, *testenv.SyncBuffer) {
	t.Helper()
	logs := &testenv.SyncBuffer{}
	e, err := NewExporter(cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, logs
}

// scrape collects once and returns the exposition text.
func scrape(t testing.TB, e *Exporter) string {
	t.Helper()
	return string(e.Text())
}

// series returns the value lines of the exposition that start with name
// and contain every label fragment.
func series(text, name string, fragments ...string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, f := range fragments {
			if !strings.Contains(line, f) {
				ok = false
			}
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}

func mustSeries(t testing.TB, text, name string, fragments ...string) string {
	t.Helper()
	s := series(text, name, fragments...)
	if len(s) != 1 {
		t.Fatalf("want exactly one %s%v, got %d: %v", name, fragments, len(s), s)
	}
	return s[0]
}

func value(t testing.TB, line string) string {
	t.Helper()
	i := strings.LastIndexByte(line, ' ')
	if i < 0 {
		t.Fatalf("no value in %q", line)
	}
	return line[i+1:]
}

func mustRegexp(t testing.TB, expr string) *regexp.Regexp {
	t.Helper()
	re, err := regexp.Compile(expr)
	if err != nil {
		t.Fatal(err)
	}
	return re
}
