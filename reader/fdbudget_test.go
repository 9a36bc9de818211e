package reader

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
	"github.com/roce-exporter/roce_exporter/node"
)

// setFileBudget replaces the process-wide budget for one test.
func setFileBudget(t *testing.T, limit int64) {
	t.Helper()
	openFiles.init()
	old := openFiles.limit
	openFiles.limit = limit
	t.Cleanup(func() { openFiles.limit = old })
}

func TestBudgetLeavesHeadroom(t *testing.T) {
	for limit, want := range map[uint64]int64{1024: 768, 20000: 15000, 256: 0, 100: 0, 1 << 20: 786432} {
		if got := budgetFor(limit); got != want {
			t.Errorf("budgetFor(%d) = %d, want %d", limit, got, want)
		}
	}
}

// A node whose files do not all fit the budget reads the same values: the
// files beyond it are opened, read and closed, never skipped.
func TestOverTheFileBudgetReadsTheSame(t *testing.T) {
	root := filepath.Join(t.TempDir(), "node")
	if err := sysfixture.WriteScaleNode(root, 8); err != nil {
		t.Fatal(err)
	}
	opts := Options{SysPath: filepath.Join(root, "sys"), DevPath: filepath.Join(root, "dev"),
		Sources: []string{node.SourceRDMA, node.SourceNetdev, node.SourcePCIe}}

	read := func(limit int64) (string, int64, uint64) {
		setFileBudget(t, limit)
		r := newTestReader(t, opts)
		var snap *node.Snapshot
		for i := 0; i < 3; i++ {
			snap = r.Read().Snapshot
		}
		_, open := FileBudget()
		errs := r.ReadErrors(node.SourceRDMA) + r.ReadErrors(node.SourceNetdev) + r.ReadErrors(node.SourcePCIe)
		snap.Time = time.Time{} // times differ; the rest must not
		b, _ := json.Marshal(snap)
		r.Close()
		return string(b), open, errs
	}
	want, openAll, _ := read(1 << 30)
	if openAll < 100 {
		t.Fatalf("only %d files kept open with no limit; the fixture is too small to test the budget", openAll)
	}
	got, open, errs := read(40)
	if open > 40 {
		t.Errorf("%d files kept open over a budget of 40", open)
	}
	if errs != 0 {
		t.Errorf("%d read errors over the budget; files beyond it must be read, not skipped", errs)
	}
	if got != want {
		t.Error("the snapshot read over the budget differs from the one read within it")
	}
	if _, open := FileBudget(); open != 0 {
		t.Errorf("%d files still counted open after Close", open)
	}
}
