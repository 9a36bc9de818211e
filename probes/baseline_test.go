package probes

import (
	"bytes"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// TestHostileBaselineFileIsSetAside: what issue 12 found at the baseline
// path. A FIFO hung the start (open waited for a writer, deaf to SIGTERM),
// a symlink to /dev/zero grew the process to 24 GB, a directory and an
// oversized file stopped the start. Each is now moved aside with a log
// line, at once, and the store starts empty and can save again.
func TestHostileBaselineFileIsSetAside(t *testing.T) {
	for name, plant := range map[string]func(t *testing.T, path string){
		"fifo": func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
			// Should the load block anyway, a writer ends it so the test
			// fails on the timeout instead of hanging.
			t.Cleanup(func() {
				if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
			})
		},
		"symlink to /dev/zero": func(t *testing.T, path string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		},
		"directory": func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		},
		"too large": func(t *testing.T, path string) {
			// Valid JSON, padded past the limit: without the limit it
			// would be read whole and used.
			doc := []byte(`{"version":1,"links":{"a":[1,2,3]}}`)
			pad := bytes.Repeat([]byte(" "), maxBaselineBytes+1-len(doc))
			if err := os.WriteFile(path, append(doc, pad...), 0o600); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, baselineFile)
			plant(t, path)
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, nil))
			type loaded struct {
				b   *Baselines
				err error
			}
			done := make(chan loaded, 1)
			go func() {
				b, err := LoadBaselines(dir, logger)
				done <- loaded{b, err}
			}()
			var l loaded
			select {
			case l = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("LoadBaselines still blocked after 5s")
			}
			if l.err != nil {
				t.Fatalf("must not be fatal: %v", l.err)
			}
			aside, _ := filepath.Glob(path + ".corrupt-*")
			if len(aside) != 1 {
				t.Fatalf("not moved aside: %v", aside)
			}
			if !strings.Contains(logs.String(), "moved aside") || !strings.Contains(logs.String(), aside[0]) {
				t.Errorf("no log line names where it went:\n%s", logs.String())
			}
			if err := l.b.Record("ib_write_bw|node02|mlx5_0", 49e9); err != nil {
				t.Fatalf("cannot save after setting it aside: %v", err)
			}
			if st, err := os.Lstat(path); err != nil || !st.Mode().IsRegular() {
				t.Errorf("after a save the baseline file is %v, %v", st, err)
			}
		})
	}
}

// TestUnreadableBaselineFileIsNotFatal: a baseline file the exporter may
// not read (left by a run as another user) starts empty, stays in place
// for the operator, and is replaced by the next save. As root the test
// runs itself again without CAP_DAC_OVERRIDE, which would read anything.
func TestUnreadableBaselineFileIsNotFatal(t *testing.T) {
	dir := os.Getenv("ROCE_UNREADABLE_BASELINE_DIR")
	if dir == "" {
		dir = t.TempDir()
		os.WriteFile(filepath.Join(dir, baselineFile), []byte(`{"version":1,"links":{"a":[1,2,3]}}`), 0)
		if os.Geteuid() == 0 {
			setpriv := testenv.LookPath(t, "util-linux", "setpriv")
			cmd := exec.Command(setpriv, "--bounding-set=-dac_override,-dac_read_search", os.Args[0], "-test.run=^TestUnreadableBaselineFileIsNotFatal$", "-test.v")
			cmd.Env = append(os.Environ(), "ROCE_UNREADABLE_BASELINE_DIR="+dir)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "--- PASS") {
				t.Fatalf("without CAP_DAC_OVERRIDE: %v\n%s", err, out)
			}
			return
		}
	}
	var logs bytes.Buffer
	b, err := LoadBaselines(dir, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatalf("must not be fatal: %v", err)
	}
	if !strings.Contains(logs.String(), "permission denied") {
		t.Errorf("not logged:\n%s", logs.String())
	}
	if _, ok := b.Baseline("a"); ok {
		t.Error("unreadable data was used")
	}
	if err := b.Record("ib_write_bw|node02|mlx5_0", 49e9); err != nil {
		t.Errorf("cannot save: %v", err)
	}
}
