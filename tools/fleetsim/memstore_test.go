package fleetsim

import (
	"testing"
	"time"
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
