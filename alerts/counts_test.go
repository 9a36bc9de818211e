package alerts

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestREADMECountsMatchRules: the counts of alerts, rules, groups and
// recording rules that alerts/README.md and the top README state are the
// files' own, so a rule added or removed cannot leave them behind.
func TestREADMECountsMatchRules(t *testing.T) {
	alerts := loadRules(t, alertsFile)
	names := map[string]bool{}
	rules := 0
	for _, g := range alerts.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				names[r.Alert] = true
				rules++
			}
		}
	}
	records := 0
	for _, g := range loadRules(t, recordingFile).Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				records++
			}
		}
	}
	for file, want := range map[string][]string{
		"README.md": {
			fmt.Sprintf("| %d alerts (%d rules: some alerts have a warning and a critical rule) in %d groups |", len(names), rules, len(alerts.Groups)),
			fmt.Sprintf("| %d recording rules (", records),
		},
		"../README.md": {fmt.Sprintf("`alerts/alerts.yml` (%d alerts)", len(names))},
	} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(string(data), w) {
				t.Errorf("%s does not say %q", file, w)
			}
		}
	}
}
