package deploy

import (
	"os"
	"os/exec"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// The large-fleet layout (deploy/fleet): the rack Prometheus evaluates the
// rules, labels its samples with its rack and remote-writes them; the agent
// variant evaluates nothing. e2e's TestRemoteWriteVictoriaMetrics runs the
// rack file for real.
func TestFleetPrometheusConfigs(t *testing.T) {
	type config struct {
		Global struct {
			ExternalLabels map[string]string `yaml:"external_labels"`
		} `yaml:"global"`
		RuleFiles   []string `yaml:"rule_files"`
		RemoteWrite []struct {
			URL string `yaml:"url"`
		} `yaml:"remote_write"`
		Alerting      map[string]any `yaml:"alerting"`
		ScrapeConfigs []struct {
			JobName string `yaml:"job_name"`
		} `yaml:"scrape_configs"`
	}
	promtool := testenv.LookPath(t, "prometheus", "promtool")
	for _, tc := range []struct {
		file  string
		rules bool
	}{{"fleet/prometheus-rack.yml", true}, {"fleet/prometheus-agent.yml", false}} {
		raw, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		var c config
		if err := yaml.Unmarshal(raw, &c); err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if c.Global.ExternalLabels["rack"] == "" {
			t.Errorf("%s: no rack external label: the racks' aggregates would collide in the store", tc.file)
		}
		if len(c.RemoteWrite) != 1 || c.RemoteWrite[0].URL == "" {
			t.Errorf("%s: want one remote_write", tc.file)
		}
		if len(c.ScrapeConfigs) != 1 || c.ScrapeConfigs[0].JobName != "roce-exporter" {
			t.Errorf("%s: want one scrape config with job_name roce-exporter (the alerts select it)", tc.file)
		}
		if got := len(c.RuleFiles) > 0 && c.Alerting != nil; got != tc.rules {
			t.Errorf("%s: evaluates rules and sends alerts: %v, want %v", tc.file, got, tc.rules)
		}
		if out, err := exec.Command(promtool, "check", "config", tc.file).CombinedOutput(); err != nil {
			t.Errorf("promtool check config %s: %v\n%s", tc.file, err, out)
		}
	}
}
