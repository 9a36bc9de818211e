package dashboards

import (
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/alerts"
)

// The recording rules of alerts/ a dashboard may query instead of raw
// series: all of them keep the labels their level names (and job and
// instance); those of the fleet group aggregate nodes away, so they carry
// no instance and ignore the node selection.
// The rule files of alerts/: recording_rules.yml, and alerts.yml, whose
// groups record the rates their alerts share.
var ruleFiles = []string{"../alerts/recording_rules.yml", "../alerts/alerts.yml"}

const (
	fleetRulesGroup        = "roce-fleet.rules"
	localisationRulesGroup = "roce-probe-localisation.rules"
)

var (
	recordedMetrics = map[string]bool{}
	fleetMetrics    = map[string]bool{}
)

// levelLabels are the labels a recording rule's level may name, longest
// first so that chassis_name is not read as chassis + name.
var levelLabels = []string{"chassis_name", "chassis_id", "interface", "direction", "priority", "severity", "instance", "hca_type", "reporter", "devlink", "device", "params", "port", "peer", "rail", "node", "job"}

// loadRecorded adds every recorded series of alerts/ to metrics, with the
// labels its level names, and fills recordedMetrics and fleetMetrics.
func loadRecorded(t *testing.T, metrics map[string]*metricInfo) {
	t.Helper()
	for _, path := range ruleFiles {
		loadRecordedFile(t, path, metrics)
	}
}

func loadRecordedFile(t *testing.T, path string, metrics map[string]*metricInfo) {
	t.Helper()
	f, err := alerts.ReadRuleFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Record == "" {
				continue
			}
			recordedMetrics[r.Record] = true
			// The localisation's levels name every label they keep: one
			// without instance (a switch, a node name) is the fleet's, like
			// the fleet aggregates.
			level := strings.Split(r.Record, ":")[0]
			if g.Name == fleetRulesGroup || g.Name == localisationRulesGroup && !strings.Contains(level, "instance") {
				fleetMetrics[r.Record] = true
			}
			mi := &metricInfo{typ: "gauge", labels: map[string]bool{}}
			for level != "" {
				found := false
				for _, l := range levelLabels {
					if strings.HasPrefix(level, l) {
						mi.labels[l] = true
						level = strings.TrimPrefix(strings.TrimPrefix(level, l), "_")
						found = true
						break
					}
				}
				if !found {
					t.Fatalf("%s: level names an unknown label at %q", r.Record, level)
				}
			}
			metrics[r.Record] = mi
		}
	}
}

func TestRecordedMetricsLoaded(t *testing.T) {
	metrics := knownMetrics(t)
	mi := metrics["chassis_name_direction:roce_pfc_pause_duration_seconds:max_rate5m"]
	if mi == nil || !mi.labels["chassis_name"] || !mi.labels["direction"] || mi.labels["device"] {
		t.Fatalf("fleet rule not loaded with its level's labels: %+v", mi)
	}
	if mi := metrics["job_hca_type_params:roce_dcqcn_params_info:count"]; mi == nil || !mi.labels["job"] || !mi.labels["hca_type"] || !mi.labels["params"] {
		t.Fatalf("a job-level rule not loaded with its level's labels: %+v", mi)
	}
	if !fleetMetrics["device:roce_hw_np_cnp_sent:sum_rate5m"] || fleetMetrics["device_port:roce_hw_np_cnp_sent:rate5m"] {
		t.Error("fleet and per-port recorded series are told apart wrongly")
	}
	// A fleet aggregate needs no instance filter, a per-port one does, and
	// a name no rule records is refused.
	devs := map[string]bool{"device:roce_hw_np_cnp_sent:sum_rate5m": true, "device_port:roce_hw_np_cnp_sent:rate5m": true}
	for expr, want := range map[string]string{
		`sum by (device) (device:roce_hw_np_cnp_sent:sum_rate5m{device=~"$device"})`:                 "",
		`sum by (device) (device:roce_hw_np_cnp_sent:sum_rate5m)`:                                    `no device=~"$device"`,
		`topk(10, device_port:roce_hw_np_cnp_sent:rate5m{device=~"$device"})`:                        `no instance=~"$instance"`,
		`topk(10, device_port:roce_hw_np_cnp_sent:rate5m{instance=~"$instance", device=~"$device"})`: "",
		`sum by (device) (device:roce_hw_np_cnp_sent:sum_rate1h{device=~"$device"})`:                 "no recording rule",
	} {
		problems := strings.Join(lintExpr(expr, nil, devs, true), "; ")
		if want == "" && problems != "" || want != "" && !strings.Contains(problems, want) {
			t.Errorf("lint %s: got %q, want %q", expr, problems, want)
		}
	}
}
