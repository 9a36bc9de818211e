package alerts

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

// RuleFiles are the rule files, in the order they are loaded.
var RuleFiles = []string{"recording_rules.yml", "alerts.yml"}

const prometheusRuleHeader = `# Alerting and recording rules for roce_exporter, for prometheus-operator.
#
# GENERATED from alerts/*.yml by ` + "`make rules`" + ` (go run ./alerts/cmd/genprometheusrule);
# do not edit: change alerts/*.yml, which deploy/prometheus/prometheus.yml loads too.
`

// PrometheusRule renders the rule files of dir as one PrometheusRule
// manifest, so Kubernetes users get exactly the rules the tests cover.
func PrometheusRule(dir string) ([]byte, error) {
	var groups []*yaml.Node
	for _, name := range RuleFiles {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		var f struct {
			Groups yaml.Node `yaml:"groups"`
		}
		if err := yaml.Unmarshal(data, &f); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if f.Groups.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("%s: no groups", name)
		}
		groups = append(groups, f.Groups.Content...)
	}
	manifest := map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "PrometheusRule",
		"metadata": map[string]any{
			"name":      "roce-exporter",
			"namespace": "roce-exporter",
			"labels": map[string]string{
				"app.kubernetes.io/name":      "roce-exporter",
				"app.kubernetes.io/component": "exporter",
				"app.kubernetes.io/part-of":   "roce-exporter",
				"prometheus":                  "k8s",
				"role":                        "alert-rules",
			},
		},
		"spec": map[string]any{"groups": groups},
	}
	var b bytes.Buffer
	b.WriteString(prometheusRuleHeader)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(manifest); err != nil {
		return nil, err
	}
	enc.Close()
	return b.Bytes(), nil
}
