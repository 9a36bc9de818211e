package alerts

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var (
	readmeAlertCountRe     = regexp.MustCompile("\\| \\[`alerts\\.yml`\\]\\(alerts\\.yml\\) \\| (\\d+) alerts \\((\\d+) rules[^)]*\\) in (\\d+) groups \\|")
	readmeRecordingCountRe = regexp.MustCompile("\\| \\[`recording_rules\\.yml`\\]\\(recording_rules\\.yml\\) \\| (\\d+) recording rules")
	rootReadmeAlertCountRe = regexp.MustCompile("`alerts/alerts\\.yml` \\((\\d+) alerts\\)")
)

// The counts the READMEs state are the files' own: one statement each, no
// stale second row.
func TestREADMERuleCounts(t *testing.T) {
	rules := alertingRules(t)
	alerts, groups := len(alertNames(rules)), len(loadRules(t, alertsFile).Groups)
	recording := 0
	for _, g := range loadRules(t, recordingFile).Groups {
		recording += len(g.Rules)
	}
	readme := mustRead(t, "README.md")
	counts := readmeAlertCountRe.FindAllStringSubmatch(readme, -1)
	if len(counts) != 1 {
		t.Fatalf("README.md: want one row stating the alerts.yml counts, found %d", len(counts))
	}
	for i, want := range []int{alerts, len(rules), groups} {
		if got, _ := strconv.Atoi(counts[0][i+1]); got != want {
			t.Errorf("README.md: %q states %d where %s has %d", counts[0][0], got, alertsFile, want)
		}
	}
	rec := readmeRecordingCountRe.FindAllStringSubmatch(readme, -1)
	if len(rec) != 1 {
		t.Fatalf("README.md: want one row stating the recording rule count, found %d", len(rec))
	}
	if got, _ := strconv.Atoi(rec[0][1]); got != recording {
		t.Errorf("README.md: states %d recording rules, %s has %d", got, recordingFile, recording)
	}
	for _, m := range rootReadmeAlertCountRe.FindAllStringSubmatch(mustRead(t, "../README.md"), -1) {
		if got, _ := strconv.Atoi(m[1]); got != alerts {
			t.Errorf("../README.md: %q, %s has %d alerts", m[0], alertsFile, alerts)
		}
	}
}

// Every alert's severity is argued in README.md's "Severity and why" table,
// with the severities its rules set (RoCEHealthCheckFailed takes the
// check's).
func TestREADMESeverityArgued(t *testing.T) {
	readme := mustRead(t, "README.md")
	start := strings.Index(readme, "\n## Severity and why\n")
	if start < 0 {
		t.Fatal(`README.md: no "## Severity and why" section`)
	}
	section := readme[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	argued := map[string][]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), alertPrefix) {
			continue
		}
		if strings.TrimSpace(cells[3]) == "" {
			t.Errorf("README.md: severity of %s not argued", strings.TrimSpace(cells[1]))
		}
		var sevs []string
		for _, s := range severities {
			if strings.Contains(cells[2], s) {
				sevs = append(sevs, s)
			}
		}
		for _, name := range strings.Split(cells[1], ",") {
			name = strings.TrimSpace(name)
			if _, dup := argued[name]; dup {
				t.Errorf("README.md: %s argued twice", name)
			}
			argued[name] = sevs
		}
	}
	want := map[string][]string{}
	for _, r := range alertingRules(t) {
		if sev := r.Labels["severity"]; sev != "" && !slices.Contains(want[r.Alert], sev) {
			want[r.Alert] = append(want[r.Alert], sev)
		}
	}
	for name, sevs := range want {
		got, ok := argued[name]
		switch {
		case !ok:
			t.Errorf("README.md: no severity argument for %s", name)
		case name == "RoCEHealthCheckFailed":
		case !sameSet(got, sevs):
			t.Errorf("README.md: %s argued as %v, its rules set %v", name, got, sevs)
		}
	}
	for name := range argued {
		if _, ok := want[name]; !ok {
			t.Errorf("README.md: severity argued for %s, which is no alert", name)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
