package probes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The last incast of every device reaches the state directory for the
// doctor; a missing file is no incast yet, another node's or a garbage file
// is an error, never a result.
func TestLastIncastForTheDoctor(t *testing.T) {
	dir := standinEnv(t, "bw_ok")
	t.Setenv("STANDIN_SERVER", "serve")
	t.Setenv("STANDIN_SERVE_SECONDS", "0.8")
	s := newTestSchedulerAs(t, incastPlan(t, ""), newFabricNode(dir, "node01", fabricNoECN[0]), "node01")
	state := s.opts.StateDir
	if got, err := LastIncast(state, "node01"); got != nil || err != nil {
		t.Fatalf("before any incast: %v, %v", got, err)
	}
	if _, err := s.RunIncast(context.Background(), "node01", []string{"node02", "node03"}); err != nil {
		t.Fatal(err)
	}
	got, err := LastIncast(state, "node01")
	if err != nil || len(got) != 2 {
		t.Fatalf("after the incast: %d results, %v", len(got), err)
	}
	for _, r := range got {
		if r.Reason != ReasonSwitchNoECN || r.Incast.Role != IncastReceiver || r.Incast.Counters[hwECNMarked] != 0 || len(r.Incast.Unseen) == 0 {
			t.Errorf("saved %+v %+v", r, r.Incast)
		}
	}
	if _, err := LastIncast(state, "node02"); err == nil || !strings.Contains(err.Error(), "node node01's incasts") {
		t.Errorf("another node's file: %v", err)
	}
	os.WriteFile(filepath.Join(state, incastFile), []byte("{not json"), 0o644)
	if got, err := LastIncast(state, "node01"); err == nil || got != nil {
		t.Errorf("garbage: %v, %v", got, err)
	}
}
