package sysfixture

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the README's table of sample nodes")

const (
	readmePath     = "../../README.md"
	tableBegin     = "<!-- sample nodes: generated from internal/sysfixture/about.go -->\n"
	tableEnd       = "<!-- end of sample nodes -->\n"
	fixturesOnDisk = "../../collector/testdata"
)

func TestEveryScenarioIsDescribed(t *testing.T) {
	names := ScenarioNames()
	for _, name := range names {
		a, ok := Abouts[name]
		if !ok {
			t.Errorf("scenario %s has no About in about.go: say what it models and what the doctor says on it", name)
			continue
		}
		if a.Models == "" || !slices.Contains([]string{"failing", "warning", "healthy", "nothing_to_check"}, a.State) {
			t.Errorf("%s: About %+v", name, a)
		}
		if (a.State == "failing" || a.State == "warning") != (len(a.Findings) > 0) {
			t.Errorf("%s: findings %v in state %s: a failing or warning node names what fails, a healthy one nothing", name, a.Findings, a.State)
		}
		if a.Plan != "" {
			if _, err := os.Stat(filepath.Join("../..", a.Plan)); err != nil {
				t.Errorf("%s: plan %v", name, err)
			}
		}
	}
	for name := range Abouts {
		if _, ok := Scenarios[name]; !ok {
			t.Errorf("About of %s, which is no scenario", name)
		}
	}
	// The committed trees are the scenarios, no more: --scenario lists
	// what is on disk.
	entries, err := os.ReadDir(fixturesOnDisk)
	if err != nil {
		t.Fatal(err)
	}
	var onDisk []string
	for _, e := range entries {
		if e.IsDir() {
			onDisk = append(onDisk, e.Name())
		}
	}
	if !slices.Equal(onDisk, names) {
		t.Errorf("collector/testdata holds %v, the scenarios are %v (make fixtures)", onDisk, names)
	}
}

// scenarioTable is the README's table of sample nodes.
func scenarioTable() string {
	var b strings.Builder
	b.WriteString("| scenario | what it models | the doctor says |\n|---|---|---|\n")
	for _, name := range ScenarioNames() {
		a := Abouts[name]
		says := map[string]string{"failing": "FAILING", "warning": "WARNING", "healthy": "HEALTHY", "nothing_to_check": "NOT AN RDMA NODE (exit 3)"}[a.State]
		if len(a.Findings) > 0 {
			says += ": " + strings.Join(wrapTicks(a.Findings), ", ")
		}
		if a.Plan != "" {
			says += fmt.Sprintf(" (with `%s`)", a.Plan)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", name, a.Models, says)
	}
	return b.String()
}

func wrapTicks(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = "`" + id + "`"
	}
	return out
}

// The README lists every sample node with what it models and what the
// doctor says on it, generated from Abouts; -update rewrites it.
func TestReadmeScenarioTable(t *testing.T) {
	raw, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	before, rest, ok := strings.Cut(readme, tableBegin)
	_, after, ok2 := strings.Cut(rest, tableEnd)
	if !ok || !ok2 {
		t.Fatalf("README has no %q … %q section", tableBegin, tableEnd)
	}
	want := before + tableBegin + scenarioTable() + tableEnd + after
	if *update {
		if err := os.WriteFile(readmePath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want != readme {
		t.Errorf("the README's table of sample nodes is not about.go's: go test ./internal/sysfixture -run TestReadmeScenarioTable -update")
	}
}
