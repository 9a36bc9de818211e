package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// The doctor shows the last incast the exporter saved, failures with what
// the port counted and what only the other side sees; without one it says
// how to run it.
func TestDoctorShowsLastIncast(t *testing.T) {
	text, err := os.ReadFile(healthyPlan)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	plan := testenv.WriteFile(t, dir, "cluster.yaml", string(text)+"probes:\n  state_dir: "+dir+"\n")
	args := append(scenarioArgs("mlx5-8x400g-healthy"), "--config.file="+plan, "--node.name=node01")

	out, _ := runDoctor(t, args...)
	if !strings.Contains(out, "The switch under incast") || !strings.Contains(out, "run `roce_exporter probe run incast --receiver node01`") {
		t.Errorf("no incast yet, and the doctor does not say how to run one:\n%s", out)
	}

	// As probes.saveIncast writes it.
	saved := `{"version": 1, "saved": "2026-01-01T10:00:00Z", "node": "node01", "results": [
	 {"probe": "incast", "peer": "node02+node03", "device": "mlx5_0", "start": "2026-01-01T09:59:00Z", "success": false,
	  "reason": "switch_no_pfc", "warnings": ["1200 packets of the 2:1 incast never arrived in order (out_of_sequence)"],
	  "incast_role": "receiver", "incast_receiver": "node01", "incast_senders": ["node02", "node03"],
	  "incast_unseen": ["the pause frames the switch sent the senders (node02, node03)"]}]}`
	if err := os.WriteFile(filepath.Join(dir, "incast.json"), []byte(saved), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ = runDoctor(t, args...)
	for _, want := range []string{"FAIL switch_no_pfc mlx5_0 as receiver of node02+node03", "1200 packets of the 2:1 incast never arrived in order",
		"not seen here: the pause frames the switch sent the senders (node02, node03)"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "not proven from this host yet") {
		t.Errorf("a saved incast is reported as none:\n%s", out)
	}
	js, _ := runDoctor(t, append(args, "--output=json")...)
	var report struct {
		Incast struct {
			Last []struct{ Device, Result, Reason string }
		}
	}
	if err := json.Unmarshal([]byte(js), &report); err != nil || len(report.Incast.Last) != 1 || report.Incast.Last[0].Reason != "switch_no_pfc" {
		t.Errorf("JSON incast: %+v, %v\n%s", report.Incast, err, js)
	}
}

// A saved incast quotes the peers' programs and the switch: an escape
// sequence in a warning or a skip reason is printed as plain text, not
// passed to the terminal, in the text and the JSON.
func TestDoctorIncastPrintsNoEscapes(t *testing.T) {
	text, err := os.ReadFile(healthyPlan)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	plan := testenv.WriteFile(t, dir, "cluster.yaml", string(text)+"probes:\n  state_dir: "+dir+"\n")
	saved := `{"version": 1, "saved": "2026-01-01T10:00:00Z", "node": "node01", "results": [
	 {"probe": "incast", "peer": "node02+node03", "device": "mlx5_0", "start": "2026-01-01T09:59:00Z", "success": false,
	  "reason": "switch_no_pfc", "warnings": ["ib_write_bw said \u001b]0;PWNED1\u0007 done"],
	  "incast_role": "receiver", "incast_receiver": "node01", "incast_senders": ["node02", "node03"]},
	 {"probe": "incast", "peer": "node04", "device": "mlx5_1", "start": "2026-01-01T09:59:00Z", "skipped": true,
	  "skip_reason": "peer said \u001b[2Jcleared", "incast_role": "sender", "incast_receiver": "node04"}]}`
	if err := os.WriteFile(filepath.Join(dir, "incast.json"), []byte(saved), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(scenarioArgs("mlx5-8x400g-healthy"), "--config.file="+plan, "--node.name=node01")
	for _, format := range []string{"text", "json"} {
		out, _ := runDoctor(t, append(args, "--output="+format)...)
		if strings.ContainsAny(out, "\x1b\x07") || strings.Contains(out, `\u001b`) || strings.Contains(out, "PWNED1") {
			t.Errorf("%s: an escape sequence of a saved incast reaches the output:\n%q", format, out)
		}
		if !strings.Contains(out, "ib_write_bw said") || !strings.Contains(out, "peer said cleared") {
			t.Errorf("%s: the saved incast's words are gone:\n%s", format, out)
		}
	}
}
