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
	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/pipeline"
	"github.com/roce-exporter/roce_exporter/reader"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// faultFS wraps the real filesystem and injects the failures real sysfs
// produces: EINVAL on empty GID slots, EIO from firmware, reads that hang.
type faultFS struct {
	reader.OSFS
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
	reader.AttrFile
	path string
	fs   *faultFS
}

func (f *faultFS) OpenAttr(path string) (reader.AttrFile, error) {
	if err, _ := f.match(path); err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	a, err := f.OSFS.OpenAttr(path)
	if err != nil {
		return nil, err
	}
	return &faultFile{AttrFile: a, path: path, fs: f}, nil
}

func (ff *faultFile) PreadAt0(buf []byte) (int, error) {
	err, hang := ff.fs.match(ff.path)
	if hang != nil {
		<-hang
	}
	if err != nil {
		return 0, err
	}
	return ff.AttrFile.PreadAt0(buf)
}

func (f *faultFS) ReadDirNames(path string) ([]string, error) {
	if err, hang := f.match(path); err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	} else if hang != nil {
		<-hang
	}
	return f.OSFS.ReadDirNames(path)
}

func (f *faultFS) Readlink(path string) (string, error) {
	if err, _ := f.match(path); err != nil {
		return "", &os.PathError{Op: "readlink", Path: path, Err: err}
	}
	return f.OSFS.Readlink(path)
}

func (f *faultFS) Realpath(path string) (string, error) {
	if err, _ := f.match(path); err != nil {
		return "", &os.PathError{Op: "realpath", Path: path, Err: err}
	}
	return f.OSFS.Realpath(path)
}

func (f *faultFS) Inode(path string) (uint64, error) {
	if err, _ := f.match(path); err != nil {
		return 0, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return f.OSFS.Inode(path)
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

// setup is what a test exporter is made of: the collectors' options and
// the reader's.
type setup struct {
	o  Options
	ro reader.Options
}

func testConfig(root string, collectors ...string) *setup {
	return &setup{
		o: Options{Enabled: collectors},
		ro: reader.Options{
			SysPath: filepath.Join(root, "sys"),
			DevPath: filepath.Join(root, "dev"),
			Timeout: 2 * time.Second,
		},
	}
}

func newTestExporter(t testing.TB, cfg *setup) (*Exporter, *testenv.SyncBuffer) {
	t.Helper()
	logs := &testenv.SyncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ro := cfg.ro
	ro.Sources = Sources(cfg.o.Enabled)
	rd, err := reader.New(ro, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	p, err := pipeline.New(cfg.o.PipelineOptions(rd))
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewExporter(cfg.o, p, logger)
	if err != nil {
		t.Fatal(err)
	}
	return e, logs
}

// snapshot collects once and returns the snapshot the metrics came from.
func snapshot(e *Exporter) *node.Snapshot {
	c := e.collect()
	defer e.release(c)
	return c.col.Snapshot
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

// touches is how often paths containing substr were opened or read.
func (f *faultFS) touches(substr string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for p, c := range f.touched {
		if strings.Contains(p, substr) {
			n += c
		}
	}
	return n
}

// wantValues checks the value of one series per metric, selected by the
// label fragments.
func wantValues(t testing.TB, text string, want map[string]string, fragments ...string) {
	t.Helper()
	for metric, w := range want {
		if v := value(t, mustSeries(t, text, metric, fragments...)); v != w {
			t.Errorf("%s%v = %s, want %s", metric, fragments, v, w)
		}
	}
}
