package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// Issue 27: a misspelled --path.sysfs was accepted and the node read as
// healthy. A path that does not exist is a usage error of every command
// that reads the node: exit 2, naming the flag and the path.
func TestPathThatDoesNotExistIsAUsageError(t *testing.T) {
	healthy := filepath.Join(fixtureDir, "mlx5-8x400g-healthy")
	missing := filepath.Join(t.TempDir(), "sys-typo")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"sysfs", []string{"--path.sysfs=" + missing}, "--path.sysfs=" + missing + ": no such directory"},
		{"sysfs one level up", []string{"--path.sysfs=" + healthy, "--path.dev=" + filepath.Join(healthy, "dev")},
			"is not a sysfs tree: it has no class/, bus/ or devices/ directory; did you mean --path.sysfs=" + filepath.Join(healthy, "sys") + "?"},
		{"dev", []string{"--path.sysfs=" + filepath.Join(healthy, "sys"), "--path.dev=" + missing}, "--path.dev=" + missing + ": no such directory"},
		{"proc", []string{"--path.sysfs=" + filepath.Join(healthy, "sys"), "--path.dev=" + filepath.Join(healthy, "dev"), "--path.proc=" + missing}, "--path.proc=" + missing + ": no such directory"},
		{"replay", []string{"--path.sysfs=" + filepath.Join(healthy, "sys"), "--path.dev=" + filepath.Join(healthy, "dev"), "--collector.ethtool.replay-dir=" + missing}, "--collector.ethtool.replay-dir=" + missing + ": no such directory"},
		{"a file", []string{"--path.sysfs=" + filepath.Join(healthy, "metrics.golden")}, "metrics.golden: not a directory"},
		{"unknown scenario", []string{"--scenario=mlx5-healthy"}, "--scenario=mlx5-healthy: no such scenario in collector/testdata; the scenarios are: "},
		{"scenario and a path", []string{"--scenario=mlx5-degraded", "--path.sysfs=/sys"}, "--scenario=mlx5-degraded sets --path.sysfs itself: give one or the other"},
	} {
		for _, command := range [][]string{{"doctor", "--interval=0"}, {"plan", "init"}, {"serve", "--web.listen-address=" + testenv.FreeAddr(t)}} {
			cmd := exec.Command(binary, append(command, tc.args...)...)
			cmd.Dir = "../.."
			if tc.name != "unknown scenario" && tc.name != "scenario and a path" {
				// the fixture paths are relative to this package
				cmd.Dir = ""
			}
			out, err := cmd.CombinedOutput()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 2 {
				t.Errorf("%s %s: %v, want exit 2:\n%s", command[0], tc.name, err, out)
				continue
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("%s %s: output lacks %q:\n%s", command[0], tc.name, tc.want, out)
			}
		}
	}
}

// --scenario reads a sample node by name with the paths the golden tests
// pass by hand, --path.proc included: the DGX node's verdict is the same
// both ways.
func TestScenarioByNameIsTheSameAsItsPaths(t *testing.T) {
	for _, scenario := range []string{"mlx5-degraded", "dgx-h100-degraded", "no-rdma-driver"} {
		byPaths, codePaths := runDoctor(t, scenarioArgs(scenario)...)
		cmd := exec.Command(binary, "doctor", "--color=never", "--interval=0", "--scenario="+scenario)
		cmd.Dir = "../.."
		cmd.Env = append(cmd.Environ(), "COLUMNS=100000")
		out, err := cmd.Output()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != codePaths || body(string(out)) != body(byPaths) {
			t.Errorf("%s: --scenario exit %d, by paths %d; reports differ:\n%s\n---\n%s", scenario, code, codePaths, out, byPaths)
		}
		if !strings.Contains(string(out), "sample node "+scenario+" (not this machine)") {
			t.Errorf("%s: the header does not say it is a sample:\n%s", scenario, out)
		}
	}
}

// body is a doctor report without its header.
func body(report string) string {
	_, after, _ := strings.Cut(report, "\n\n")
	return after
}

// The README's table of sample nodes (internal/sysfixture's Abouts) says
// what the doctor makes of each: it does, run by name as the README says.
func TestScenariosShowWhatTheySay(t *testing.T) {
	for _, name := range sysfixture.ScenarioNames() {
		about, ok := sysfixture.Abouts[name]
		if !ok {
			t.Errorf("%s: no About", name)
			continue
		}
		args := []string{"doctor", "-o", "json", "--interval=0", "--scenario=" + name}
		if about.Plan != "" {
			args = append(args, "--config.file="+about.Plan, "--node.name=node01")
		}
		cmd := exec.Command(binary, args...)
		cmd.Dir = "../.."
		out, _ := cmd.Output()
		var doc struct {
			State  string `json:"state"`
			Checks []struct{ ID, Status string }
		}
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if doc.State != about.State {
			t.Errorf("%s: the doctor says %s, the README %s", name, doc.State, about.State)
		}
		bad := map[string]bool{}
		for _, c := range doc.Checks {
			if c.Status == "fail" || c.Status == "warn" {
				bad[c.ID] = true
			}
		}
		for _, id := range about.Findings {
			if !bad[id] {
				t.Errorf("%s: the README names %s, which neither fails nor warns", name, id)
			}
		}
	}
}
