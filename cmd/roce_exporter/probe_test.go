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
		// Judged on the large-message bus bandwidth (the largest size, 128 MiB,
		// here), not on nccl-tests' 17.8617 GB/s average.
		{"nccl", "nccl_2183_two_nodes_gh200.txt", 107.63e9, "", 0},
		{"nccl", "nccl_oke_2x8_a100_healthy.txt", 237.52e9, "", 0},
		{"nccl", "nccl_wrong_results_out_of_bounds_failed.txt", 0, "wrong_results", 1},
		{"nccl", "nccl_warn_qp_timeout_nccl2013.txt", 0, "qp_connect_timeout", 1},
		// The stored copy stops after three rows.
		{"nccl", "nccl_tagged_output_pr503.txt", 0, "incomplete_output", 1},
	} {
		t.Run(tc.file, func(t *testing.T) {
			cmd := exec.Command(binary, "probe", "parse", tc.kind, filepath.Join("..", "..", "probes", "parse", "testdata", tc.file))
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
}

// probeParse runs `probe parse kind -` on input and returns the decoded
// JSON, stderr and the exit status.
func probeParse(t *testing.T, input string, args ...string) (map[string]any, string, int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"probe", "parse"}, append(args, "-")...)...)
	cmd.Stdin = strings.NewReader(input)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	return got, stderr.String(), code
}

// TestProbeParseGarbage: input that is no probe output says so, for every
// kind, text or JSON, never "the test program failed" nor a fabric fault
// its words name (issue 27: `probe parse nccl README.md` said
// qp_connect_timeout). JSON cut short cannot be told from a cut run's file:
// it could not be parsed.
func TestProbeParseGarbage(t *testing.T) {
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]string{"ib_write_bw": "ib_write_bw", "ib_write_lat": "ib_write_lat", "nccl": "nccl-tests"}
	for _, kind := range []string{"ib_write_bw", "ib_write_lat", "nccl"} {
		for _, input := range []string{"random garbage\n", "{\"hello\": \"world\"}", "", string(readme)} {
			got, stderr, code := probeParse(t, input, kind)
			if got["reason"] != "not_tool_output" || code != 1 {
				t.Errorf("%s %.20q: reason %v exit %d", kind, input, got["reason"], code)
			}
			if hint, _ := got["hint"].(string); !strings.HasPrefix(hint, "Nothing in the output is the probe program's own") {
				t.Errorf("%s %.20q: hint %q", kind, input, hint)
			}
			if !strings.Contains(stderr, "standard input is not "+tools[kind]+" output") {
				t.Errorf("%s %.20q: stderr %q", kind, input, stderr)
			}
		}
		got, stderr, _ := probeParse(t, `{"results": {"MsgSize": 65536, "BW_pea`, kind)
		if got["reason"] != "parse_error" || !strings.Contains(stderr, "could not parse standard input as "+kind+" output") {
			t.Errorf("%s: cut JSON: reason %v, stderr %q", kind, got["reason"], stderr)
		}
	}
}

// TestProbeParseImpossibleBandwidth: issue 12 found `1e300 Gb/sec`
// accepted as success.
func TestProbeParseImpossibleBandwidth(t *testing.T) {
	perftest := " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n" +
		" 1048576    23400            0.00               1e300 \t\t     0.046718\n"
	nccl := "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n" +
		"  8589934592    2147483648     float     sum      -1    67689  126.90  1e300      0    67811  126.68  1e300      0\n" +
		"# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 66.4834\n"
	for kind, input := range map[string]string{
		"ib_write_bw": perftest,
		"nccl":        nccl,
		"nccl JSON": `{"version":3,"results":[{"size":8,"count":2,"type":"float","redop":"sum","root":"    -1",` +
			`"in_place":{"time":1,"alg_bw":1,"bus_bw":1e300,"nwrong":0}}],"average_bus_bandwidth":{"bandwidth":1,"okay":true}}`,
		"ib_write_bw JSON": `{"results": {"MsgSize": 1048576, "BW_average": 1e300, "BW_peak": 0, "MsgRate": 0.046718}}`,
	} {
		got, _, code := probeParse(t, input, strings.Fields(kind)[0])
		if got["reason"] != "parse_error" || code != 1 {
			t.Errorf("%s: reason %v exit %d", kind, got["reason"], code)
		}
	}
}

// TestProbeParseNCCLJSONShape: measured zeros are printed, sizes come in
// numeric order with their numbers, the average is beside the judged
// number, and a cut run is not a success.
func TestProbeParseNCCLJSONShape(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "probes", "parse", "testdata", "nccl_oke_2x8_a100_healthy.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got, _, code := probeParse(t, string(data), "nccl")
	if code != 0 || got["reason"] != "" {
		t.Fatalf("exit %d reason %v", code, got["reason"])
	}
	if got["bandwidth_bytes_per_second"] != 237.52e9 || got["bandwidth_message_bytes"] != float64(8<<30) ||
		got["average_bus_bandwidth_bytes_per_second"] != 66.4834e9 || got["large_message_fallback"] != false {
		t.Errorf("bandwidth %v at %v, average %v, fallback %v", got["bandwidth_bytes_per_second"], got["bandwidth_message_bytes"],
			got["average_bus_bandwidth_bytes_per_second"], got["large_message_fallback"])
	}
	if w, ok := got["wrong_results"]; !ok || w != 0.0 {
		t.Errorf("a measured 0 wrong results must be printed: %v", got["wrong_results"])
	}
	sizes, _ := got["sizes"].([]any)
	if len(sizes) != 31 {
		t.Fatalf("%d sizes", len(sizes))
	}
	last := -1.0
	for _, s := range sizes {
		size := s.(map[string]any)
		b := size["bytes"].(float64)
		if b <= last {
			t.Errorf("sizes out of numeric order: %v after %v", b, last)
		}
		last = b
		for _, key := range []string{"bus_bandwidth_bytes_per_second", "algorithm_bandwidth_bytes_per_second", "time_seconds", "wrong"} {
			if _, ok := size[key]; !ok {
				t.Errorf("size %v lacks %s (measured zeros must appear): %v", b, key, size)
			}
		}
	}
	first := sizes[0].(map[string]any)
	if first["bytes"] != 8.0 || first["bus_bandwidth_bytes_per_second"] != 0.0 || first["time_seconds"] != 34.74e-6 || first["wrong"] != 0.0 {
		t.Errorf("first size = %v", first)
	}

	// A sweep of small sizes only: the judged bandwidth is a measured 0.
	small := "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n" +
		"           8             2     float     sum      -1    36.47    0.00    0.00      0    34.74    0.00    0.00      0\n" +
		"# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0 \n"
	got, _, _ = probeParse(t, small, "nccl")
	if bw, ok := got["bandwidth_bytes_per_second"]; !ok || bw != 0.0 || got["large_message_fallback"] != true {
		t.Errorf("measured zero bandwidth: %v (fallback %v)", got["bandwidth_bytes_per_second"], got["large_message_fallback"])
	}

	// The same run cut off after 128 MiB.
	cut := string(data[:strings.Index(string(data), "   268435456")])
	got, _, code = probeParse(t, cut, "nccl")
	if got["reason"] != "incomplete_output" || code != 1 || got["hint"] == "" {
		t.Errorf("truncated run: reason %v exit %d", got["reason"], code)
	}

	// The threshold is settable, as in the plan.
	got, _, _ = probeParse(t, string(data), "nccl", "--large-message-bytes=16G")
	if got["bandwidth_message_bytes"] != float64(8<<30) || got["large_message_fallback"] != true {
		t.Errorf("threshold above the sweep: at %v, fallback %v", got["bandwidth_message_bytes"], got["large_message_fallback"])
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
