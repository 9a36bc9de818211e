package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// The runbook's jq line must select a finding from the doctor's real JSON,
// and the finding must carry its severity: the alert's label is the same.
func TestRunbookJQSelectsAFinding(t *testing.T) {
	text, err := os.ReadFile("../../alerts/runbooks/RoCEHealthCheckFailed.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`--output json \| jq '([^']+)'`).FindStringSubmatch(string(text))
	if m == nil {
		t.Fatal("RoCEHealthCheckFailed.md has no `doctor --output json | jq '…'` line")
	}
	filter := strings.ReplaceAll(m[1], "<check>", "port_active")
	out, _ := runDoctor(t, append(scenarioArgs("mlx5-degraded"), "--output=json")...)

	// Go reads the path the filter starts with, so the test holds without jq.
	var report map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("doctor JSON: %v", err)
	}
	field, ok := strings.CutPrefix(strings.Fields(filter)[0], ".")
	field, ok2 := strings.CutSuffix(field, "[]")
	if !ok || !ok2 || report[field] == nil {
		t.Fatalf("jq filter %q does not start with a list of the doctor's JSON (keys: %v)", filter, keys(report))
	}

	jq, err := exec.LookPath("jq")
	if err != nil {
		t.Skip("jq not installed; the path was checked above")
	}
	cmd := exec.Command(jq, "-c", filter)
	cmd.Stdin = strings.NewReader(out)
	sel, err := cmd.Output()
	if err != nil {
		t.Fatalf("jq %q: %v", filter, err)
	}
	var f struct{ ID, Subject, Status, Severity string }
	if err := json.Unmarshal(sel, &f); err != nil {
		t.Fatalf("jq %q printed %q: %v", filter, sel, err)
	}
	if f.ID != "port_active" || f.Status != "fail" || f.Severity != "critical" {
		t.Errorf("jq %q selected %+v, want port_active failing, critical", filter, f)
	}
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
