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
