package probes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/safefile"
	"github.com/roce-exporter/roce_exporter/probes/parse"
)

func TestRestartBackoff(t *testing.T) {
	var b restartBackoff
	var got []time.Duration
	for range 9 {
		got = append(got, b.failed())
	}
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60, 60}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Fatalf("delays %v, want %v seconds", got, want)
		}
	}
	b.reset()
	if d := b.failed(); d != time.Second {
		t.Errorf("after a healthy run the delay is %v, want 1s", d)
	}
}

// TestResponderBacksOffAChildThatExitsAtOnce: a responder command that
// exits 0 at once was restarted 1,511 times in 10 s (issue 12). It is now
// restarted after 1 s, 2 s, 4 s, ... and each restart is logged.
func TestResponderBacksOffAChildThatExitsAtOnce(t *testing.T) {
	dir := t.TempDir()
	command := filepath.Join(dir, "ib_write_bw")
	os.WriteFile(command, []byte("#!/bin/sh\necho \"$*\" >> \""+dir+"/calls\"\nexit 0\n"), 0o755)
	plan := testPlan(t, "0.9", "")
	plan.Probes.IBWriteBW.Command = command
	s := newTestScheduler(t, plan, fakeNode{rate: 400e9, gid: 3})
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	rs := s.newResponder(s.bw, s.localLinks()[0], logger)
	ctx, cancel := context.WithTimeout(context.Background(), 3500*time.Millisecond)
	defer cancel()
	rs.run(ctx)
	// Starts at 0 s, 1 s and 3 s; the next would be at 7 s.
	if runs := calls(t, dir); len(runs) < 2 || len(runs) > 4 {
		t.Errorf("responder started %d times in 3.5 s, want 3", len(runs))
	}
	if n := strings.Count(logs.String(), "probe responder exited without serving a test"); n < 2 {
		t.Errorf("%d restarts logged:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "retry_in=2s") {
		t.Errorf("the delay does not grow:\n%s", logs.String())
	}
}

// A child that prints more than a probe's output limit fails with an error
// that says so, not with output cut at the limit, which would parse as a
// run that stopped early.
func TestOutputOverTheLimitIsAnError(t *testing.T) {
	over := runCommand(context.Background(), 30*time.Second, []string{"sh", "-c", fmt.Sprintf("head -c %d /dev/zero", parse.MaxOutputBytes+1)}, nil, nil)
	if !errors.Is(over.Err, safefile.ErrTooLarge) {
		t.Errorf("output one byte over the limit: err %v, want ErrTooLarge", over.Err)
	}
	at := runCommand(context.Background(), 30*time.Second, []string{"sh", "-c", fmt.Sprintf("head -c %d /dev/zero", parse.MaxOutputBytes)}, nil, nil)
	if at.Err != nil || len(at.Stdout) != parse.MaxOutputBytes {
		t.Errorf("output at the limit: err %v, %d bytes kept", at.Err, len(at.Stdout))
	}
}
