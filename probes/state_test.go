package probes

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A state directory that cannot be created (a file stands where it should
// be, as a read-only root stands where /var/lib would be) does not stop the
// probes: the scheduler starts, keeps its baselines in memory, says so in
// the log, and the store reports it for the metric and the page.
func TestStateDirThatCannotBeCreatedIsNotFatal(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(file, "state")
	var logs bytes.Buffer
	s, err := New(Options{Plan: testPlan(t, "0.9", ""), Self: "node01", Node: fakeNode{rate: 400e9, gid: 3}, StateDir: dir,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("the scheduler refused to start: %v", err)
	}
	got, stateErr := s.Store().StateDir()
	if got != dir || !errors.Is(stateErr, syscall.ENOTDIR) {
		t.Errorf("StateDir() = %q, %v; want %q, not a directory", got, stateErr, dir)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "probe state directory cannot be written") || !strings.Contains(logs.String(), dir) {
		t.Errorf("not logged loudly:\n%s", logs.String())
	}
	// The baselines still work, in memory.
	for range minBaselineSamples {
		if err := s.base.Record("ib_write_bw|node02|mlx5_0", 49e9); err != nil {
			t.Fatalf("in-memory record: %v", err)
		}
	}
	if v, ok := s.base.Baseline("ib_write_bw|node02|mlx5_0"); !ok || v != 49e9 {
		t.Errorf("baseline %v %v", v, ok)
	}
}

// A directory that becomes unwritable after start (here replaced by a
// file) shows in StateDir from the first failed save, and clears once a
// save works again.
func TestStateDirSaveFailureIsReported(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s, err := New(Options{Plan: testPlan(t, "0.9", ""), Self: "node01", Node: fakeNode{rate: 400e9, gid: 3}, StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store().StateDir(); err != nil {
		t.Fatalf("a writable directory reported: %v", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.base.Record("k", 1e9); err == nil {
		t.Fatal("a save into a file succeeded")
	}
	if _, err := s.Store().StateDir(); err == nil {
		t.Error("a failed save is not reported")
	}
	os.Remove(dir)
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := s.base.Record("k", 1e9); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store().StateDir(); err != nil {
		t.Errorf("still reported after a good save: %v", err)
	}
}
