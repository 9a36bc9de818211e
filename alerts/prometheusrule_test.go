package alerts

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestPrometheusRuleIsGenerated keeps the Kubernetes manifest in step with
// the tested rule files (run `make rules` after changing alerts/*.yml).
func TestPrometheusRuleIsGenerated(t *testing.T) {
	want, err := PrometheusRule(".")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "deploy", "kubernetes", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("deploy/kubernetes/prometheusrule.yaml is stale: run `make rules`")
	}
}
