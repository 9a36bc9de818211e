package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// runDoctor runs the doctor on one sample, which needs no waiting.
func runDoctor(t *testing.T, args ...string) (string, int) {
	t.Helper()
	return runDoctorEvery(t, 0, args...)
}

// runDoctorEvery runs the doctor with two samples interval apart, as its
// default run does (5s), or with one when interval is 0.
func runDoctorEvery(t *testing.T, interval time.Duration, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"doctor", "--color=never", "--interval=" + interval.String()}, args...)...)
	// Wide enough that no line wraps: these tests read what a finding says;
	// TestDoctorWrapsToTheTerminal reads how it is laid out.
	cmd.Env = append(os.Environ(), "COLUMNS=100000")
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

const healthyPlan = "../../health/testdata/plan-node01.yaml"

// Gen5 NICs in Gen4 slots (an Ice Lake or Milan server, 200G ports) are a
// healthy node: the doctor finds nothing and exits 0, and says the slot sets
// the link's speed rather than calling it downtrained.
func TestDoctorGen5NICsInGen4SlotsIsClean(t *testing.T) {
	text, err := os.ReadFile(healthyPlan)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "link_rate_gbps: 400\n") {
		t.Fatal("the healthy plan has no link_rate_gbps: 400 line")
	}
	plan := testenv.WriteFile(t, t.TempDir(), "cluster.yaml", strings.Replace(string(text), "link_rate_gbps: 400\n", "link_rate_gbps: 200\n", 1))
	out, code := runDoctor(t, append(scenarioArgs("mlx5-gen5-nics-in-gen4-slots"), "--config.file="+plan, "--node.name=node01")...)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if strings.Contains(out, "FAIL") || strings.Contains(out, "WARN") {
		t.Errorf("Gen5 NICs in Gen4 slots reported as a problem:\n%s", out)
	}
}

func TestDoctorHealthyNodeExitsZero(t *testing.T) {
	out, code := runDoctor(t, append(scenarioArgs("mlx5-8x400g-healthy"), "--config.file="+healthyPlan, "--node.name=node01")...)
	if code != 0 {
		t.Fatalf("exit %d on the healthy node:\n%s", code, out)
	}
	if strings.Contains(out, "FAIL") || strings.Contains(out, "WARN") {
		t.Errorf("healthy node reports problems:\n%s", out)
	}
	if !strings.Contains(out, "NCCL_IB_GID_INDEX=3") {
		t.Error("doctor does not print the NCCL environment")
	}
}

func TestDoctorDegradedNodeNamesEachFault(t *testing.T) {
	out, code := runDoctor(t, append(scenarioArgs("mlx5-degraded"), "--config.file="+healthyPlan, "--node.name=node01")...)
	if code != 1 {
		t.Fatalf("exit %d, want 1 when a check fails:\n%s", code, out)
	}
	for _, want := range []string{
		"FAIL     port_active                     mlx5_1",
		"FAIL     mtu_matches_plan                ens4f0np0",
		"FAIL     pfc_enabled_on_roce_priority    ens8f0np0",
		"FAIL     pcie_link_not_degraded          mlx5_2",
		"WARN     firmware_consistent             mlx5_4",
		"FAIL     trust_mode_matches_plan         ens1f0np0",
		"FAIL     ecn_enabled                     ens7f0np0",
		"FAIL     global_pause_off_with_pfc       ens8f0np0",
		"WARN     devlink_health_ok               mlx5_5     tx (pci/0000:ab:00.0/65535): 4 error(s), 4 recovery(ies)",
		// The switch port of a failing port, and the cabling of every port.
		"at:  cabled to leaf-2 Ethernet24",
		"cabling (LLDP neighbours from lldpd):",
		"  mlx5_0  ens1f0np0  cabled to leaf-1 Ethernet0",
		"  mlx5_1  ens2f0np0  no LLDP neighbour",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q", want)
		}
	}
	// Failures come before anything else.
	if first := strings.SplitN(strings.SplitN(out, "\n\n", 2)[1], "\n", 2)[0]; !strings.HasPrefix(first, "FAIL") {
		t.Errorf("first finding is not a failure: %q", first)
	}
}

func TestDoctorWithoutRDMASaysSoFirst(t *testing.T) {
	out, code := runDoctor(t, scenarioArgs("no-rdma-driver")...)
	if code != 1 {
		t.Errorf("exit %d", code)
	}
	lines := strings.Split(strings.SplitN(out, "\n\n", 2)[1], "\n")
	if !strings.HasPrefix(lines[0], "FAIL     rdma_nic_present") || !strings.Contains(lines[0], "no RDMA driver") {
		t.Errorf("first line should name the missing driver: %q", lines[0])
	}
	if n := strings.Count(out, "FAIL"); n > 2 {
		t.Errorf("%d failures without an RDMA device; the rest must be skipped", n)
	}
	// The two failures share one cause: the fix is told once.
	if n := strings.Count(out, "modprobe -a"); n != 1 {
		t.Errorf("the driver fix is printed %d times, want once:\n%s", n, out)
	}
}

// TestDoctorReportsHistoryInBothModes is issue 18's report: the default run said
// "0 failed, 0 warnings" on mlx5-pfc-storm, which has 3 storm error events and
// 1.2 M drops since boot, while --interval=0 warned about the storm. Both runs
// must now warn about both, and fail on neither, since nothing happens now.
func TestDoctorReportsHistoryInBothModes(t *testing.T) {
	args := append(scenarioArgs("mlx5-pfc-storm"), "--config.file="+healthyPlan, "--node.name=node01")
	for _, interval := range []time.Duration{0, 200 * time.Millisecond} {
		out, code := runDoctorEvery(t, interval, args...)
		if code != 0 {
			t.Errorf("--interval=%s: exit %d, want 0 (history warns, it does not fail)", interval, code)
		}
		for _, want := range []string{
			"WARN     no_pfc_storm                    ens3f0np0",
			"WARN     no_packet_discards              ens3f0np0",
			"1203344 received packet(s) of RoCE priority 3 dropped since boot",
			"\n0 failed, 2 warnings,",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("--interval=%s: output lacks %q:\n%s", interval, want, out)
			}
		}
	}
}

// cpuNodeSysfs writes the sysfs of a CPU-only node: no /sys/class/infiniband, one
// virtio network function on the PCI bus.
func cpuNodeSysfs(t *testing.T) []string {
	t.Helper()
	root := t.TempDir()
	fn := filepath.Join(root, "sys", "bus", "pci", "devices", "0000:00:03.0")
	for _, dir := range []string{fn, filepath.Join(root, "sys", "class", "net", "eth0"), filepath.Join(root, "dev")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testenv.WriteFile(t, fn, "class", "0x020000\n")
	testenv.WriteFile(t, fn, "vendor", "0x1af4\n")
	testenv.WriteFile(t, fn, "device", "0x1000\n")
	return []string{"--path.sysfs=" + filepath.Join(root, "sys"), "--path.dev=" + filepath.Join(root, "dev")}
}

// A DaemonSet runs on every node of a mixed cluster: a CPU node the plan does
// not list must not fail rdma_nic_present, and a planned node without its NIC must.
// Nor is the CPU node healthy (issue 27): nothing could be checked, it says so
// first and exits 3.
func TestDoctorCPUNodeIsNotAnRDMANode(t *testing.T) {
	sys := cpuNodeSysfs(t)
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no plan", []string{"--node.name=cpu-01"}, 3, "\n\nNOT AN RDMA NODE: no RDMA device and no RDMA-capable NIC on the PCI bus, and no cluster plan lists it"},
		{"not in the plan", []string{"--config.file=" + healthyPlan, "--node.name=cpu-01"}, 3, `NOT AN RDMA NODE: no RDMA device and no RDMA-capable NIC on the PCI bus, and the cluster plan does not list node "cpu-01"`},
		{"in the plan", []string{"--config.file=" + healthyPlan, "--node.name=node01"}, 1, "FAIL     rdma_nic_present"},
	} {
		out, code := runDoctor(t, append(sys, c.args...)...)
		if code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("%s: exit %d (want %d), output lacks %q:\n%s", c.name, code, c.code, c.want, out)
		}
		if c.code == 3 && (strings.Contains(out, "FAIL") || strings.Contains(out, "WARN") || !strings.Contains(out, "the doctor exits 3")) {
			t.Errorf("%s: a CPU node reports problems, or not why it exits 3:\n%s", c.name, out)
		}
		// The folded skips point at the headline instead of repeating it.
		if c.code == 3 && (strings.Count(out, "no RDMA-capable NIC on the PCI bus") != 1 || !strings.Contains(out, "the reason above: rdma_nic_present ")) {
			t.Errorf("%s: the reason is not said once, at the top:\n%s", c.name, out)
		}
		js, code := runDoctor(t, append(append(sys, c.args...), "-o", "json")...)
		var doc struct {
			State       string `json:"state"`
			StateReason string `json:"state_reason"`
		}
		if err := json.Unmarshal([]byte(js), &doc); err != nil || code != c.code {
			t.Errorf("%s: JSON exit %d, %v", c.name, code, err)
		}
		if wantState := map[int]string{1: "failing", 3: "nothing_to_check"}[c.code]; doc.State != wantState ||
			(c.code == 3) != strings.HasPrefix(doc.StateReason, "not an RDMA node: ") {
			t.Errorf("%s: JSON state %q reason %q", c.name, doc.State, doc.StateReason)
		}
	}
}

func TestDoctorJSONSchema(t *testing.T) {
	out, code := runDoctor(t, append(scenarioArgs("mlx5-degraded"), "--output=json", "--config.file="+healthyPlan, "--node.name=node01")...)
	if code != 1 {
		t.Errorf("exit %d", code)
	}
	var doc struct {
		Node   string           `json:"node"`
		Checks []map[string]any `json:"checks"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if doc.Node != "node01" || len(doc.Checks) == 0 {
		t.Fatalf("node %q, %d checks", doc.Node, len(doc.Checks))
	}
	for _, c := range doc.Checks {
		// severity is there exactly when the check did not pass or skip.
		_, hasSeverity := c["severity"]
		if hasSeverity != (c["status"] == "fail" || c["status"] == "warn") {
			t.Fatalf("check %v: severity present %v for status %v", c, hasSeverity, c["status"])
		}
		if hasSeverity {
			delete(c, "severity")
		}
		if len(c) != 5 {
			t.Fatalf("check has keys %v, want exactly id, subject, status, message, fix (and severity)", c)
		}
		for _, k := range []string{"id", "subject", "status", "message", "fix"} {
			if _, ok := c[k].(string); !ok {
				t.Fatalf("check %v: %q missing or not a string", c, k)
			}
		}
		switch c["status"] {
		case "ok", "warn", "fail", "skipped":
		default:
			t.Errorf("status %q", c["status"])
		}
	}
}

// -o is --output, and the JSON keeps the fix texts' shell as written: a
// reader pasting `echo 106 > …` from it must not see \u003e.
func TestDoctorShortOutputFlagAndPlainJSON(t *testing.T) {
	out, code := runDoctor(t, append(scenarioArgs("mlx5-degraded"), "-o", "json", "--config.file="+healthyPlan, "--node.name=node01")...)
	if code != 1 || !json.Valid([]byte(out)) {
		t.Fatalf("exit %d, JSON valid %v:\n%.300s", code, json.Valid([]byte(out)), out)
	}
	if strings.Contains(out, `\u003c`) || strings.Contains(out, `\u003e`) || strings.Contains(out, `\u0026`) {
		t.Error("the JSON escapes <, > or &")
	}
	for _, want := range []string{"echo 106 > /sys/", " && "} {
		if !strings.Contains(out, want) {
			t.Errorf("the JSON lacks %q as written", want)
		}
	}
}

func TestDoctorPlanErrorExitsTwoWithLine(t *testing.T) {
	dir := t.TempDir()
	plan := testenv.WriteFile(t, dir, "bad.yaml", "networks:\n  management: 10.0.0.0/24\n  compute: 10.0.0.0/25\nnodes: []\nbogus: 1\n")
	cmd := exec.Command(binary, "doctor", "--config.file="+plan)
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 {
		t.Fatalf("want exit 2 for a bad plan, got %v\n%s", err, out)
	}
	if !strings.Contains(string(out), filepath.Base(plan)+":5") {
		t.Errorf("error does not name the file and line:\n%s", out)
	}
}

func TestDoctorMissingPlanSaysSo(t *testing.T) {
	plan := filepath.Join(t.TempDir(), "cluster.yaml")
	out, err := exec.Command(binary, "doctor", "--interval=0", "--config.file="+plan).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("want exit 2 for a missing plan, got %v\n%s", err, out)
	}
	for _, want := range []string{"the cluster plan " + plan + " does not exist", "deploy/examples/cluster.yaml", "leave --config.file out"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "not valid") {
		t.Errorf("a missing plan is reported as an invalid one:\n%s", out)
	}
}

// planWithMTU900 is the healthy fixture's plan with a zero dropped from its MTU.
func planWithMTU900(t *testing.T) string {
	t.Helper()
	text, err := os.ReadFile(healthyPlan)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "mtu: 9000\n") {
		t.Fatal("the healthy plan has no mtu: 9000 line to break")
	}
	return testenv.WriteFile(t, t.TempDir(), "cluster.yaml", strings.Replace(string(text), "mtu: 9000\n", "mtu: 900\n", 1))
}

func TestServeLogsPlanWarnings(t *testing.T) {
	p := startExporter(t, append(scenarioArgs("mlx5-8x400g-healthy"), "--config.file="+planWithMTU900(t), "--node.name=node01")...)
	if logs := p.logs.String(); !strings.Contains(logs, "doubtful value in the cluster plan") || !strings.Contains(logs, "did you mean 9000?") {
		t.Errorf("the exporter does not log the plan's warning:\n%s", logs)
	}
}

// A plan whose MTU lost a zero loads with a warning; the doctor prints it above
// the findings, and the ports at 9000 are not told to go down to 900.
func TestDoctorPrintsPlanWarnings(t *testing.T) {
	plan := planWithMTU900(t)
	args := append(scenarioArgs("mlx5-8x400g-healthy"), "--config.file="+plan, "--node.name=node01")
	out, code := runDoctor(t, args...)
	if code != 0 {
		t.Errorf("exit %d, want 0: the node is fine, the plan is doubtful", code)
	}
	body := strings.SplitN(out, "\n\n", 2)[1]
	if first := strings.SplitN(body, "\n", 2)[0]; !strings.HasPrefix(first, "WARN     cluster plan") || !strings.Contains(first, "cluster.yaml:") ||
		!strings.Contains(first, "expectations.mtu: 900 is below 4192") || !strings.Contains(first, "did you mean 9000?") {
		t.Errorf("first line = %q, want the plan's MTU warning", first)
	}
	if !strings.Contains(out, "WARN     mtu_matches_plan") || strings.Contains(out, "mtu 900 ") || !strings.Contains(out, "1 warning(s) about the plan itself") {
		t.Errorf("output:\n%s", out)
	}
	out, _ = runDoctor(t, append(args, "--output=json")...)
	var doc struct {
		PlanWarnings []string `json:"plan_warnings"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.PlanWarnings) != 1 || !strings.Contains(doc.PlanWarnings[0], "did you mean 9000?") {
		t.Errorf("JSON plan_warnings = %q (%v)", doc.PlanWarnings, err)
	}
}

func TestDoctorUsageErrorExitsTwo(t *testing.T) {
	cmd := exec.Command(binary, "doctor", "--output=yaml")
	if err := cmd.Run(); err == nil || err.(*exec.ExitError).ExitCode() != 2 {
		t.Errorf("bad --output: %v, want exit 2", err)
	}
}

func TestHealthMetricsOnServe(t *testing.T) {
	p := startExporter(t, append(scenarioArgs("mlx5-degraded"), "--config.file="+healthyPlan, "--node.name=node01")...)
	_, body := p.get(t, "/metrics")
	if v, ok := metricValue(body, "roce_health_check_ok", `check="mtu_matches_plan"`, `subject="ens4f0np0"`); !ok || v != "0" {
		t.Errorf("mtu_matches_plan ens4f0np0 = %q %v", v, ok)
	}
	// A passing subject has no series by default (series budget); the
	// check counts the subjects it judged.
	if v, ok := metricValue(body, "roce_health_check_ok", `check="mtu_matches_plan"`, `subject="ens1f0np0"`); ok {
		t.Errorf("mtu_matches_plan ens1f0np0 passed but is exported (%q)", v)
	}
	if v, ok := metricValue(body, "roce_health_check_subjects", `check="mtu_matches_plan"`); !ok || v != "8" {
		t.Errorf("mtu_matches_plan judged %q subjects, want 8", v)
	}
	if _, ok := metricValue(body, "roce_health_check_info", `check="port_active"`, `subject="mlx5_1"`, `severity="critical"`); !ok {
		t.Error("roce_health_check_info for the down port missing")
	}
	if _, ok := metricValue(body, "roce_health_check_info", `check="firmware_consistent"`, `severity="warning"`); !ok {
		t.Error("warning-level finding missing")
	}
	// Skipped checks are absent, not 0.
	if _, ok := metricValue(body, "roce_health_check_ok", `check="compute_ip_configured"`, `subject="ens2f0np0"`); ok {
		t.Error("a skipped check was exported")
	}
	promtoolCheck(t, body)
}

// TestDoctorRoCEOffTheLosslessPriority: the two ways RoCE ends up on a lossy priority
// while every PFC check passes, each named by the check that sees it.
func TestDoctorRoCEOffTheLosslessPriority(t *testing.T) {
	// Both captures hold totals since boot (their counters do not move
	// between the doctor's samples): the bytes on priority 0 are history
	// and warn; the map that is wrong now fails.
	for _, c := range []struct {
		scenario string
		code     int
		want     []string
		notWant  []string
	}{
		{"mlx5-dscp-to-wrong-priority", 1, []string{
			"FAIL     roce_dscp_maps_to_pfc_priority  ens3f0np0  DSCP 26 maps to priority 0 on ens3f0np0, but PFC protects priority 3",
			"fix: `mlnx_qos -i ens3f0np0 --dscp2prio set,26,3`",
			"WARN     rdma_bytes_on_roce_priority     ens3f0np0  tx: RDMA moved 10.0 TiB since the counters started but the RoCE priority 3 only 4.6 MiB (0%); priority 0 carried 10.0 TiB",
			"the map is the cause",
			"fix: fix the DSCP to priority map: `mlnx_qos -i ens3f0np0 --dscp2prio set,26,3`",
		}, []string{"pfc_enabled_on_roce_priority   ens3f0np0", "NCCL_IB_TC=106 in the job environment"}},
		{"mlx5-rdma-on-priority-0", 0, []string{
			"WARN     rdma_bytes_on_roce_priority     ens6f0np0  tx: RDMA moved 19.9 TiB since the counters started but the RoCE priority 3 only 4.6 MiB (0%); priority 0 carried 19.9 TiB",
			"NCCL_IB_TC=106 in the job environment",
			"WARN     default_traffic_class           mlx5_5     no device traffic class is set",
			"fix: echo 106 > /sys/class/infiniband/mlx5_5/tc/1/traffic_class",
		}, []string{"FAIL     roce_dscp_maps_to_pfc_priority", "the map is the cause"}},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			out, code := runDoctor(t, append(scenarioArgs(c.scenario), "--config.file="+healthyPlan, "--node.name=node01")...)
			if code != c.code {
				t.Errorf("exit %d, want %d", code, c.code)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("doctor output lacks %q", w)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(out, w) {
					t.Errorf("doctor output has %q", w)
				}
			}
			if t.Failed() {
				t.Logf("output:\n%s", out)
			}
		})
	}
}
