package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// incastCLIPlan is three nodes, the first two of them rails 0-1 of the
// healthy fixture, with the incast on and the stand-in perftest.
func incastCLIPlan(t *testing.T, dir string) string {
	t.Helper()
	return testenv.WriteFile(t, dir, "cluster.yaml", fmt.Sprintf(`
networks:
  management: 10.0.0.0/24
  compute: [192.168.100.0/24, 192.168.101.0/24]
expectations:
  pfc_priority: 3
nodes:
  - name: node01
    management_ip: 10.0.0.11
    interfaces:
      - {netdev: ens1f0np0, rdma_device: mlx5_0, ip: 192.168.100.11/24}
      - {netdev: ens2f0np0, rdma_device: mlx5_1, ip: 192.168.101.11/24}
  - name: node02
    management_ip: 10.0.0.12
    interfaces:
      - {netdev: ens1f0np0, rdma_device: mlx5_0, ip: 192.168.100.12/24}
      - {netdev: ens2f0np0, rdma_device: mlx5_1, ip: 192.168.101.12/24}
  - name: node03
    management_ip: 10.0.0.13
    interfaces:
      - {netdev: ens1f0np0, rdma_device: mlx5_0, ip: 192.168.100.13/24}
      - {netdev: ens2f0np0, rdma_device: mlx5_1, ip: 192.168.101.13/24}
probes:
  enabled: true
  state_dir: %s
  incast:
    enabled: true
    command: %s
    duration: 1s
    timeout: 8s
`, filepath.Join(dir, "state"), absPath(t, "../../probes/testdata/standin/perftest")))
}

// `probe run incast` on the receiver serves both senders on both rails with
// the fixture's GID index, and, the fixture's counters being frozen, says it
// cannot judge rather than passing; a group that is no incast is refused.
func TestProbeRunIncast(t *testing.T) {
	dir := t.TempDir()
	plan := incastCLIPlan(t, dir)
	sys := "--path.sysfs=" + filepath.Join(fixtureDir, "mlx5-8x400g-healthy", "sys")
	cmd := exec.Command(binary, "probe", "run", "incast", "--config.file="+plan, "--node.name=node01", "--senders=node03,node02", sys)
	cmd.Env = append(os.Environ(), "STANDIN_DIR="+dir, "STANDIN_SERVER=serve", "STANDIN_SERVE_SECONDS=0.8")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	n := 0
	for dec.More() {
		var r struct {
			Probe      string   `json:"probe"`
			Peer       string   `json:"peer"`
			Skipped    bool     `json:"skipped"`
			SkipReason string   `json:"skip_reason"`
			Role       string   `json:"incast_role"`
			Connected  int      `json:"incast_senders_connected"`
			Command    []string `json:"command"`
		}
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		n++
		if r.Probe != "incast" || r.Role != "receiver" || r.Peer != "node02+node03" || r.Connected != 2 {
			t.Errorf("%+v", r)
		}
		if !r.Skipped || !strings.Contains(r.SkipReason, "not live") {
			t.Errorf("a replayed node's incast must be set aside, not judged: %+v", r)
		}
		if argv := strings.Join(r.Command, " "); !strings.Contains(argv, "-x 3") || !strings.Contains(argv, "--tclass=106") {
			t.Errorf("server argv %q", argv)
		}
	}
	if n != 2 {
		t.Errorf("%d results, want one per rail", n)
	}

	cmd = exec.Command(binary, "probe", "run", "incast", "--config.file="+plan, "--node.name=node03", "--receiver=node01", "--senders=node01,node02", sys)
	out, err = cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "node01 cannot send into itself") {
		t.Errorf("a receiver among its senders: %v\n%s", err, out)
	}
}
