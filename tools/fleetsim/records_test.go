package fleetsim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A stopped run keeps its trials, runs of other seeds merge, and trials of
// another setup or a torn last line never reach the table.
func TestRecordsRebuildTheTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results", "sim.jsonl")
	w, err := OpenRecords(path)
	if err != nil {
		t.Fatal(err)
	}
	add := func(setup, class string, nodes int, seed uint64, named time.Duration) {
		t.Helper()
		o := Outcome{Class: class, Nodes: nodes, Seed: seed, Named: named, Firing: map[string][]Span{"X": {{From: time.Minute, To: 2 * time.Minute}}}}
		if err := w.Add(Record{Setup: setup, Class: class, Nodes: nodes, Rails: 8, Deadline: time.Hour, Outcome: o}); err != nil {
			t.Fatal(err)
		}
	}
	add("a", "bad node", 1024, 2, 3*time.Minute)
	add("a", "bad NIC", 128, 1, time.Minute)
	add("a", "bad NIC", 128, 2, -1)
	add("a", "bad NIC", 128, 1, 9*time.Minute) // the same seed again: counted once
	add("b", "bad NIC", 128, 3, time.Minute)   // another setup
	w.Close()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"setup":"a","class":"bad NIC","nodes":128,"outco`)
	f.Close()

	recs, torn, err := ReadRecords(path, filepath.Join(t.TempDir(), "absent.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 5 || torn != 1 {
		t.Fatalf("read %d records, %d torn; want 5 and 1", len(recs), torn)
	}
	rows, err := Rows(recs, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Nodes != 128 || rows[0].Class.Name != "bad NIC" || rows[1].Nodes != 1024 {
		t.Fatalf("rows %+v", rows)
	}
	if n := len(rows[0].Outcomes); n != 2 || rows[0].Outcomes[0].Named != time.Minute || rows[0].Missed() != 1 {
		t.Fatalf("bad NIC at 128: %d outcomes %+v, missed %d", n, rows[0].Outcomes, rows[0].Missed())
	}
	if got := rows[0].Outcomes[0].Firing["X"]; len(got) != 1 || got[0].To != 2*time.Minute {
		t.Fatalf("firing spans did not survive the record: %v", got)
	}
	if _, err := Rows([]Record{{Setup: "a", Class: "no such class", Nodes: 8}}, "a"); err == nil {
		t.Fatal("a record of an unknown class was accepted")
	}
}

// The setup changes with the evaluated rules and the plan, not with the
// fleet size or a rule that cannot change a judged alert.
func TestSetupNamesRulesAndPlan(t *testing.T) {
	shipped, err := os.ReadFile("../../alerts/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rules := filepath.Join(dir, "alerts.yml")
	load := func(text string) *RuleSet {
		t.Helper()
		if err := os.WriteFile(rules, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		rs, err := LoadRules(dir, 15*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	rs := load(string(shipped))
	base, err := Setup(rs, DefaultConfig(128), "")
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := Setup(rs, DefaultConfig(1024), ""); s != base {
		t.Error("the fleet size changed the setup")
	}
	cfg := DefaultConfig(128)
	cfg.Share = 0.1
	if s, _ := Setup(rs, cfg, ""); s == base {
		t.Error("another max_fabric_share kept the setup")
	}
	// RoCEPFCPauseStorm is not evaluated; RoCEProbeSuspectNICPort is judged.
	other := strings.Replace(string(shipped), "- alert: RoCEPFCPauseStorm\n        expr: |\n", "- alert: RoCEPFCPauseStorm\n        expr: |\n          # changed\n", 1)
	if other == string(shipped) {
		t.Fatal("RoCEPFCPauseStorm's rule not found")
	}
	if s, _ := Setup(load(other), DefaultConfig(128), ""); s != base {
		t.Error("a rule that is not evaluated changed the setup")
	}
	judged := strings.Replace(string(shipped), "- alert: RoCEProbeSuspectNICPort\n", "- alert: RoCEProbeSuspectNICPort\n        keep_firing_for: 1m\n", 1)
	if judged == string(shipped) {
		t.Fatal("RoCEProbeSuspectNICPort's rule not found")
	}
	if s, _ := Setup(load(judged), DefaultConfig(128), ""); s == base {
		t.Error("a judged alert's change kept the setup")
	}
}
