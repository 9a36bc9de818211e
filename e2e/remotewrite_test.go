//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/roce-exporter/roce_exporter/alerts"
	"github.com/roce-exporter/roce_exporter/dashboards"
	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// TestRemoteWriteVictoriaMetrics is the large-fleet layout of deploy/fleet
// on loopback: two racks, each an exporter scraped by its own Prometheus
// that evaluates alerts/ (alerts and recording rules) and remote-writes
// everything, with a rack label, into Debian's VictoriaMetrics. Every
// dashboard query and every alert and recording expression must evaluate
// in VictoriaMetrics' MetricsQL without error; every dashboard query that
// has data in a rack's Prometheus must have data there too; the fleet
// aggregates of both racks must arrive; and vmalert (the evaluator of the
// agent-mode variant) must accept the rule files.
func TestRemoteWriteVictoriaMetrics(t *testing.T) {
	prometheus := testenv.LookPath(t, "prometheus", "prometheus")
	vm := testenv.LookPath(t, "victoria-metrics", "victoria-metrics")
	vmalert := testenv.LookPath(t, "victoria-metrics", "vmalert")
	root, _ := filepath.Abs("..")
	work := t.TempDir()
	bin := filepath.Join(work, "roce_exporter")
	build := exec.Command("go", "build", "-o", bin, "./cmd/roce_exporter")
	build.Dir, build.Stderr = root, os.Stderr
	if err := build.Run(); err != nil {
		t.Fatal(err)
	}

	// vmalert validates every rule file (MetricsQL parse, templates).
	ruleFiles, _ := filepath.Glob(filepath.Join(root, "alerts", "*.yml"))
	args := []string{"-dryRun"}
	for _, f := range ruleFiles {
		args = append(args, "-rule="+f)
	}
	if out, err := exec.Command(vmalert, args...).CombinedOutput(); err != nil {
		t.Fatalf("vmalert -dryRun refuses the rule files: %v\n%s", err, tail(string(out), 3000))
	}

	// VictoriaMetrics, single node. -search.latencyOffset: by default it
	// hides the last 30 s from queries, to let late samples arrive.
	vmAddr := testenv.FreeAddr(t)
	vmLogs := &testenv.SyncBuffer{}
	vmCmd := exec.Command(vm, "-httpListenAddr="+vmAddr, "-storageDataPath="+filepath.Join(work, "vm"),
		"-retentionPeriod=1d", "-search.latencyOffset=1s", "-loggerLevel=WARN")
	vmCmd.Stdout, vmCmd.Stderr = vmLogs, vmLogs
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("victoria-metrics log (tail):\n%s", tail(vmLogs.String(), 3000))
		}
	})
	if err := testenv.StartSession(t, vmCmd); err != nil {
		t.Fatal(err)
	}
	testenv.WaitListening(t, vmAddr, 30*time.Second)

	// The rules, time-compressed as in TestPipeline, for the racks.
	rulesDir := filepath.Join(work, "rules")
	os.MkdirAll(rulesDir, 0o755)
	for _, f := range ruleFiles {
		b, _ := os.ReadFile(f)
		testenv.WriteFile(t, rulesDir, filepath.Base(f), compressRules(string(b)))
	}
	// The shipped rack config, pointed at this machine.
	rackConfig, err := os.ReadFile(filepath.Join(root, "deploy", "fleet", "prometheus-rack.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var promAddrs []string
	for i, rack := range []string{"r01", "r02"} {
		n := newNode(t, work, fmt.Sprintf("node%02d", i+1), 11+i, nil)
		n.addr = testenv.FreeAddr(t)
		startProcess(t, n.name, n.addr, nil, bin,
			"--path.sysfs="+filepath.Join(n.root, "sys"), "--path.dev="+filepath.Join(n.root, "dev"),
			"--collector.ethtool.replay-dir="+filepath.Join(n.root, "replay"), "--node.name="+n.name, "--log.level=warn")
		cfg := rackPrometheusConfig(t, string(rackConfig), rack, rulesDir, n.addr, n.name, vmAddr)
		addr := testenv.FreeAddr(t)
		startProcess(t, "prometheus-"+rack, addr, nil, prometheus,
			"--config.file="+testenv.WriteFile(t, work, "prometheus-"+rack+".yml", cfg),
			"--storage.tsdb.path="+filepath.Join(work, "tsdb-"+rack))
		promAddrs = append(promAddrs, addr)
	}

	// Both racks' fleet aggregates arrive, with their rack label.
	begin := time.Now()
	for {
		racks, err := labelValues(vmAddr, "device:roce_port_rcv_data_bytes:sum_rate5m", "rack")
		if err == nil && len(racks) == 2 {
			t.Logf("both racks' fleet aggregates in VictoriaMetrics after %s", time.Since(begin).Round(time.Second))
			break
		}
		if time.Since(begin) > 2*time.Minute {
			t.Fatalf("fleet aggregates of both racks not in VictoriaMetrics after 2m (racks %v, err %v)", racks, err)
		}
		time.Sleep(2 * time.Second)
	}
	// Let the dashboards' one-minute windows fill.
	time.Sleep(time.Minute + 10*time.Second - time.Since(begin))

	queries, err := dashboards.Queries()
	if err != nil {
		t.Fatal(err)
	}
	n, counted := 0, 0
	for _, f := range slices.Sorted(maps.Keys(queries)) {
		for _, q := range queries[f] {
			n++
			got, err := query(vmAddr, q)
			if err != nil {
				t.Errorf("%s: VictoriaMetrics refuses %s: %v", f, q, err)
				continue
			}
			inProm := 0
			for _, a := range promAddrs {
				c, err := query(a, q)
				if err != nil {
					t.Errorf("%s: Prometheus refuses %s: %v", f, q, err)
				}
				inProm += c
			}
			if inProm > 0 && got == 0 {
				t.Errorf("%s: data in the racks' Prometheus but none in VictoriaMetrics for %s", f, q)
			}
			// A count over the fleet is the racks' counts added: the
			// dialects must agree on values, not only on syntax.
			if strings.HasPrefix(q, "count(") && !strings.Contains(q, " by ") {
				var sum float64
				for _, a := range promAddrs {
					sum += scalar(t, a, q)
				}
				if v := scalar(t, vmAddr, q); v != sum {
					t.Errorf("%s: VictoriaMetrics counts %g, the racks' Prometheus %g, for %s", f, v, sum, q)
				}
				counted++
			}
		}
	}
	t.Logf("%d dashboard queries evaluated in VictoriaMetrics, %d fleet counts compared with the racks'", n, counted)
	if counted == 0 {
		t.Error("no count() query compared: the overview's fleet counts changed shape")
	}

	// Every alert and recording expression, as shipped (not compressed).
	m := 0
	for _, f := range ruleFiles {
		rf, err := alerts.ReadRuleFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range rf.Groups {
			for _, r := range g.Rules {
				m++
				if _, err := query(vmAddr, r.Expr); err != nil {
					t.Errorf("%s: %s: VictoriaMetrics refuses the expression: %v\n%s", filepath.Base(f), r.Name(), err, r.Expr)
				}
			}
		}
	}
	t.Logf("%d alert and recording expressions evaluated in VictoriaMetrics", m)
}

// scalar is the value of an instant query with one sample.
func scalar(t *testing.T, addr, q string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || len(r.Data.Result) != 1 {
		t.Errorf("%s: %s: want one sample (err %v, %d samples)", addr, q, err, len(r.Data.Result))
		return -1
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Errorf("%s: %s: value %q", addr, q, s)
	}
	return v
}

// rackPrometheusConfig fills deploy/fleet/prometheus-rack.yml for one rack
// on loopback: its one node, its rules, a 1 s scrape and evaluation
// interval, VictoriaMetrics' address, and no Alertmanager.
func rackPrometheusConfig(t *testing.T, shipped, rack, rulesDir, target, nodeName, vmAddr string) string {
	t.Helper()
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(shipped), &cfg); err != nil {
		t.Fatalf("deploy/fleet/prometheus-rack.yml: %v", err)
	}
	global, _ := cfg["global"].(map[string]any)
	if global == nil || cfg["remote_write"] == nil || cfg["scrape_configs"] == nil {
		t.Fatalf("deploy/fleet/prometheus-rack.yml lacks global, remote_write or scrape_configs")
	}
	global["scrape_interval"], global["scrape_timeout"], global["evaluation_interval"] = "1s", "900ms", "1s"
	labels, _ := global["external_labels"].(map[string]any)
	if labels["rack"] == nil {
		t.Fatal("deploy/fleet/prometheus-rack.yml: global.external_labels has no rack")
	}
	labels["rack"] = rack
	cfg["rule_files"] = []string{rulesDir + "/*.yml"}
	delete(cfg, "alerting")
	rws, _ := cfg["remote_write"].([]any)
	rw, _ := rws[0].(map[string]any)
	rw["url"] = "http://" + vmAddr + "/api/v1/write"
	qc, _ := rw["queue_config"].(map[string]any)
	if qc == nil {
		qc = map[string]any{}
		rw["queue_config"] = qc
	}
	qc["batch_send_deadline"] = "1s"
	scs, _ := cfg["scrape_configs"].([]any)
	sc, _ := scs[0].(map[string]any)
	sc["static_configs"] = []any{map[string]any{"targets": []string{target}, "labels": map[string]string{"node": nodeName}}}
	delete(sc, "file_sd_configs")
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "<") {
		t.Fatalf("placeholder left in the rack config:\n%s", out)
	}
	return string(out)
}
