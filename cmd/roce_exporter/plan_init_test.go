package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/config"
)

// planInit runs plan init from the repository root and returns stdout,
// stderr and the exit code.
func planInit(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"plan", "init"}, args...)...)
	cmd.Dir = "../.."
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	code := 0
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	return out.String(), errOut.String(), code
}

// doctorOn runs the doctor from the repository root.
func doctorOn(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"doctor", "--color=never", "--interval=0"}, args...)...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "COLUMNS=100000")
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// Issue 27: writing the plan by hand was the first wall. plan init drafts it
// from the node; the doctor accepts the draft on the node it came from: on
// the demo node every plan check passes.
func TestPlanInitDraftPassesTheDoctor(t *testing.T) {
	draft, stderr, code := planInit(t, "--scenario=mlx5-8x400g-healthy", "--node.name=node01")
	if code != 0 || strings.Contains(stderr, "warning") {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	file := filepath.Join(t.TempDir(), "draft.yaml")
	if err := os.WriteFile(file, []byte(draft), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(file); err != nil {
		t.Fatal(err)
	}
	out, code := doctorOn(t, "--scenario=mlx5-8x400g-healthy", "--config.file="+file, "--node.name=node01")
	if code != 0 || strings.Contains(out, "FAIL") || strings.Contains(out, "WARN") {
		t.Fatalf("the doctor on the draft's own node: exit %d\n%s", code, out)
	}
	// The plan checks ran, not skipped for want of a plan.
	for _, want := range []string{"ok       plan_node_known", "ok       mtu_matches_plan                8 of them", "ok       pfc_enabled_on_roce_priority    8 of them",
		"ok       compute_ip_configured           8 of them", "ok       link_rate_matches_plan          8 of them"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
}

// On the degraded node the draft keeps the faults faults: filled in where it
// asks, the doctor still fails the MTU-1500 port against it.
func TestPlanInitDoesNotAdoptTheFaults(t *testing.T) {
	draft, stderr, code := planInit(t, "--scenario=mlx5-degraded", "--node.name=node01")
	if code != 1 || !strings.Contains(stderr, "does not load until its CONFIRM lines are filled in") || !strings.Contains(stderr, "nodes[0].interfaces[1].ip") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(draft, "  mtu: 9000\n") || strings.Contains(draft, "mtu: 1500") {
		t.Fatalf("the draft took the faulty MTU:\n%s", draft)
	}
	filled := strings.Replace(draft, "        # ip:\n", "        ip: 192.168.101.11/24\n", 1)
	filled = strings.Replace(filled, "    - 192.168.100.0/24\n", "    - 192.168.100.0/24\n    - 192.168.101.0/24\n", 1)
	file := filepath.Join(t.TempDir(), "draft.yaml")
	os.WriteFile(file, []byte(filled), 0o644)
	out, code := doctorOn(t, "--scenario=mlx5-degraded", "--config.file="+file, "--node.name=node01")
	for _, want := range []string{"FAIL     mtu_matches_plan                ens4f0np0  MTU 1500, the plan expects 9000", "FAIL     pfc_enabled_on_roce_priority    ens8f0np0", "FAIL     trust_mode_matches_plan         ens1f0np0"} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("exit %d, the doctor lacks %q against the draft:\n%s", code, want, out)
		}
	}
}

// A second node is one command: --add-to prints the plan with it, --write
// writes it, comments kept; a node already there is refused.
func TestPlanInitAddTo(t *testing.T) {
	draft, _, _ := planInit(t, "--scenario=mlx5-8x400g-healthy", "--node.name=node01")
	plan := filepath.Join(t.TempDir(), "cluster.yaml")
	os.WriteFile(plan, []byte("# Our cluster.\n"+draft), 0o640)
	// The same sample node under another name: its addresses collide with
	// node01's, which the plan check names.
	out, stderr, code := planInit(t, "--scenario=mlx5-8x400g-healthy", "--node.name=node02", "--add-to="+plan)
	if code != 1 || !strings.HasPrefix(out, "# Our cluster.\n") || !strings.Contains(out, "  - name: node02\n") ||
		!strings.Contains(stderr, "nodes[1].interfaces[0].ip: 192.168.100.11 is already the compute IP of nodes[0].interfaces[0]") {
		t.Errorf("exit %d:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if _, stderr, code := planInit(t, "--scenario=mlx5-8x400g-healthy", "--node.name=node02", "--add-to="+plan, "--write"); code != 1 || !strings.Contains(stderr, "is left as it was") {
		t.Errorf("--write of a plan that does not load: exit %d\n%s", code, stderr)
	}
	if now, _ := os.ReadFile(plan); string(now) != "# Our cluster.\n"+draft {
		t.Error("the plan changed although the result does not load")
	}
	// A plan whose addresses the node does not clash with: node01 moved.
	os.WriteFile(plan, []byte("# Our cluster.\n"+strings.ReplaceAll(strings.ReplaceAll(draft, ".11/24", ".21/24"), "10.0.0.11", "10.0.0.21")), 0o640)
	if _, stderr, code := planInit(t, "--scenario=mlx5-8x400g-healthy", "--node.name=node02", "--add-to="+plan, "--write"); code != 0 || !strings.Contains(stderr, "added node02 to") {
		t.Fatalf("--write: exit %d\n%s", code, stderr)
	}
	p, err := config.Load(plan)
	if err != nil || len(p.Nodes) != 2 {
		t.Fatalf("written plan: %v", err)
	}
	if st, _ := os.Stat(plan); st.Mode().Perm() != 0o640 {
		t.Errorf("the plan's mode changed to %v", st.Mode())
	}
	if text, _ := os.ReadFile(plan); !strings.HasPrefix(string(text), "# Our cluster.\n") {
		t.Error("the plan's own comment was lost")
	}
	if _, stderr, code := planInit(t, "--scenario=mlx5-8x400g-healthy", "--node.name=node02", "--add-to="+plan); code != 2 || !strings.Contains(stderr, "node node02 is already in the plan") {
		t.Errorf("adding node02 again: exit %d\n%s", code, stderr)
	}
}

// A node without RDMA has nothing to draft: exit 3, as the doctor's
// nothing to check, with what was found.
func TestPlanInitOnANodeWithoutRDMA(t *testing.T) {
	out, stderr, code := planInit(t, "--scenario=cpu-node-no-rdma")
	if code != 3 || out != "" || !strings.Contains(stderr, "nothing to draft: no RDMA device under ") {
		t.Errorf("exit %d, stdout %q, stderr:\n%s", code, out, stderr)
	}
}
