package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

func absPath(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestProbeParsePrintsJSON(t *testing.T) {
	for _, tc := range []struct {
		kind, file string
		bw         float64
		reason     string
		exit       int
	}{
		{"ib_write_bw", "perftest_write_bw_gbits_2510_cpufreq_warning.txt", 392.34e9 / 8, "", 0},
		{"ib_write_bw", "perftest_json_standard_gbits.json", 0, "", 0},
		{"ib_write_bw", "perftest_err_rtr_issue393.txt", 0, "gid_index", 1},
		{"nccl", "nccl_2183_two_nodes_gh200.txt", 17.8617e9, "", 0},
		{"nccl", "nccl_wrong_results_out_of_bounds_failed.txt", 0, "wrong_results", 1},
	} {
		t.Run(tc.file, func(t *testing.T) {
			cmd := exec.Command(binary, "probe", "parse", tc.kind, filepath.Join("..", "..", "probes", "testdata", tc.file))
			out, err := cmd.Output()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			if code != tc.exit {
				t.Fatalf("exit %d, want %d: %s", code, tc.exit, out)
			}
			var got map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			if r, _ := got["reason"].(string); r != tc.reason {
				t.Errorf("reason = %q, want %q", r, tc.reason)
			}
			if tc.bw > 0 {
				if bw, _ := got["bandwidth_bytes_per_second"].(float64); bw != tc.bw {
					t.Errorf("bandwidth = %v, want %v", bw, tc.bw)
				}
			}
			if tc.reason != "" && got["hint"] == "" {
				t.Error("failure without a hint")
			}
		})
	}
	cmd := exec.Command(binary, "probe", "parse", "ib_write_bw", "-")
	cmd.Stdin = strings.NewReader("random garbage\n")
	out, _ := cmd.Output()
	if !strings.Contains(string(out), `"reason": "exec_error"`) {
		t.Errorf("garbage input: %s", out)
	}
}

// probePlan is a two-node plan matching rails 0-1 of the healthy fixture,
// with the probe commands pointing at the stand-ins.
func probePlan(t *testing.T, dir, probesYAML string) string {
	t.Helper()
	return testenv.WriteFile(t, dir, "cluster.yaml", fmt.Sprintf(`
networks:
  management: 10.0.0.0/24
  compute: [192.168.100.0/24, 192.168.101.0/24]
expectations:
  mtu: 9000
  pfc_priority: 3
  min_bandwidth_fraction: 0.001
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
probes:
  enabled: true
  state_dir: %s
%s`, filepath.Join(dir, "state"), probesYAML))
}

func TestProbeRunWithStandIns(t *testing.T) {
	dir := t.TempDir()
	plan := probePlan(t, dir, fmt.Sprintf(`  ib_write_bw:
    command: %s
  ping:
    enabled: false
`, absPath(t, "../../probes/testdata/standin/perftest")))
	cmd := exec.Command(binary, "probe", "run", "ib_write_bw", "--peer=node02", "--config.file="+plan, "--node.name=node01",
		"--path.sysfs="+filepath.Join(fixtureDir, "mlx5-8x400g-healthy", "sys"))
	cmd.Env = append(os.Environ(), "STANDIN_DIR="+dir, "STANDIN_MODE=bw_ok")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	n := 0
	for dec.More() {
		var r struct {
			Success  bool     `json:"success"`
			Device   string   `json:"device"`
			BW       float64  `json:"bandwidth_bytes_per_second"`
			Expected float64  `json:"expected_bandwidth_bytes_per_second"`
			Command  []string `json:"command"`
		}
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		n++
		if !r.Success || r.BW != 392.34e9/8 {
			t.Errorf("%+v", r)
		}
		// 0.001 × the fixture's 400 Gb/s port rate, read from sysfs.
		if r.Expected != 0.001*400e9/8 {
			t.Errorf("expected bandwidth %v", r.Expected)
		}
		// The GID index comes from the fixture's GID table: RoCE v2 IPv4 at 3.
		if !strings.Contains(strings.Join(r.Command, " "), "-x 3") {
			t.Errorf("argv %v lacks the GID index from sysfs", r.Command)
		}
	}
	if n != 2 {
		t.Errorf("got %d results, want one per rail", n)
	}
}

func TestProbeMetricsAndRegressionOnServe(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	os.MkdirAll(state, 0o755)
	// A baseline of 500 Gb/s: the stand-in's 392 Gb/s is a regression.
	testenv.WriteFile(t, state, "baselines.json", `{"version":1,"links":{"ib_write_bw|node02|mlx5_0":[62.5e9,62.5e9,62.5e9],"ib_write_bw|node02|mlx5_1":[62.5e9,62.5e9,62.5e9]}}`)
	plan := probePlan(t, dir, fmt.Sprintf(`  ib_write_bw:
    command: %s
    interval: 2s
    timeout: 1500ms
    jitter: 0s
    duration: 1s
  ping:
    enabled: false
`, absPath(t, "../../probes/testdata/standin/perftest")))
	// The exporter passes its environment on to the stand-ins.
	t.Setenv("STANDIN_DIR", dir)
	t.Setenv("STANDIN_MODE", "bw_ok")
	t.Setenv("STANDIN_SERVER", "idle")
	p := startExporter(t, append([]string{"--config.file=" + plan, "--node.name=node01"}, scenarioArgs("mlx5-8x400g-healthy")...)...)
	var body string
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, body = p.get(t, "/metrics")
		if _, ok := metricValue(body, "roce_probe_failure_info", `device="mlx5_0"`); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no probe result on /metrics within 15s:\n%s", grepLines(body, "roce_probe"))
		}
		time.Sleep(250 * time.Millisecond)
	}
	for _, want := range []struct {
		name  string
		frags []string
		value string
	}{
		{"roce_probe_failure_info", []string{`probe="ib_write_bw"`, `peer="node02"`, `device="mlx5_0"`, `reason="regression"`}, "1"},
		{"roce_probe_success", []string{`device="mlx5_0"`}, "0"},
		{"roce_probe_bandwidth_bytes_per_second", []string{`device="mlx5_0"`}, "4.904250e+10"},
		{"roce_probe_baseline_bandwidth_bytes_per_second", []string{`device="mlx5_0"`}, "6.25e+10"},
		{"roce_probe_expected_bandwidth_bytes_per_second", []string{`device="mlx5_1"`}, "5e+07"},
	} {
		got, ok := metricValue(body, want.name, want.frags...)
		if !ok {
			t.Errorf("%s%v missing", want.name, want.frags)
			continue
		}
		if got != want.value && !sameFloat(got, want.value) {
			t.Errorf("%s%v = %s, want %s", want.name, want.frags, got, want.value)
		}
	}
	if _, ok := metricValue(body, "roce_probe_runs_total", `probe="ib_write_bw"`, `result="failure"`); !ok {
		t.Error("roce_probe_runs_total{result=failure} missing")
	}
	promtoolCheck(t, body)
	// The landing page shows the diagnosis.
	_, page := p.get(t, "/")
	if !strings.Contains(page, "FAILED: regression") || !strings.Contains(page, "node02") {
		t.Errorf("landing page lacks the probe diagnosis:\n%s", page)
	}
}

func sameFloat(a, b string) bool {
	var x, y float64
	if _, err := fmt.Sscan(a, &x); err != nil {
		return false
	}
	if _, err := fmt.Sscan(b, &y); err != nil {
		return false
	}
	return x == y
}

// TestPingProbeBetweenNamespaces runs the real ping probe between two
// network namespaces joined by a veth pair: no loss while the link is up,
// total loss after `ip link set down`.
func TestPingProbeBetweenNamespaces(t *testing.T) {
	requireRoot(t)
	nsA, nsB := newNetns(t), newNetns(t)
	ipCmd(t, "link", "add", "vprobeA", "type", "veth", "peer", "name", "vprobeB")
	ipCmd(t, "link", "set", "vprobeA", "netns", nsA)
	ipCmd(t, "link", "set", "vprobeB", "netns", nsB)
	ipCmd(t, "-n", nsA, "addr", "add", "10.199.0.1/24", "dev", "vprobeA")
	ipCmd(t, "-n", nsB, "addr", "add", "10.199.0.2/24", "dev", "vprobeB")
	ipCmd(t, "-n", nsA, "link", "set", "vprobeA", "up")
	ipCmd(t, "-n", nsB, "link", "set", "vprobeB", "up")
	dir := t.TempDir()
	plan := testenv.WriteFile(t, dir, "cluster.yaml", fmt.Sprintf(`
networks:
  management: 10.0.0.0/24
  compute: 10.199.0.0/24
nodes:
  - name: node01
    management_ip: 10.0.0.11
    interfaces: [{netdev: vprobeA, ip: 10.199.0.1/24}]
  - name: node02
    management_ip: 10.0.0.12
    interfaces: [{netdev: vprobeB, ip: 10.199.0.2/24}]
probes:
  enabled: true
  state_dir: %s
  ping: {count: 5, timeout: 3s}
`, filepath.Join(dir, "state")))
	ping := func() (float64, int) {
		t.Helper()
		cmd := exec.Command("ip", "netns", "exec", nsA, binary, "probe", "run", "ping", "--config.file="+plan, "--node.name=node01")
		out, err := cmd.Output()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Loss   *float64 `json:"loss_ratio"`
			Reason string   `json:"reason"`
			Stderr string   `json:"stderr_tail"`
		}
		if err := json.Unmarshal(out, &r); err != nil || r.Loss == nil {
			t.Fatalf("ping result %s: %v (stderr %q)", out, err, r.Stderr)
		}
		return *r.Loss, code
	}
	if loss, code := ping(); loss != 0 || code != 0 {
		t.Errorf("link up: loss %v exit %d, want 0 0", loss, code)
	}
	ipCmd(t, "-n", nsA, "link", "set", "vprobeA", "down")
	if loss, code := ping(); loss != 1 || code != 1 {
		t.Errorf("link down: loss %v exit %d, want 1.0 and a failure", loss, code)
	}
}
