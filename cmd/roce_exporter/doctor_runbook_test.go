package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/health"
	"github.com/roce-exporter/roce_exporter/internal/testenv"
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

	jq := testenv.LookPath(t, "jq", "jq")
	if jq == "" {
		return
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

// A switch names itself in LLDP: an escape sequence in its system name
// (retitle the terminal, clear the screen) never reaches the terminal (the
// lldpcli reader drops such a neighbour; the printers strip what is left).
func TestDoctorStripsEscapesFromLLDP(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(fixtureDir, "mlx5-degraded"))); err != nil {
		t.Fatal(err)
	}
	lldp := filepath.Join(dir, "replay", "lldpcli-neighbors.json")
	data, err := os.ReadFile(lldp)
	if err != nil {
		t.Fatal(err)
	}
	hostile := strings.Replace(string(data), `"value": "leaf-1"`, `"value": "leaf\u001b]0;PWNED1\u0007-1\u001b[2J"`, 1)
	if hostile == string(data) {
		t.Fatal("fixture has no leaf-1 system name")
	}
	if err := os.WriteFile(lldp, []byte(hostile), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--path.sysfs=" + filepath.Join(dir, "sys"), "--path.dev=" + filepath.Join(dir, "dev"),
		"--collector.ethtool.replay-dir=" + filepath.Join(dir, "replay")}
	for _, format := range []string{"text", "json"} {
		out, _ := runDoctor(t, append(args, "--output="+format)...)
		if strings.ContainsAny(out, "\x1b\x07") || strings.Contains(out, "PWNED1") {
			t.Errorf("%s: the switch's escape sequence reaches the terminal:\n%s", format, grepLines(out, "leaf"))
		}
		if !strings.Contains(out, "leaf-2") {
			t.Errorf("%s: the other switches are gone:\n%s", format, out)
		}
	}
}

// An interface name is whatever was given to the kernel: one holding an
// escape sequence prints as text in the doctor's subject column.
func TestDoctorPrintsNamesAsText(t *testing.T) {
	name := "e\x1b]0;PWNED1\x07th0"
	r := doctorReport{Node: "node01", Samples: 1, Summary: map[string]int{"fail": 1},
		Checks: printableFindings([]health.Finding{{ID: "port_active", Subject: name, Status: health.StatusFail,
			Message: "down", Fix: "ip link set dev $'e\\x1b]0;PWNED1\\x07th0' up"}})}
	var b strings.Builder
	printDoctor(&b, r, textOptions{Width: 100})
	if strings.ContainsAny(b.String(), "\x1b\x07") || !strings.Contains(b.String(), `e\x1b]0;PWNED1\x07th0`) {
		t.Errorf("subject not printed as text:\n%q", b.String())
	}
}
