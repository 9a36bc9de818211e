package fleetsim

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// LoadRules evaluates the rules a judged alert depends on, through
// recording rules in other groups, and no other; it stores only what they
// read, and knows which rules read the clock.
func TestLoadRulesFollowsTheDependencies(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("alerts.yml", `groups:
  - name: judged
    rules:
      - alert: RoCEProbeSuspectThing
        expr: thing:count > 1 and on () vector(time()) > 0
  - name: unrelated
    rules:
      - alert: SomethingElse
        expr: other_metric > 1
`)
	write("recording.yml", `groups:
  - name: things
    rules:
      - record: thing:count
        expr: count(increase(thing_total[3h]) > 0) + count(raw_thing)
      - record: thing:unread
        expr: sum(unread_thing)
  - name: unused
    rules:
      - record: other:sum
        expr: sum(other_metric)
`)
	rs, err := LoadRules(dir, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "alerts.yml") + ";judged", filepath.Join(dir, "recording.yml") + ";things"}
	if !slices.Equal(rs.Groups, want) {
		t.Errorf("evaluated %v, want %v (skipped %v)", rs.Groups, want, rs.Skipped)
	}
	if rs.Rules != 2 || rs.Left != 3 {
		t.Errorf("%d rules evaluated, %d left out; want 2 and 3", rs.Rules, rs.Left)
	}
	for name, stored := range map[string]bool{"thing_total": true, "raw_thing": true, "thing:count": true, "up": true, "other_metric": false, "unread_thing": false} {
		if rs.Stores(name) != stored {
			t.Errorf("stores %s: %v, want %v", name, rs.Stores(name), stored)
		}
	}
	if !slices.Equal(rs.Judged, []string{"RoCEProbeSuspectThing"}) {
		t.Errorf("judged %v", rs.Judged)
	}
	judged, things := rs.reads[want[0]], rs.reads[want[1]]
	if !judged.clock || things.clock {
		t.Errorf("clock: judged %v (reads time()), things %v (increase only)", judged.clock, things.clock)
	}
	if things.window["thing_total"] != (3*time.Hour).Milliseconds() || things.window["raw_thing"] != 0 {
		t.Errorf("windows %v", things.window)
	}

	write("alerts.yml", "groups:\n  - name: none\n    rules:\n      - alert: Other\n        expr: vector(1)\n")
	if _, err := LoadRules(dir, 15*time.Second); err == nil {
		t.Error("rules without a judged alert were accepted")
	}
	write("alerts.yml", "groups: [{name: broken, rules: [{alert: RoCEProbeSuspectX, expr: 'sum(('}]}]\n")
	if _, err := LoadRules(dir, 15*time.Second); err == nil {
		t.Error("a rule that does not parse was accepted")
	}
}
