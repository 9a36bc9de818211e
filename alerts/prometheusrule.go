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
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		g := lookup(doc.Content[0], "groups")
		if g == nil {
			return nil, fmt.Errorf("%s: no groups", name)
		}
		groups = append(groups, g.Content...)
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

func lookup(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
