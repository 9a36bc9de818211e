// Package deploy holds the deployment files of roce_exporter (systemd,
// Prometheus, Alertmanager; Kubernetes manifests are checked by the separate
// module in kubernetes/validate) and the tests that check them with the
// real tools: systemd-analyze, promtool and amtool. Each test skips when its
// tool is not installed.
package deploy

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// ---------------------------------------------------------------------------
// systemd

// unitEntries parses a unit file into key → values (in order), per section.
func unitEntries(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			section = strings.Trim(line, "[]")
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: line without '=': %q", path, line)
		}
		out[section+"."+k] = append(out[section+"."+k], v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// last is the value systemd uses for a single-valued setting.
func last(e map[string][]string, key string) string {
	v := e[key]
	if len(v) == 0 {
		return "<unset>"
	}
	return v[len(v)-1]
}

var execStart = regexp.MustCompile(`(?m)^ExecStart=/usr/local/bin/roce_exporter\b`)

// verifyUnits copies the units into a temporary directory, with ExecStart
// pointed at an executable that exists, and runs systemd-analyze verify on
// them. systemd-analyze exits 0 on bad values (it only logs "…, ignoring"),
// so any output on stderr is a failure.
func verifyUnits(t *testing.T, tool string, dropIn string, extra string, units ...string) (stderr string, err error) {
	t.Helper()
	dir := t.TempDir()
	var args []string
	for _, u := range units {
		raw, err := os.ReadFile(filepath.Join("systemd", u))
		if err != nil {
			t.Fatal(err)
		}
		raw = execStart.ReplaceAll(raw, []byte("ExecStart=/bin/true"))
		if err := os.WriteFile(filepath.Join(dir, u), raw, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, filepath.Join(dir, u))
	}
	if dropIn != "" {
		raw, err := os.ReadFile(filepath.Join("systemd", dropIn))
		if err != nil {
			t.Fatal(err)
		}
		d := filepath.Join(dir, "roce_exporter.service.d")
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "probes.conf"), append(raw, extra...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(tool, append([]string{"verify", "--man=no"}, args...)...)
	cmd.Dir = dir
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.Stdout = &errb
	err = cmd.Run()
	return errb.String(), err
}

func systemdAnalyze(t *testing.T) string {
	t.Helper()
	tool := testenv.LookPath(t, "systemd", "systemd-analyze")
	if _, err := os.Stat("/bin/true"); err != nil {
		testenv.Missing(t, "needs /bin/true")
	}
	return tool
}

func TestSystemdUnitsVerify(t *testing.T) {
	tool := systemdAnalyze(t)
	for _, tc := range []struct {
		name   string
		dropIn string
		units  []string
	}{
		{"service", "", []string{"roce_exporter.service"}},
		{"service and socket", "", []string{"roce_exporter.service", "roce_exporter.socket"}},
		{"service with the probes drop-in", "roce_exporter-probes.conf", []string{"roce_exporter.service"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := verifyUnits(t, tool, tc.dropIn, "", tc.units...)
			if err != nil || out != "" {
				t.Errorf("systemd-analyze verify: err=%v, output:\n%s", err, out)
			}
		})
	}
}

// A bad value is only logged by systemd-analyze: make sure the check above
// would see it, and that drop-ins are read.
func TestSystemdVerifyReportsBadValues(t *testing.T) {
	tool := systemdAnalyze(t)
	out, err := verifyUnits(t, tool, "roce_exporter-probes.conf", "LimitNOFILE=lots\n", "roce_exporter.service")
	if err == nil && out == "" {
		t.Fatal("systemd-analyze verify printed nothing for LimitNOFILE=lots in the drop-in: the verify test cannot fail")
	}
}

func TestSystemdUnitHardening(t *testing.T) {
	e := unitEntries(t, "systemd/roce_exporter.service")
	want := map[string]string{
		"Service.ExecStart":               "/usr/local/bin/roce_exporter --config.file=/etc/roce_exporter/cluster.yaml $ARGS",
		"Service.EnvironmentFile":         "-/etc/default/roce_exporter",
		"Service.DynamicUser":             "yes",
		"Service.StateDirectory":          "roce_exporter",
		"Service.ProtectSystem":           "strict",
		"Service.ProtectHome":             "yes",
		"Service.PrivateTmp":              "yes",
		"Service.NoNewPrivileges":         "yes",
		"Service.ProtectKernelModules":    "yes",
		"Service.ProtectKernelTunables":   "yes",
		"Service.ProtectControlGroups":    "yes",
		"Service.RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6 AF_NETLINK",
		"Service.RestrictNamespaces":      "yes",
		"Service.SystemCallArchitectures": "native",
		"Service.ReadOnlyPaths":           "/sys",
		"Service.CapabilityBoundingSet":   "",
		"Service.AmbientCapabilities":     "",
		"Install.WantedBy":                "multi-user.target",
	}
	for k, v := range want {
		if got := last(e, k); got != v {
			t.Errorf("roce_exporter.service: %s=%q, want %q", k, got, v)
		}
	}
	// The exporter opens no device: /dev/infiniband must stay visible
	// (PrivateDevices would hide it) but closed.
	if last(e, "Service.PrivateDevices") == "yes" || last(e, "Service.DevicePolicy") != "closed" || len(e["Service.DeviceAllow"]) != 0 {
		t.Error("roce_exporter.service: want DevicePolicy=closed, no DeviceAllow and no PrivateDevices")
	}

	p := unitEntries(t, "systemd/roce_exporter-probes.conf")
	for k, v := range map[string]string{
		"Service.AmbientCapabilities":   "CAP_IPC_LOCK CAP_NET_RAW",
		"Service.CapabilityBoundingSet": "CAP_IPC_LOCK CAP_NET_RAW",
		"Service.LimitMEMLOCK":          "infinity",
	} {
		if got := last(p, k); got != v {
			t.Errorf("roce_exporter-probes.conf: %s=%q, want %q", k, got, v)
		}
	}
	for _, dev := range []string{"char-infiniband_verbs rw", "/dev/infiniband/rdma_cm rw"} {
		if !slices.Contains(p["Service.DeviceAllow"], dev) {
			t.Errorf("roce_exporter-probes.conf: no DeviceAllow=%s", dev)
		}
	}

	s := unitEntries(t, "systemd/roce_exporter.socket")
	if last(s, "Socket.ListenStream") != "14791" {
		t.Errorf("roce_exporter.socket: ListenStream=%q, want 14791", last(s, "Socket.ListenStream"))
	}
	d := unitEntries(t, "systemd/roce_exporter.default")
	if _, ok := d[".ARGS"]; !ok {
		t.Error("roce_exporter.default does not set ARGS")
	}
}

// ---------------------------------------------------------------------------
// Prometheus and Alertmanager

func TestPrometheusConfig(t *testing.T) {
	raw, err := os.ReadFile("prometheus/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string          `yaml:"targets"`
				Labels  map[string]string `yaml:"labels"`
			} `yaml:"static_configs"`
			RelabelConfigs []struct {
				SourceLabels []string `yaml:"source_labels"`
				TargetLabel  string   `yaml:"target_label"`
				Action       string   `yaml:"action"`
				Regex        string   `yaml:"regex"`
			} `yaml:"relabel_configs"`
		} `yaml:"scrape_configs"`
		Alerting struct {
			Alertmanagers []any `yaml:"alertmanagers"`
		} `yaml:"alerting"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cfg.RuleFiles, "../../alerts/*.yml") {
		t.Errorf("rule_files %v lack ../../alerts/*.yml", cfg.RuleFiles)
	}
	if len(cfg.Alerting.Alertmanagers) == 0 {
		t.Error("no alerting.alertmanagers")
	}
	if len(cfg.ScrapeConfigs) != 1 || cfg.ScrapeConfigs[0].JobName != "roce-exporter" {
		t.Fatalf("want one scrape config with job_name roce-exporter (the alerts select it)")
	}
	sc := cfg.ScrapeConfigs[0]
	if len(sc.StaticConfigs) != 3 {
		t.Errorf("%d static configs, want the 3 nodes of deploy/examples/cluster.yaml", len(sc.StaticConfigs))
	}
	for _, st := range sc.StaticConfigs {
		if len(st.Targets) != 1 || !strings.HasSuffix(st.Targets[0], ":14791") || st.Labels["node"] == "" {
			t.Errorf("static config %v: want one target on :14791 with a node label", st)
		}
	}
	relabeled := false
	for _, r := range sc.RelabelConfigs {
		if slices.Equal(r.SourceLabels, []string{"node"}) && r.TargetLabel == "instance" {
			relabeled = true
		}
	}
	if !relabeled {
		t.Error("no relabeling of the node label into instance")
	}

	promtool := testenv.LookPath(t, "prometheus", "promtool")
	out, err := exec.Command(promtool, "check", "config", "prometheus/prometheus.yml").CombinedOutput()
	if err != nil {
		t.Errorf("promtool check config: %v\n%s", err, out)
	}
}

// amtool runs amtool and returns its standard output.
func amtool(t *testing.T, args ...string) (string, error) {
	t.Helper()
	tool := testenv.LookPath(t, "prometheus-alertmanager", "amtool")
	cmd := exec.Command(tool, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

func TestAlertmanagerConfig(t *testing.T) {
	const cfg = "alertmanager/alertmanager.yml"
	if out, err := amtool(t, "check-config", cfg); err != nil {
		t.Fatalf("amtool check-config: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		labels []string
		want   string
	}{
		{[]string{"alertname=RoCEPFCPauseStorm", "severity=critical", "instance=node01"}, "pager"},
		{[]string{"alertname=RoCELinkDown", "severity=critical", "instance=node02", "device=mlx5_0"}, "pager"},
		{[]string{"alertname=RoCEPFCPauseStorm", "severity=warning", "instance=node01"}, "ticket"},
		{[]string{"alertname=RoCEProbeBandwidthBelowExpected", "severity=warning"}, "ticket"},
		{[]string{"alertname=NodeFilesystemFull", "severity=critical"}, "ticket"},
	} {
		out, err := amtool(t, append([]string{"config", "routes", "test", "--config.file=" + cfg}, tc.labels...)...)
		if err != nil {
			t.Fatalf("amtool config routes test: %v\n%s", err, out)
		}
		if got := strings.TrimSpace(out); got != tc.want {
			t.Errorf("alert %v routed to %q, want %q", tc.labels, got, tc.want)
		}
	}

	raw, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var am struct {
		Route struct {
			GroupBy []string `yaml:"group_by"`
		} `yaml:"route"`
		InhibitRules []struct {
			SourceMatchers []string `yaml:"source_matchers"`
			TargetMatchers []string `yaml:"target_matchers"`
			Equal          []string `yaml:"equal"`
		} `yaml:"inhibit_rules"`
	}
	if err := yaml.Unmarshal(raw, &am); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(am.Route.GroupBy, []string{"alertname", "instance"}) {
		t.Errorf("group_by %v, want [alertname instance]", am.Route.GroupBy)
	}
	// Inhibition mutes only warnings about the port of the critical alert.
	// Alertmanager's equal: treats two missing labels as equal, so a rule
	// must require the source to name a port, and compare instance, device
	// and interface: [alertname, instance] muted a warning on one port for a
	// critical on another, and a critical without device or interface muted
	// every warning that lacked them too. The pipeline test (e2e) shows the
	// behaviour with a real Alertmanager.
	if len(am.InhibitRules) == 0 {
		t.Fatal("no inhibit rules: a critical alert should mute the warnings about its port")
	}
	portMatchers := map[string]bool{}
	for i, r := range am.InhibitRules {
		if !slices.Contains(r.SourceMatchers, `severity = "critical"`) || !slices.Contains(r.TargetMatchers, `severity = "warning"`) {
			t.Errorf("inhibit rule %d: want critical sources and warning targets, got %v -> %v", i, r.SourceMatchers, r.TargetMatchers)
		}
		if !slices.Contains(r.TargetMatchers, `alertname =~ "RoCE.*"`) {
			t.Errorf("inhibit rule %d: targets %v are not limited to RoCE alerts: other exporters' warnings carry device labels of their own", i, r.TargetMatchers)
		}
		for _, l := range []string{"instance", "device", "interface"} {
			if !slices.Contains(r.Equal, l) {
				t.Errorf("inhibit rule %d: equal %v lacks %s, so it mutes warnings about other ports", i, r.Equal, l)
			}
		}
		named := false
		for _, m := range r.SourceMatchers {
			if m == `device != ""` || m == `interface != ""` {
				named, portMatchers[m] = true, true
			}
		}
		if !named {
			t.Errorf("inhibit rule %d: source %v need not name a port (device != \"\" or interface != \"\"), so a node-wide critical mutes node-wide warnings", i, r.SourceMatchers)
		}
	}
	if len(portMatchers) != 2 {
		t.Errorf("want a rule for sources that name the device and one for sources that name only the interface, got %v", portMatchers)
	}
}

// ---------------------------------------------------------------------------
// Kubernetes node selection (typed checks: kubernetes/validate)

// rdmaNodeLabel must select the same nodes in both DaemonSets and the chart,
// and deploy/README.md must say where the label comes from and how to
// change it: on a CPU-only node the exporter's health checks fail and page.
func TestRDMANodeSelectorIsConsistentAndDocumented(t *testing.T) {
	const rdmaNodeLabel = "feature.node.kubernetes.io/pci-15b3.present"
	for _, f := range []string{"kubernetes/daemonset.yaml", "kubernetes/probes/daemonset.yaml"} {
		var ds struct {
			Spec struct {
				Template struct {
					Spec struct {
						NodeSelector map[string]string `yaml:"nodeSelector"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		decodeYAML(t, f, &ds)
		if got := ds.Spec.Template.Spec.NodeSelector[rdmaNodeLabel]; got != "true" {
			t.Errorf("%s: nodeSelector %v lacks %s: \"true\"", f, ds.Spec.Template.Spec.NodeSelector, rdmaNodeLabel)
		}
	}
	var values struct {
		RDMANodeSelector struct{ Key, Value string } `yaml:"rdmaNodeSelector"`
	}
	decodeYAML(t, "helm/roce-exporter/values.yaml", &values)
	if values.RDMANodeSelector.Key != rdmaNodeLabel || values.RDMANodeSelector.Value != "true" {
		t.Errorf("helm values rdmaNodeSelector = %+v, want key %s value true", values.RDMANodeSelector, rdmaNodeLabel)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{rdmaNodeLabel, "nvidia-nics-rules", "rdmaNodeSelector.key", "kubectl label node"} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("README.md does not mention %q", want)
		}
	}
}

func decodeYAML(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
