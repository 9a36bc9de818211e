package probes

import (
	"fmt"
	"log/slog"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestBaselineFileSurvivesKill9 kills a process that rewrites the
// baseline file in a tight loop at random moments: every time, the file
// left behind must load as a valid, complete baseline store (the atomic
// rename means readers see the old or the new file, never a torn one).
func TestBaselineFileSurvivesKill9(t *testing.T) {
	if dir := os.Getenv("ROCE_BASELINE_WRITER"); dir != "" {
		writeBaselinesForever(dir)
		return
	}
	dir := t.TempDir()
	logger := slog.New(slog.DiscardHandler)
	for i := 0; i < 25; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBaselineFileSurvivesKill9$")
		cmd.Env = append(os.Environ(), "ROCE_BASELINE_WRITER="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(30+rand.Intn(120)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		b, err := LoadBaselines(dir, logger)
		if err != nil {
			t.Fatalf("kill %d: %v", i, err)
		}
		if matches, _ := filepath.Glob(filepath.Join(dir, baselineFile+".corrupt-*")); len(matches) > 0 {
			data, _ := os.ReadFile(matches[0])
			t.Fatalf("kill %d left a torn baseline file (%d bytes)", i, len(data))
		}
		if _, err := os.Stat(filepath.Join(dir, baselineFile)); err == nil {
			if v, _ := b.Baseline("ib_write_bw|node002|mlx5_0"); v == 0 {
				t.Fatalf("kill %d: the file is missing links it always had", i)
			}
		}
	}
	// Temporary files of killed writers are removed by the next load.
	if leftovers, _ := filepath.Glob(filepath.Join(dir, "."+baselineFile+".tmp-*")); len(leftovers) > 0 {
		t.Errorf("%d temporary files of killed writers survived a load", len(leftovers))
	}
}

func writeBaselinesForever(dir string) {
	b, err := LoadBaselines(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		os.Exit(1)
	}
	// Enough links for each write to take a while: a 256-node cluster
	// with 8 rails.
	for n := 0; ; n++ {
		for peer := 0; peer < 256; peer++ {
			for rail := 0; rail < 8; rail++ {
				key := fmt.Sprintf("ib_write_bw|node%03d|mlx5_%d", peer, rail)
				if peer != 2 || rail != 0 || n > 0 {
					b.links[key] = []float64{49e9, 48e9, 49.5e9}
				}
			}
		}
		b.Record("ib_write_bw|node002|mlx5_0", 49e9+float64(n))
	}
}
