package alerts

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/health"
)

// TestREADMESeverityTableMatchesChecks keeps alerts/README.md's table of
// doctor checks by severity equal to the checks themselves: one row per
// check, in the registry's order, with the check's severity.
func TestREADMESeverityTableMatchesChecks(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := severityRows(string(data))
	if err != nil {
		t.Fatal(err)
	}
	checks := health.Checks()
	if len(rows) != len(checks) {
		t.Errorf("README.md lists %d checks by severity, health has %d", len(rows), len(checks))
	}
	for i, c := range checks {
		if i >= len(rows) {
			t.Errorf("README.md: no severity row for %s", c.ID)
			continue
		}
		if rows[i].id != c.ID || rows[i].severity != string(c.Severity) {
			t.Errorf("README.md row %d: %s %s, want %s %s", i+1, rows[i].id, rows[i].severity, c.ID, c.Severity)
		}
		if strings.TrimSpace(rows[i].why) == "" {
			t.Errorf("README.md: %s has no reason for its severity", c.ID)
		}
	}
}

type severityRow struct{ id, severity, why string }

var severityRowRe = regexp.MustCompile("^\\| `([a-z0-9_]+)` \\| ([a-z]+) \\| (.*) \\|$")

func severityRows(readme string) ([]severityRow, error) {
	_, after, ok := strings.Cut(readme, "<!-- doctor-severity:begin -->")
	if !ok {
		return nil, errMarker
	}
	body, _, ok := strings.Cut(after, "<!-- doctor-severity:end -->")
	if !ok {
		return nil, errMarker
	}
	var rows []severityRow
	for _, line := range strings.Split(body, "\n") {
		if m := severityRowRe.FindStringSubmatch(line); m != nil {
			rows = append(rows, severityRow{m[1], m[2], m[3]})
		}
	}
	return rows, nil
}

var errMarker = errors.New("README.md: no <!-- doctor-severity:begin/end --> markers")

// TestSeverityTableParsesDrift: the comparison above sees a changed
// severity and a missing row.
func TestSeverityTableParsesDrift(t *testing.T) {
	rows, err := severityRows("<!-- doctor-severity:begin -->\n| `port_active` | warning | x |\n<!-- doctor-severity:end -->")
	if err != nil || len(rows) != 1 || rows[0].severity != "warning" {
		t.Fatalf("rows %v, err %v", rows, err)
	}
	if _, err := severityRows("no table"); err == nil {
		t.Error("a README without the markers parsed")
	}
}
