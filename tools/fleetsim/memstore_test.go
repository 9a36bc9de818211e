package fleetsim

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
)

// equivalent runs one trial of class twice, the second time changed by
// vary, and fails unless both judged the same alerts at every evaluation.
func equivalent(t *testing.T, cfg Config, class string, seed uint64, vary func(*Config)) (Outcome, Outcome) {
	t.Helper()
	rs := loadShippedRules(t)
	c, ok := ClassNamed(class)
	if !ok {
		t.Fatalf("no class %q", class)
	}
	a, err := NewSim(cfg, rs).Run(c, seed)
	if err != nil {
		t.Fatal(err)
	}
	vary(&cfg)
	b, err := NewSim(cfg, rs).Run(c, seed)
	if err != nil {
		t.Fatal(err)
	}
	if a.Timeline != b.Timeline || a.Named != b.Named || len(a.Wrong) != len(b.Wrong) {
		t.Errorf("%s seed %d: the two runs differ:\n%+v\n%+v", class, seed, a, b)
	}
	return a, b
}

// memStore answers the rules as Prometheus' own TSDB does: the same alerts
// fire at every evaluation of a trial.
func TestMemStoreJudgesAsTheTSDB(t *testing.T) {
	cfg := DefaultConfig(16)
	cfg.Warmup, cfg.Deadline = 10*time.Minute, 50*time.Minute
	for _, class := range []string{"flapping link", "node-name collision"} {
		cfg.Exact = true
		a, _ := equivalent(t, cfg, class, 3, func(c *Config) { c.TSDB = true })
		if a.Evaluations == 0 || a.Replayed != 0 {
			t.Errorf("%s: %d evaluations, %d replayed: want every evaluation run", class, a.Evaluations, a.Replayed)
		}
	}
}

// Replaying an evaluation that cannot change (server.unchanged) judges
// exactly what running it does, and replays most of them.
func TestReplayJudgesAsEvaluating(t *testing.T) {
	cfg := DefaultConfig(16)
	cfg.Warmup, cfg.Deadline = 20*time.Minute, 90*time.Minute
	for _, class := range []string{"flapping link", "node down", "leaf loses half its uplinks"} {
		t.Run(class, func(t *testing.T) {
			t.Parallel()
			fast, exact := equivalent(t, cfg, class, 7, func(c *Config) { c.Exact = true })
			if exact.Replayed != 0 || fast.Evaluations+fast.Replayed != exact.Evaluations {
				t.Errorf("evaluations: exact %d+%d, fast %d+%d", exact.Evaluations, exact.Replayed, fast.Evaluations, fast.Replayed)
			}
			t.Logf("%s: %d of %d evaluations replayed; named after %v, wrong %v", class, fast.Replayed, exact.Evaluations, fast.Named, fast.Wrong)
		})
	}
}

// A replayed evaluation of a group holding judged alerts reads the firing
// alerts of every group at its time, as a run does: another group's alert
// that fired or resolved since is seen (the replay once answered with the
// group's own last answer, and ended the spans of the other group's alerts
// early).
func TestReplaySeesOtherGroupsAlerts(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "alerts.yml"), []byte(`groups:
  - name: changing
    rules:
      - alert: RoCEProbeSuspectNode
        expr: thing > 0
  - name: steady
    rules:
      - alert: RoCEProbeRailUntestable
        expr: steady_thing > 0
`), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, err := LoadRules(dir, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1_800_000_000, 0)
	run := func(exact bool) (seen []string, replayed int) {
		s, err := newServer(rs, start, 15*time.Second, false, exact)
		if err != nil {
			t.Fatal(err)
		}
		defer s.close()
		written := start.Add(-time.Second)
		for {
			i, at := s.nextEval()
			if at.After(start.Add(10 * time.Minute)) {
				return seen, s.Skipped
			}
			// thing is 1 from 2 to 4 minutes, and scraped every second.
			app := s.appender()
			for ; !written.After(at); written = written.Add(time.Second) {
				v := 0.0
				if d := written.Sub(start); d >= 2*time.Minute && d < 4*time.Minute {
					v = 1
				}
				app.Append(0, labels.FromStrings(labels.MetricName, "thing"), 0, written.UnixMilli(), v, nil, nil, promstorage.AOptions{})
				app.Append(0, labels.FromStrings(labels.MetricName, "steady_thing"), 0, written.UnixMilli(), 0, nil, nil, promstorage.AOptions{})
			}
			if err := app.Commit(); err != nil {
				t.Fatal(err)
			}
			firing, judged, err := s.eval(i)
			if err != nil {
				t.Fatal(err)
			}
			if judged {
				seen = append(seen, fmt.Sprintf("%s %s %v", at.Sub(start), s.groups[i].g.Name(), firing))
			}
		}
	}
	fast, replayed := run(false)
	exact, _ := run(true)
	if replayed == 0 {
		t.Fatal("no evaluation replayed: the test tests nothing")
	}
	if !slices.Equal(fast, exact) {
		t.Errorf("replayed run:\n%s\nevaluated run:\n%s", strings.Join(fast, "\n"), strings.Join(exact, "\n"))
	}
	if !slices.ContainsFunc(exact, func(l string) bool {
		return strings.Contains(l, "steady") && strings.Contains(l, "RoCEProbeSuspectNode")
	}) {
		t.Error("the steady group's evaluations never saw the other group's alert: the test tests nothing")
	}
}
