package alerts

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

const (
	alertsFile     = "alerts.yml"
	recordingFile  = "recording_rules.yml"
	runbookDir     = "runbooks"
	testsGlob      = "tests/*.yml"
	alertPrefix    = "RoCE"
	runbookURLBase = "https://github.com/roce-exporter/roce_exporter/blob/main/alerts/runbooks/"
	fixturesDir    = "../collector/testdata"
)

// The checks of mixtool lint (monitoring-mixins/mixtool pkg/mixer/lint.go),
// which cannot be installed here, plus this project's own conventions.
var (
	camelCaseRe     = regexp.MustCompile(`^([A-Z]+[a-z0-9]+)+$`)
	goTemplateRe    = regexp.MustCompile(`\{\{.+}\}`)
	sentenceRe      = regexp.MustCompile(`^[A-Z].+\.$`)
	recordNameRe    = regexp.MustCompile(`^[a-z][a-z0-9_]*:[a-z][a-z0-9_]*:[a-z][a-z0-9_]*$`)
	metricRefRe     = regexp.MustCompile(`(?:^|[^a-zA-Z0-9_:])(roce_[a-zA-Z0-9_]+)`)
	templateQueryRe = regexp.MustCompile("`([^`]*)`")
	stringLiteralRe = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	severities      = []string{"critical", "warning", "info"}
	annotationSet   = []string{"summary", "description", "runbook_url"}
)

const (
	maxGroupRules   = 20
	maxGroupNameLen = 40
	maxAlertNameLen = 40
)

type (
	ruleFile  = RuleFile
	ruleGroup = RuleGroup
	rule      = Rule
)

// promtool test file (the fields Prometheus 2.42 knows).
type testFile struct {
	RuleFiles          []string    `yaml:"rule_files"`
	EvaluationInterval string      `yaml:"evaluation_interval"`
	GroupEvalOrder     []string    `yaml:"group_eval_order"`
	Tests              []testGroup `yaml:"tests"`
}

type testGroup struct {
	Interval        string            `yaml:"interval"`
	InputSeries     []inputSeries     `yaml:"input_series"`
	AlertRuleTests  []alertTestCase   `yaml:"alert_rule_test"`
	PromqlExprTests []promqlTestCase  `yaml:"promql_expr_test"`
	ExternalLabels  map[string]string `yaml:"external_labels"`
	ExternalURL     string            `yaml:"external_url"`
}

type inputSeries struct {
	Series string `yaml:"series"`
	Values string `yaml:"values"`
}

type alertTestCase struct {
	EvalTime  string     `yaml:"eval_time"`
	Alertname string     `yaml:"alertname"`
	ExpAlerts []expAlert `yaml:"exp_alerts"`
}

type expAlert struct {
	ExpLabels      map[string]string `yaml:"exp_labels"`
	ExpAnnotations map[string]string `yaml:"exp_annotations"`
}

type promqlTestCase struct {
	Expr       string      `yaml:"expr"`
	EvalTime   string      `yaml:"eval_time"`
	ExpSamples []expSample `yaml:"exp_samples"`
}

type expSample struct {
	Labels string  `yaml:"labels"`
	Value  float64 `yaml:"value"`
}

// decodeStrict decodes YAML and fails on unknown fields, so that a typo such
// as exp_annotation is caught here instead of being silently ignored.
func decodeStrict(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func loadRules(t *testing.T, path string) ruleFile {
	t.Helper()
	var f ruleFile
	decodeStrict(t, path, &f)
	if len(f.Groups) == 0 {
		t.Fatalf("%s: no rule groups", path)
	}
	return f
}

func alertingRules(t *testing.T) []rule {
	t.Helper()
	var out []rule
	for _, g := range loadRules(t, alertsFile).Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r)
			}
		}
	}
	return out
}

func alertNames(rules []rule) []string {
	var names []string
	for _, r := range rules {
		if !slices.Contains(names, r.Alert) {
			names = append(names, r.Alert)
		}
	}
	sort.Strings(names)
	return names
}

func loadTests(t *testing.T) map[string]testFile {
	t.Helper()
	paths, err := filepath.Glob(testsGlob)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no test files match %s", testsGlob)
	}
	out := map[string]testFile{}
	for _, p := range paths {
		var f testFile
		decodeStrict(t, p, &f)
		out[p] = f
	}
	return out
}

func TestGroupLimits(t *testing.T) {
	for _, path := range []string{alertsFile, recordingFile} {
		seen := map[string]bool{}
		for _, g := range loadRules(t, path).Groups {
			if g.Name == "" {
				t.Errorf("%s: group without a name", path)
			}
			if seen[g.Name] {
				t.Errorf("%s: group %q defined twice", path, g.Name)
			}
			seen[g.Name] = true
			if len(g.Name) > maxGroupNameLen {
				t.Errorf("%s: [alert-group-name-length] group %q is longer than %d characters", path, g.Name, maxGroupNameLen)
			}
			if len(g.Rules) > maxGroupRules {
				t.Errorf("%s: [alert-group-rule-count] group %q has %d rules, more than %d", path, g.Name, len(g.Rules), maxGroupRules)
			}
			if len(g.Rules) == 0 {
				t.Errorf("%s: group %q has no rules", path, g.Name)
			}
		}
	}
}

// A group evaluated less often than the global interval (15 s) delays its
// alerts by up to its interval: only alerts that wait ten times as long
// belong in one, so that the delay stays under a tenth of the wait. The
// dashboards' recording groups hold no alert.
func TestSlowGroupsHoldOnlyPatientAlerts(t *testing.T) {
	const global = 15 * time.Second
	slow := 0
	for _, path := range []string{alertsFile, recordingFile} {
		for _, g := range loadRules(t, path).Groups {
			if g.Interval == "" {
				continue
			}
			every, err := model.ParseDuration(g.Interval)
			if err != nil {
				t.Errorf("%s: group %s: interval %q: %v", path, g.Name, g.Interval, err)
				continue
			}
			if time.Duration(every) <= global {
				continue
			}
			for _, r := range g.Rules {
				if r.Alert == "" {
					continue
				}
				slow++
				wait, err := model.ParseDuration(r.For)
				if r.For == "" || err != nil || time.Duration(wait) < 10*time.Duration(every) {
					t.Errorf("%s: group %s runs every %s but %s waits %q (for): under ten intervals, it would fire up to %s late", path, g.Name, g.Interval, r.Alert, r.For, time.Duration(every)-global)
				}
			}
		}
	}
	if slow == 0 {
		t.Error("no alert is evaluated less often than the global interval: the rule cost in README.md counts on some")
	}
}

func TestAlertingRuleStyle(t *testing.T) {
	f := loadRules(t, alertsFile)
	type key struct{ name, severity string }
	seen := map[key]bool{}
	summaries := map[string]string{}
	runbookChecked := map[string]bool{}
	for _, g := range f.Groups {
		for i, r := range g.Rules {
			if r.Record != "" {
				// A group's rules run in order in one evaluation: a rate its
				// alerts share is recorded at the top of the group and read
				// by them in the same round (and the port-label maps by the
				// other groups). A record no alert reads belongs in
				// recording_rules.yml, and one read in its own group must come
				// before its readers.
				read := false
				for _, other := range f.Groups {
					for j, reader := range other.Rules {
						if !strings.Contains(reader.Expr, r.Record) || reader.Record == r.Record {
							continue
						}
						read = true
						if other.Name == g.Name && j < i {
							t.Errorf("%s: %s%s reads %q before group %q records it", alertsFile, reader.Alert, reader.Record, r.Record, g.Name)
						}
					}
				}
				if !read {
					t.Errorf("%s: recording rule %q is read by no rule of %s; it belongs in %s", alertsFile, r.Record, alertsFile, recordingFile)
				}
				continue
			}
			name := r.Alert
			if name == "" {
				t.Errorf("group %q: rule without alert name", g.Name)
				continue
			}
			if !camelCaseRe.MatchString(name) {
				t.Errorf("[alert-name-camelcase] %s: not CamelCase ending in a lowercase word (%s)", name, camelCaseRe)
			}
			if !strings.HasPrefix(name, alertPrefix) {
				t.Errorf("%s: name must start with %q", name, alertPrefix)
			}
			if len(name) > maxAlertNameLen {
				t.Errorf("[alert-name-length] %s: longer than %d characters", name, maxAlertNameLen)
			}
			if strings.TrimSpace(r.Expr) == "" {
				t.Errorf("%s: empty expr", name)
			}
			if r.For != "" {
				d, err := time.ParseDuration(r.For)
				switch {
				case err != nil:
					t.Errorf("%s: for %q: %v", name, r.For, err)
				case d == 0:
					t.Errorf("%s: for: 0 is the default; leave it out", name)
				}
			}

			sev := r.Labels["severity"]
			if !slices.Contains(severities, sev) {
				t.Errorf("[alert-severity-rule] %s: severity %q not in %v", name, sev, severities)
			}
			if seen[key{name, sev}] {
				t.Errorf("%s: two rules with severity %q (promtool reports them as duplicates)", name, sev)
			}
			seen[key{name, sev}] = true
			for l := range r.Labels {
				if l != "severity" {
					t.Errorf("%s: unexpected static label %q (only severity is set by the rules)", name, l)
				}
			}

			for a := range r.Annotations {
				if !slices.Contains(annotationSet, a) {
					t.Errorf("%s: unexpected annotation %q", name, a)
				}
			}
			summary, ok := r.Annotations["summary"]
			switch {
			case !ok || summary == "":
				t.Errorf("[alert-summary-missing-rule] %s: no summary", name)
			case goTemplateRe.MatchString(summary):
				t.Errorf("[alert-summary-templating] %s: summary must be static: %q", name, summary)
			case !sentenceRe.MatchString(summary):
				t.Errorf("[alert-summary-style] %s: summary must start with a capital letter and end with a period: %q", name, summary)
			}
			if prev, ok := summaries[name]; ok && prev != summary {
				t.Errorf("%s: all rules of one alert must share the summary: %q vs %q", name, prev, summary)
			}
			summaries[name] = summary

			desc, ok := r.Annotations["description"]
			switch {
			case !ok || desc == "":
				t.Errorf("[alert-description-missing-rule] %s: no description", name)
			case !goTemplateRe.MatchString(desc):
				t.Errorf("[alert-description-templating] %s: description has no template", name)
			case !strings.Contains(desc, "$labels.instance") && !strings.Contains(desc, "$labels.node") &&
				!strings.Contains(desc, "$labels.chassis_id") && !strings.Contains(r.Expr, "absent(") && !slices.Contains(fleetAlerts, name):
				t.Errorf("%s: description must name the node ({{ $labels.instance }} or {{ $labels.node }}) or, for a switch, the switch ({{ $labels.chassis_id }})", name)
			}
			if strings.Contains(desc, "\n") {
				t.Errorf("%s: description spans several lines; use a folded (>-) block", name)
			}

			wantURL := runbookURLBase + name + ".md"
			if got := r.Annotations["runbook_url"]; got != wantURL {
				t.Errorf("%s: runbook_url = %q, want %q", name, got, wantURL)
			}
			if !runbookChecked[name] {
				runbookChecked[name] = true
				if _, err := os.Stat(filepath.Join(runbookDir, name+".md")); err != nil {
					t.Errorf("%s: runbook missing: %v", name, err)
				}
			}
		}
	}
}

// recordingRules are the recording rules of both files: recording_rules.yml
// and the shared rates at the top of alerts.yml's groups.
func recordingRules(t *testing.T) []rule {
	t.Helper()
	var out []rule
	for _, path := range []string{alertsFile, recordingFile} {
		for _, g := range loadRules(t, path).Groups {
			for _, r := range g.Rules {
				if r.Record != "" {
					out = append(out, r)
				}
			}
		}
	}
	return out
}

func TestRecordingRuleNames(t *testing.T) {
	for _, g := range loadRules(t, recordingFile).Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				t.Errorf("%s: alert %q belongs in %s", recordingFile, r.Alert, alertsFile)
			}
		}
	}
	seen := map[string]bool{}
	for _, r := range recordingRules(t) {
		if !recordNameRe.MatchString(r.Record) {
			t.Errorf("recording rule %q is not of the form level:metric:operations", r.Record)
			continue
		}
		if metric := strings.Split(r.Record, ":")[1]; !strings.HasPrefix(metric, "roce_") {
			t.Errorf("recording rule %q: the metric part should keep the roce_ prefix", r.Record)
		}
		if seen[r.Record] {
			t.Errorf("recording rule %q defined twice", r.Record)
		}
		seen[r.Record] = true
		if r.For != "" || len(r.Annotations) > 0 {
			t.Errorf("recording rule %q has for/annotations", r.Record)
		}
		if strings.TrimSpace(r.Expr) == "" {
			t.Errorf("recording rule %q: empty expr", r.Record)
		}
	}
}

// Every alert has at least one promtool case where it fires (with the full
// labels and rendered annotations) and one where it stays silent; every
// severity of an alert fires in some case; every recording rule is checked by
// a promql_expr_test.
func TestEveryRuleIsTested(t *testing.T) {
	rules := alertingRules(t)
	byName := map[string][]rule{}
	for _, r := range rules {
		byName[r.Alert] = append(byName[r.Alert], r)
	}

	firing := map[string]map[string]bool{} // alert -> severities seen firing
	silent := map[string]bool{}
	var promqlExprs []string
	for path, f := range loadTests(t) {
		if f.EvaluationInterval == "" {
			t.Errorf("%s: set evaluation_interval", path)
		}
		for _, rf := range f.RuleFiles {
			if _, err := os.Stat(filepath.Join(filepath.Dir(path), rf)); err != nil {
				t.Errorf("%s: rule file %q: %v", path, rf, err)
			}
		}
		for _, g := range f.Tests {
			for _, c := range g.AlertRuleTests {
				rs, known := byName[c.Alertname]
				if !known {
					t.Errorf("%s: test for unknown alert %q", path, c.Alertname)
					continue
				}
				if len(c.ExpAlerts) == 0 {
					silent[c.Alertname] = true
					continue
				}
				for _, a := range c.ExpAlerts {
					sev := a.ExpLabels["severity"]
					if sev == "" {
						t.Errorf("%s: %s at %s: exp_labels without severity", path, c.Alertname, c.EvalTime)
					}
					if firing[c.Alertname] == nil {
						firing[c.Alertname] = map[string]bool{}
					}
					firing[c.Alertname][sev] = true
					for _, k := range annotationSet {
						if a.ExpAnnotations[k] == "" {
							t.Errorf("%s: %s at %s: exp_annotations lacks %s (assert the fully rendered annotations)", path, c.Alertname, c.EvalTime, k)
						}
					}
					if a.ExpAnnotations["summary"] != rs[0].Annotations["summary"] {
						t.Errorf("%s: %s: summary %q differs from the rule's %q", path, c.Alertname, a.ExpAnnotations["summary"], rs[0].Annotations["summary"])
					}
					if want := runbookURLBase + c.Alertname + ".md"; a.ExpAnnotations["runbook_url"] != want {
						t.Errorf("%s: %s: runbook_url %q, want %q", path, c.Alertname, a.ExpAnnotations["runbook_url"], want)
					}
					if strings.Contains(a.ExpAnnotations["description"], "{{") {
						t.Errorf("%s: %s: exp description is not rendered: %q", path, c.Alertname, a.ExpAnnotations["description"])
					}
				}
			}
			for _, c := range g.PromqlExprTests {
				promqlExprs = append(promqlExprs, c.Expr)
			}
		}
	}

	for _, name := range alertNames(rules) {
		if len(firing[name]) == 0 {
			t.Errorf("%s: no promtool test case where it fires", name)
		}
		if !silent[name] {
			t.Errorf("%s: no promtool test case where it stays silent", name)
		}
		for _, r := range byName[name] {
			if sev := r.Labels["severity"]; !firing[name][sev] {
				t.Errorf("%s: the %s rule never fires in a test", name, sev)
			}
		}
	}

	for _, r := range recordingRules(t) {
		tested := slices.ContainsFunc(promqlExprs, func(e string) bool { return strings.Contains(e, r.Record) })
		if !tested {
			t.Errorf("recording rule %s: no promql_expr_test", r.Record)
		}
	}
}

// Alertmanager mutes a warning only while a critical fires for the same
// instance, device and interface, so every alert about a port must name it.
// These groups and alerts are about ports (or devices); their firing test
// cases must each carry device or interface (a case may show the fallback
// when roce_port_info is missing), and one case of each alert must show both.
var portAlertGroups = []string{"roce-pfc-congestion", "roce-rdma-transport", "roce-port-drops", "roce-link-phy", "roce-optics"}
var portAlerts = []string{"RoCEPortRateBelowPlan", "RoCEMTUMismatch", "RoCEMTUFleetMismatch", "RoCEv2GIDMissing",
	"RoCEFirmwareMismatch", "RoCEPCIeLinkDegraded", "RoCEPCIeBandwidthInsufficient"}

// Fleet alerts are about a whole job, no node: CNPs sent by some nodes and
// lost before others received them.
var fleetAlerts = []string{"RoCECNPsLostInFabric"}

// Device-level alerts name the device; a device has no single interface.
var deviceAlerts = []string{"RoCEFirmwareMismatch", "RoCEPCIeLinkDegraded", "RoCEPCIeBandwidthInsufficient"}

func TestPortAlertsCarryPortLabels(t *testing.T) {
	want := map[string]bool{}
	for _, g := range loadRules(t, alertsFile).Groups {
		for _, r := range g.Rules {
			if r.Alert != "" && (slices.Contains(portAlertGroups, g.Name) || slices.Contains(portAlerts, r.Alert)) {
				want[r.Alert] = true
			}
		}
	}
	both := map[string]bool{}
	for path, f := range loadTests(t) {
		for _, g := range f.Tests {
			for _, c := range g.AlertRuleTests {
				for _, a := range c.ExpAlerts {
					l := a.ExpLabels
					health := l["check"] != "" && l["subject"] != ""
					switch {
					case health && l["subject"] != "node" && (l["device"] == "" || l["interface"] == ""):
						t.Errorf("%s: %s at %s: finding for %s without device and interface labels: %v", path, c.Alertname, c.EvalTime, l["subject"], l)
					case health:
					case !want[c.Alertname]:
					case l["device"] == "" && l["interface"] == "":
						t.Errorf("%s: %s at %s names no port (neither device nor interface): %v", path, c.Alertname, c.EvalTime, l)
					}
					if l["device"] != "" && (l["interface"] != "" || slices.Contains(deviceAlerts, c.Alertname)) {
						both[c.Alertname] = true
					}
				}
			}
		}
	}
	for name := range want {
		if !both[name] {
			t.Errorf("%s: no test case shows it with the port's device and interface", name)
		}
	}
}

// Runbooks: one per alert, no orphans, the same four sections in each.
func TestRunbooks(t *testing.T) {
	names := alertNames(alertingRules(t))
	files, err := filepath.Glob(filepath.Join(runbookDir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".md")
		if !slices.Contains(names, name) {
			t.Errorf("%s: runbook for an alert that does not exist", f)
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		if !strings.HasPrefix(text, "# "+name+"\n") {
			t.Errorf("%s: must start with the heading \"# %s\"", f, name)
		}
		for _, section := range []string{"## What it means", "## How to confirm", "## How to fix", "## When to escalate"} {
			if !strings.Contains(text, "\n"+section+"\n") {
				t.Errorf("%s: missing section %q", f, section)
			}
		}
	}
}

// The counts the READMEs give of the rules are the files' own.
func TestREADMECountsAreTrue(t *testing.T) {
	alertRules := alertingRules(t)
	var recordsInAlerts int
	records := len(recordingRules(t))
	for _, g := range loadRules(t, alertsFile).Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recordsInAlerts++
			}
		}
	}
	want := map[string]string{
		"README.md": fmt.Sprintf("| [`alerts.yml`](alerts.yml) | %d alerts (%d rules: some alerts have a warning and a critical rule) in %d groups, and the %d recording rules",
			len(alertNames(alertRules)), len(alertRules), len(loadRules(t, alertsFile).Groups), recordsInAlerts),
	}
	wantRecording := fmt.Sprintf("| [`recording_rules.yml`](recording_rules.yml) | %d recording rules", records-recordsInAlerts)
	wantTop := fmt.Sprintf("`alerts/alerts.yml` (%d alerts)", len(alertNames(alertRules)))
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{want["README.md"], wantRecording} {
		if !strings.Contains(string(readme), w) {
			t.Errorf("README.md: the file table does not say %q", w)
		}
	}
	top, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(top), wantTop) {
		t.Errorf("../README.md does not say %q", wantTop)
	}
}

func TestREADMEListsEveryAlert(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range alertNames(alertingRules(t)) {
		if !strings.Contains(string(data), "["+name+"](runbooks/"+name+".md)") {
			t.Errorf("README.md: no table row linking [%s](runbooks/%s.md)", name, name)
		}
	}
}

// fixtureMetricNames reads the metric names of every golden /metrics file.
func fixtureMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	goldens, _ := filepath.Glob(filepath.Join(fixturesDir, "*", "metrics.golden"))
	if len(goldens) == 0 {
		return nil
	}
	names := map[string]bool{}
	for _, g := range goldens {
		for _, s := range readGolden(t, g) {
			names[string(s.Metric[model.MetricNameLabel])] = true
		}
	}
	return names
}

// Metrics that the design fixes but that no fixture emits (probes need a plan
// and real runs; bnxt/irdma counters that only some fixtures have).
var designOnlyMetrics = []string{
	"roce_probe_success",
	"roce_probe_bandwidth_bytes_per_second",
	"roce_probe_expected_bandwidth_bytes_per_second",
	"roce_probe_baseline_bandwidth_bytes_per_second",
	"roce_probe_latency_seconds",
	"roce_probe_loss_ratio",
	"roce_probe_nccl_bus_bandwidth_bytes_per_second",
	"roce_probe_nccl_wrong_results",
	"roce_probe_duration_seconds",
	"roce_probe_last_run_timestamp_seconds",
	"roce_probe_runs_total",
	"roce_probe_failure_info",
	"roce_probe_freshness_bound_seconds",
	"roce_probe_last_completed_timestamp_seconds",
	"roce_probe_stale_results",
	"roce_probe_peers_failed",
	"roce_probe_peers_passed",
	"roce_probe_last_passed_timestamp_seconds",
	"roce_health_check_ok",
	"roce_health_check_info",
	// Being added with the LLDP reader; the fleet rules join on it and
	// record nothing while it is absent.
	"roce_lldp_neighbor_info",
	// Issue 28's node-side signals (DESIGN28.md): rails no peer in the plan
	// can test, and a node run under a plan name that is not its own.
	"roce_probe_untestable_rails",
	"roce_probe_identity_mismatch",
}

// Every roce_ metric named in an expression or a description template exists
// in a fixture's golden output or is one of the design's not-yet-emitted ones:
// this catches a misspelt counter, which would make an alert silently dead.
func TestRulesUseRealMetricNames(t *testing.T) {
	known := fixtureMetricNames(t)
	if known == nil {
		t.Skipf("no golden files under %s", fixturesDir)
	}
	for _, m := range designOnlyMetrics {
		known[m] = true
	}
	for _, path := range []string{alertsFile, recordingFile} {
		for _, g := range loadRules(t, path).Groups {
			for _, r := range g.Rules {
				// The expression, and the queries inside description templates
				// (the backquoted printf formats).
				texts := []string{r.Expr}
				for _, q := range templateQueryRe.FindAllStringSubmatch(r.Annotations["description"], -1) {
					texts = append(texts, q[1])
				}
				for _, text := range texts {
					// Label values (a check named roce_mtu_4096_possible) are no metric names.
					text = stringLiteralRe.ReplaceAllString(text, `""`)
					for _, m := range metricRefRe.FindAllStringSubmatch(text, -1) {
						if !known[m[1]] {
							t.Errorf("%s: %s%s uses %s, which no fixture emits and the design does not list", path, r.Alert, r.Record, m[1])
						}
					}
				}
			}
		}
	}
}

func promtool(t *testing.T) string {
	t.Helper()
	return testenv.LookPath(t, "prometheus", "promtool")
}

func runPromtool(t *testing.T, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func TestPromtoolCheckRules(t *testing.T) {
	runPromtool(t, promtool(t), "check", "rules", alertsFile, recordingFile)
}

func TestPromtoolTestRules(t *testing.T) {
	bin := promtool(t)
	paths, err := filepath.Glob(testsGlob)
	if err != nil || len(paths) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	runPromtool(t, bin, append([]string{"test", "rules"}, paths...)...)
}

// readGolden parses a golden /metrics file with the text-format parser.
func readGolden(t *testing.T, path string) model.Vector {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	samples, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{}, slices.Collect(maps.Values(families))...)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return samples
}

// withHealthPortLabels gives roce_health_check_ok and roce_health_check_info
// the device and interface labels of the finding's port, as the exporter
// does (alerts/README.md, "Port labels and inhibition"): a subject that is an
// interface names its port's device, a device ("mlx5_0") or port
// ("mlx5_0/2") subject names the port's interface where there is exactly one,
// and "node" names neither. Series that already carry device are checked
// against the same derivation instead of changed, so the goldens' labels
// must agree with the contract the rules rely on.
func withHealthPortLabels(t *testing.T, samples model.Vector) {
	t.Helper()
	deviceOf := map[string]string{}       // interface -> device
	interfacesOf := map[string][]string{} // device or device/port -> interfaces
	for _, s := range samples {
		if s.Metric[model.MetricNameLabel] != "roce_port_info" {
			continue
		}
		dev, port, itf := string(s.Metric["device"]), string(s.Metric["port"]), string(s.Metric["interface"])
		if itf == "" {
			continue
		}
		deviceOf[itf] = dev
		interfacesOf[dev] = append(interfacesOf[dev], itf)
		interfacesOf[dev+"/"+port] = append(interfacesOf[dev+"/"+port], itf)
	}
	for _, s := range samples {
		name := s.Metric[model.MetricNameLabel]
		if name != "roce_health_check_ok" && name != "roce_health_check_info" {
			continue
		}
		subject := string(s.Metric["subject"])
		var dev, itf string
		switch {
		case subject == "node":
		case gpuSubjectRe.MatchString(subject): // a GPU: no RDMA device, no interface
		case deviceOf[subject] != "":
			dev, itf = deviceOf[subject], subject
		default:
			dev, _, _ = strings.Cut(subject, "/")
			if ifs := interfacesOf[subject]; len(ifs) == 1 {
				itf = ifs[0]
			}
		}
		if _, ok := s.Metric["device"]; ok {
			if got := [2]string{string(s.Metric["device"]), string(s.Metric["interface"])}; got != [2]string{dev, itf} {
				t.Errorf("%s: device, interface = %q, want %q", s.Metric, got, [2]string{dev, itf})
			}
			continue
		}
		if dev != "" {
			s.Metric["device"] = model.LabelValue(dev)
		}
		if itf != "" {
			s.Metric["interface"] = model.LabelValue(itf)
		}
	}
}

// gpuSubjectRe matches the subjects of the GPU checks ("gpu3").
var gpuSubjectRe = regexp.MustCompile(`^gpu\d+$`)

// firingAlertsTest runs promtool on samples held constant for 90 minutes
// (job roce-exporter, instance set by each sample or node1:14791) and
// checks that, after 80 minutes, the firing alerts grouped by the labels
// in by are exactly want.
func firingAlertsTest(t *testing.T, name string, samples model.Vector, by string, want []string) {
	t.Helper()
	bin := promtool(t)
	alertsPath, err := filepath.Abs(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var series []inputSeries
	instances := map[model.LabelValue]bool{}
	for _, s := range samples {
		if s.Metric["instance"] == "" {
			s.Metric["instance"] = "node1:14791"
		}
		s.Metric["job"] = "roce-exporter"
		instances[s.Metric["instance"]] = true
		series = append(series, inputSeries{Series: s.Metric.String(), Values: s.Value.String() + "x90"})
	}
	for _, inst := range slices.Sorted(maps.Keys(instances)) {
		series = append(series, inputSeries{Series: fmt.Sprintf(`up{job="roce-exporter",instance=%q}`, inst), Values: "1x90"})
	}
	var exp []expSample
	for _, l := range want {
		exp = append(exp, expSample{Labels: l, Value: 1})
	}
	tf := testFile{
		RuleFiles:          []string{alertsPath},
		EvaluationInterval: "1m",
		Tests: []testGroup{{
			Interval:    "1m",
			InputSeries: series,
			PromqlExprTests: []promqlTestCase{{
				Expr:       "group by (" + by + `) (ALERTS{alertstate="firing"})`,
				EvalTime:   "80m",
				ExpSamples: exp,
			}},
		}},
	}
	data, err := yaml.Marshal(tf)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".yml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, bin, "test", "rules", path)
}

func fixtureSamples(t *testing.T, fixture string) model.Vector {
	t.Helper()
	golden := filepath.Join(fixturesDir, fixture, "metrics.golden")
	if _, err := os.Stat(golden); errors.Is(err, os.ErrNotExist) {
		t.Skipf("%s not present", golden)
	}
	samples := readGolden(t, golden)
	withHealthPortLabels(t, samples)
	return samples
}

// The alerts evaluated on the captured nodes of collector/testdata, each held
// constant for 90 minutes (so only the state-based alerts can fire; rate-based
// ones need moving counters and are covered by tests/*.yml). A healthy or
// merely different node (InfiniBand, bnxt) must fire nothing; the degraded
// node must fire exactly one alert per fault it was built with, the doctor's
// findings included (by check), and none twice.
func TestRulesOnFixtures(t *testing.T) {
	cases := map[string][]string{
		"mlx5-8x400g-healthy": nil,
		"mlx5-pfc-storm":      nil, // history only: constant counters, and no_pfc_storm has its own alert
		"ib-hdr":              nil, // nccl_env's advice to set NCCL_SOCKET_IFNAME is no fault
		"bnxt-no-counters":    nil,
		"dgx-h100-8gpu-8nic":  nil,
		// Gen5 NICs in Gen4 slots at 16 GT/s, 200G ports: the slot decides, nothing to fix.
		"mlx5-gen5-nics-in-gen4-slots": nil,
		"dgx-h100-degraded": {
			`{alertname="RoCEGPUDirectUnavailable"}`,                                   // no nvidia_peermem, proprietary driver
			`{alertname="RoCEHealthCheckFailed",check="pcie_acs_off_on_gpu_nic_path"}`, // ACS on at GPU 2's switch
			`{alertname="RoCEHealthCheckFailed",check="gpu_nic_affinity"}`,             // mlx5_3 on the other socket
			`{alertname="RoCEHealthCheckFailed",check="gpu_pcie_link_not_degraded"}`,   // GPU 5 at x8
			`{alertname="RoCEHealthCheckFailed",check="pcie_no_aer_errors"}`,           // GPU 5's AER errors
		},
		"no-rdma-driver": {
			`{alertname="RoCEHealthCheckFailed",check="rdma_driver_loaded"}`,
			`{alertname="RoCEHealthCheckFailed",check="rdma_nic_present"}`,
		},
		"mlx5-degraded": {
			`{alertname="RoCEFirmwareMismatch"}`,          // mlx5_4 on 28.37.1014, the others on 28.39.1002
			`{alertname="RoCELinkDown"}`,                  // mlx5_1 / ens2f0np0 down
			`{alertname="RoCEOpticRxPowerLow"}`,           // ens4f0np0 lane 3 dim; ens2f0np0 dark (inhibited by its RoCELinkDown)
			`{alertname="RoCEOpticTemperatureHigh"}`,      // ens4f0np0 at 72.4 °C
			`{alertname="RoCEPCIeBandwidthInsufficient"}`, // mlx5_2 x8: 252 Gb/s for a 400G port
			`{alertname="RoCEPCIeLinkDegraded"}`,          // mlx5_2 x8 of x16
			// ens4f0np0 at 1500: the doctor's finding speaks, RoCEMTUMismatch and
			// RoCEMTUFleetMismatch stand aside.
			`{alertname="RoCEHealthCheckFailed",check="roce_mtu_4096_possible"}`,
			`{alertname="RoCEHealthCheckFailed",check="ecn_enabled"}`,               // ens7f0np0
			`{alertname="RoCEHealthCheckFailed",check="global_pause_off_with_pfc"}`, // ens8f0np0
			`{alertname="RoCEHealthCheckFailed",check="pcie_no_aer_errors"}`,        // mlx5_2
			`{alertname="RoCEHealthCheckFailed",check="port_counters_readable"}`,    // mlx5_6
		},
	}
	for fixture, want := range cases {
		t.Run(fixture, func(t *testing.T) {
			firingAlertsTest(t, fixture, fixtureSamples(t, fixture), "alertname, check", want)
		})
	}
}

// One port at a wrong MTU raises exactly one alert. The node is the healthy
// 8-port capture with ens4f0np0 (mlx5_3) given the series the exporter
// exports for a port at MTU 1500: those of the same port in the degraded
// capture (interface and RoCE active MTU, the failing mtu_consistent and
// roce_mtu_4096_possible findings) and, with a plan, the failing
// mtu_matches_plan finding the plan check adds (same fix as mtu_consistent).
// A second healthy node makes the fleet's MTU 9000.
func TestOneMTUFaultRaisesOneAlert(t *testing.T) {
	healthy := fixtureSamples(t, "mlx5-8x400g-healthy")
	degraded := fixtureSamples(t, "mlx5-degraded")
	const port, dev = "ens4f0np0", "mlx5_3"
	isMTUSeries := func(m model.Metric) bool {
		switch m[model.MetricNameLabel] {
		case "roce_interface_mtu_bytes":
			return m["interface"] == port
		case "roce_port_active_mtu_bytes":
			return m["device"] == dev
		case "roce_health_check_ok", "roce_health_check_info":
			return m["subject"] == port && (m["check"] == "mtu_consistent" || m["check"] == "roce_mtu_4096_possible")
		}
		return false
	}
	// node builds node1 with the fault, or node2 without, from the captures.
	node := func(instance string, fault func(model.Vector) model.Vector, plan bool) model.Vector {
		var out model.Vector
		for _, s := range healthy {
			if fault != nil && isMTUSeries(s.Metric) {
				continue
			}
			out = append(out, &model.Sample{Metric: s.Metric.Clone(), Value: s.Value})
		}
		if fault != nil {
			for _, s := range degraded {
				if isMTUSeries(s.Metric) {
					out = append(out, &model.Sample{Metric: s.Metric.Clone(), Value: s.Value})
				}
			}
			out = fault(out)
		}
		if plan {
			// The plan check: one finding per compute interface, failing on
			// the faulty one with the mtu_consistent finding's fix.
			var add model.Vector
			for _, s := range out {
				m := s.Metric
				if m[model.MetricNameLabel] == "roce_health_check_ok" && m["check"] == "mtu_consistent" {
					ok := m.Clone()
					ok["check"] = "mtu_matches_plan"
					add = append(add, &model.Sample{Metric: ok, Value: s.Value})
				}
				if m[model.MetricNameLabel] == "roce_health_check_info" && m["check"] == "mtu_consistent" {
					info := m.Clone()
					info["check"], info["severity"] = "mtu_matches_plan", "critical"
					add = append(add, &model.Sample{Metric: info, Value: s.Value})
				}
			}
			out = append(out, add...)
		}
		for _, s := range out {
			s.Metric["instance"] = model.LabelValue(instance)
		}
		return out
	}
	at1500 := func(v model.Vector) model.Vector { return v }
	// At 4200 the port still carries 4096-byte RoCE packets: only the node's
	// MTUs differ (mtu_consistent), and roce_mtu_4096_possible passes.
	at4200 := func(v model.Vector) model.Vector {
		var out model.Vector
		for _, s := range v {
			m := s.Metric
			switch {
			case !isMTUSeries(m):
			case m[model.MetricNameLabel] == "roce_interface_mtu_bytes":
				s.Value = 4200
			case m[model.MetricNameLabel] == "roce_port_active_mtu_bytes":
				s.Value = 4096
			case m["check"] == "roce_mtu_4096_possible" && m[model.MetricNameLabel] == "roce_health_check_info":
				continue
			case m["check"] == "roce_mtu_4096_possible":
				s.Value = 1
			}
			out = append(out, s)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		fault func(model.Vector) model.Vector
		plan  bool
		want  string
	}{
		{"1500 with a plan", at1500, true, `{alertname="RoCEHealthCheckFailed",check="mtu_matches_plan",interface="ens4f0np0",severity="critical"}`},
		{"1500 without a plan", at1500, false, `{alertname="RoCEHealthCheckFailed",check="roce_mtu_4096_possible",interface="ens4f0np0",severity="warning"}`},
		{"4200 without a plan", at4200, false, `{alertname="RoCEMTUMismatch",interface="ens4f0np0",severity="warning"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			samples := append(node("node1:14791", tc.fault, tc.plan), node("node2:14791", nil, tc.plan)...)
			firingAlertsTest(t, "mtu", samples, "alertname, check, interface, severity", []string{tc.want})
		})
	}
}
