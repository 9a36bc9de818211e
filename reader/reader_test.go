package reader

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/nicstats"
	"github.com/roce-exporter/roce_exporter/node"
)

const fixtures = "../collector/testdata"

func fixtureOptions(scenario string, sources ...string) Options {
	dir := filepath.Join(fixtures, scenario)
	return Options{
		SysPath: filepath.Join(dir, "sys"),
		DevPath: filepath.Join(dir, "dev"),
		Timeout: 2 * time.Second,
		Sources: sources,
	}
}

func newTestReader(t testing.TB, o Options) *Reader {
	t.Helper()
	r, err := New(o, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// One listing per read serves netdev, ethtool and dcb: IPoIB netdevs,
// behind a port or only matched by NetdevInclude, are interfaces for
// netdev but have no ethtool PFC statistics or DCB.
func TestInterfacesListedOnceIPoIBLeftToNetdev(t *testing.T) {
	for _, exclude := range []string{"^$", ".*"} {
		o := fixtureOptions("ib-hdr", node.SourceNetdev)
		o.NetdevInclude = regexp.MustCompile("^(ib|lo)")
		o.DeviceExclude = regexp.MustCompile(exclude)
		r := newTestReader(t, o)
		sc := &scan{Time: time.Now(), r: r}
		targets, err := sc.interfaces()
		if err != nil {
			t.Fatal(err)
		}
		var all []string
		for _, tg := range targets {
			all = append(all, tg.name)
		}
		eth, err := sc.ethernetInterfaces()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(all, " "); got != "ibp129s0 ibp65s0 lo" && got != "ibp65s0 ibp129s0 lo" {
			t.Errorf("exclude %q: interfaces %q", exclude, got)
		}
		if got := strings.Join(eth, " "); got != "lo" {
			t.Errorf("exclude %q: ethernet interfaces %q, want lo only", exclude, got)
		}
		if again, _ := sc.interfaces(); &again[0] != &targets[0] {
			t.Errorf("exclude %q: the listing was made twice in one read", exclude)
		}
	}
}

// blockingEthtool is an ethtool source whose kernel call never returns, as
// when RTNL is held by a stuck driver.
type blockingEthtool struct{ release chan struct{} }

func (b *blockingEthtool) stats(string) (nicstats.Stats, error) {
	<-b.release
	return nicstats.Stats{}, syscall.EOPNOTSUPP
}
func (b *blockingEthtool) pause(string) (*node.GlobalPause, error) { return nil, syscall.EOPNOTSUPP }
func (b *blockingEthtool) close() error                            { return nil }

// TestHungEthtoolCallHitsTheTimeout reads while the ethtool call hangs: the
// read returns at the timeout with ethtool timed out and the other sources
// read; the next read skips the stuck source at once; once the call returns
// the source is read again.
func TestHungEthtoolCallHitsTheTimeout(t *testing.T) {
	o := fixtureOptions("mlx5-8x400g-healthy", node.SourceRDMA, node.SourceEthtool, node.SourceDCB)
	o.ReplayDir = filepath.Join(fixtures, "mlx5-8x400g-healthy", "replay")
	o.Timeout = 400 * time.Millisecond
	r := newTestReader(t, o)
	block := &blockingEthtool{release: make(chan struct{})}
	r.byName[node.SourceEthtool].src.(*ethtoolSource).src = block

	begin := time.Now()
	res := r.Read()
	if took := time.Since(begin); took > time.Second {
		t.Errorf("read took %v; the timeout is 400ms", took)
	}
	for _, sr := range res.Sources {
		switch {
		case sr.Name == node.SourceEthtool && !sr.TimedOut:
			t.Errorf("hung ethtool: %+v", sr)
		case sr.Name != node.SourceEthtool && !sr.OK():
			t.Errorf("%s: %+v while ethtool hangs", sr.Name, sr)
		}
	}
	if st, ran := res.Snapshot.Sources[node.SourceEthtool]; !ran || st != node.SourceFailed {
		t.Errorf("snapshot says ethtool %q (ran %v), want failed", st, ran)
	}
	if len(res.Snapshot.Devices) != 8 || len(res.Snapshot.DCB) != 8 {
		t.Errorf("%d devices, %d DCB states while ethtool hangs", len(res.Snapshot.Devices), len(res.Snapshot.DCB))
	}

	begin = time.Now()
	res = r.Read()
	if took := time.Since(begin); took > 200*time.Millisecond {
		t.Errorf("second read waited %v on the stuck source", took)
	}
	if sr := res.Sources[1]; sr.Name != node.SourceEthtool || !sr.Stuck {
		t.Errorf("stuck ethtool not skipped: %+v", sr)
	}

	close(block.release)
	deadline := time.Now().Add(2 * time.Second)
	for {
		sr := r.Read().Sources[1]
		if !sr.Stuck && !sr.TimedOut {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("source not read again after the call returned")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A replay capture that is a FIFO must not block a read, and one too big
// to be a real capture must not be read into memory: both are skipped and
// counted, and the other interfaces are read.
func TestHostileReplayFilesAreSkipped(t *testing.T) {
	src := filepath.Join(fixtures, "mlx5-8x400g-healthy")
	dir := t.TempDir()
	entries, err := os.ReadDir(filepath.Join(src, "replay"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, "replay", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644)
	}
	os.Remove(filepath.Join(dir, "ens1f0np0.txt"))
	if err := syscall.Mkfifo(filepath.Join(dir, "ens1f0np0.txt"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "ens2f0np0.txt")
	if err := os.Truncate(big, maxReplayBytes+1); err != nil {
		t.Fatal(err)
	}
	o := fixtureOptions("mlx5-8x400g-healthy", node.SourceEthtool)
	o.ReplayDir = dir
	r := newTestReader(t, o)
	begin := time.Now()
	res := r.Read()
	if took := time.Since(begin); took > time.Second {
		t.Errorf("read took %v", took)
	}
	if sr := res.Sources[0]; !sr.OK() {
		t.Errorf("ethtool source: %+v", sr)
	}
	snap := res.Snapshot
	if snap.Ethtool["ens1f0np0"] != nil || snap.Ethtool["ens2f0np0"] != nil {
		t.Error("a FIFO or an oversized capture was read")
	}
	if snap.Ethtool["ens3f0np0"] == nil {
		t.Error("the other interfaces were not read")
	}
	if n := r.ReadErrors(node.SourceEthtool); n != 2 {
		t.Errorf("%d read errors, want the 2 hostile captures", n)
	}
}

// The table of sources is what the Reader, the --collector flags' help and
// the source list are made from: every entry has help, is listed in
// order, and makes a source of its own name.
func TestSourceTable(t *testing.T) {
	names := SourceNames()
	if len(names) < 10 || !slices.IsSorted(names) {
		t.Fatalf("SourceNames() = %v", names)
	}
	for _, n := range names {
		if SourceHelp(n) == "" {
			t.Errorf("source %s has no help", n)
		}
	}
	o := fixtureOptions("mlx5-8x400g-healthy", names...)
	r := newTestReader(t, o)
	if !slices.Equal(r.Sources(), names) {
		t.Errorf("Reader sources %v, want %v", r.Sources(), names)
	}
	res := r.Read()
	for _, s := range res.Sources {
		if _, ok := res.Snapshot.Sources[s.Name]; !ok {
			t.Errorf("source %s left no status", s.Name)
		}
	}
	o.Sources = []string{"nosuch"}
	if _, err := New(o, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), `unknown source "nosuch"`) {
		t.Errorf("New with an unknown source: %v", err)
	}
	if SourceHelp("nosuch") != "" {
		t.Error("help for an unknown source")
	}
}
