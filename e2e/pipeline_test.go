//go:build e2e

// Package e2e runs the whole monitoring pipeline for real, on loopback:
// three exporters on generated nodes, one healthy, one whose counters a
// driver advances (a PFC storm, a flapping link, a probe that regresses),
// one with a single port at MTU 1500; Debian's Prometheus with the alert
// rules, Alertmanager with the shipped routing and inhibition, and a webhook
// receiver. Run it with `make e2e`.
package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/roce-exporter/roce_exporter/dashboards"
	"github.com/roce-exporter/roce_exporter/internal/sysfixture"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// timeScale compresses the rules' windows and `for` durations so that the
// pipeline shows in minutes what takes hours in production: 10m becomes
// 10s. Thresholds are untouched, so the expressions are the shipped ones.
const timeScale = 60

const deadline = 4 * time.Minute

// startProcess starts bin with --web.listen-address=addr (the exporter,
// Alertmanager and Prometheus all take it) and waits until it listens. When
// the test ends the process is killed with everything it started (the
// exporter's probe children run in process groups of their own and would
// otherwise keep writing into the test's directory), and its log is shown
// if the test failed.
func startProcess(t *testing.T, name, addr string, env []string, bin string, args ...string) {
	t.Helper()
	logs := &testenv.SyncBuffer{}
	cmd := exec.Command(bin, append(args, "--web.listen-address="+addr)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logs, logs
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s log (tail):\n%s", name, tail(logs.String(), 3000))
		}
	})
	if err := testenv.StartSession(t, cmd); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	testenv.WaitListening(t, addr, 30*time.Second)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// node is one simulated machine: a generated sysfs tree, captures, a plan
// entry and the stand-in probe programs' state.
type node struct {
	name     string
	host     int // last octet of its addresses
	root     string
	sys      *sysfixture.Node
	nics     map[string]sysfixture.NIC
	addr     string
	modeFile string
}

const rails = 2

// newNode generates a 2-rail ConnectX-7 node whose compute addresses are
// loopback addresses 127.1.<rail>.<host>: pings between nodes stay on
// this machine, and the GID table and captures agree with the plan.
func newNode(t *testing.T, dir, name string, host int, adjust func(*sysfixture.Node)) *node {
	t.Helper()
	n := sysfixture.HealthyCX7(rails)
	if adjust != nil {
		adjust(&n)
	}
	for i := range n.Devices {
		for j, g := range n.Devices[i].GIDs {
			if strings.HasPrefix(g.GID, "0000:0000:0000:0000:0000:ffff:") {
				n.Devices[i].GIDs[j].GID = fmt.Sprintf("0000:0000:0000:0000:0000:ffff:7f01:%02x%02x", i, host)
			}
		}
	}
	nd := &node{name: name, host: host, root: filepath.Join(dir, name), sys: &n, nics: map[string]sysfixture.NIC{}}
	if err := sysfixture.Write(nd.root, n); err != nil {
		t.Fatal(err)
	}
	nd.writeReplay(t)
	nd.modeFile = testenv.WriteFile(t, nd.root, "standin-mode", "bw_ok")
	return nd
}

// writeReplay rewrites the captures atomically (write, then rename), as
// a capture tool would; the exporter re-parses a capture when it changes.
func (n *node) writeReplay(t *testing.T) {
	t.Helper()
	tmp, err := os.MkdirTemp(n.root, ".replay-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	if err := sysfixture.WriteReplay(n.root, tmp, *n.sys, n.nics); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(n.root, "replay")
	os.MkdirAll(dst, 0o755)
	ents, _ := os.ReadDir(tmp)
	for _, e := range ents {
		if err := os.Rename(filepath.Join(tmp, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

// setAttr changes a sysfs attribute in place, keeping its inode: the
// exporter keeps attribute files open like it does on a real kernel.
// attrUint reads a numeric sysfs attribute of the node.
func (n *node) attrUint(t *testing.T, rel string) uint64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(n.root, "sys", rel))
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (n *node) setAttr(t *testing.T, rel, value string) {
	t.Helper()
	p, err := filepath.EvalSymlinks(filepath.Join(n.root, "sys", rel))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		os.Chmod(p, 0o644)
		if f, err = os.OpenFile(p, os.O_WRONLY, 0); err != nil {
			t.Fatal(err)
		}
	}
	defer f.Close()
	b := []byte(value + "\n")
	f.WriteAt(b, 0)
	f.Truncate(int64(len(b)))
}

func writePlan(t *testing.T, dir string, nodes []*node, standin string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "cluster: e2e\nnetworks:\n  management: 10.0.0.0/24\n  compute: [127.1.0.0/24, 127.1.1.0/24]\n")
	b.WriteString("expectations:\n  mtu: 9000\n  roce_mode: v2\n  pfc_priority: 3\n  trust: dscp\n  ecn: true\n  link_rate_gbps: 400\n  min_bandwidth_fraction: 0.3\n")
	b.WriteString("nodes:\n")
	for _, n := range nodes {
		fmt.Fprintf(&b, "  - name: %s\n    management_ip: 10.0.0.%d\n    interfaces:\n", n.name, n.host)
		for r := 0; r < rails; r++ {
			fmt.Fprintf(&b, "      - {netdev: %s, rdma_device: mlx5_%d, ip: 127.1.%d.%d/24}\n", sysfixture.Netdev(r), r, r, n.host)
		}
	}
	fmt.Fprintf(&b, `probes:
  enabled: true
  max_port_utilization: 1
  # Results must outlive a pair's next meeting: with three nodes and 4s rounds a pair
  # meets every 12s, and the 10s NCCL window can skip it twice in a row.
  fresh_rounds: 10
  ib_write_bw: {command: %[1]s/ib_write_bw, interval: 4s, timeout: 3s, jitter: 0s, duration: 1s}
  ib_write_lat: {enabled: true, command: %[1]s/ib_write_lat, interval: 6s, timeout: 3s, jitter: 0s, port_range: 18600-18610}
  nccl:
    enabled: true
    leader: %[2]s
    group_size: 0
    mpirun: %[1]s/mpirun
    command: /opt/nccl-tests/build/all_reduce_perf
    gpus_per_node: 8
    interval: 10s
    timeout: 4s
    jitter: 0s
  ping: {interval: 3s, timeout: 2s, count: 3, jitter: 0s}
`, standin, nodes[0].name)
	return testenv.WriteFile(t, dir, "cluster.yaml", b.String())
}

var (
	rangeRe = regexp.MustCompile(`\[(\d+[smhdwy])(?::(\d+[smhdwy]))?\]`)
	// forRe matches an alert's `for` and a group's own `interval`.
	forRe = regexp.MustCompile(`(?m)^(\s+(?:for|interval):\s*)(\S+)\s*$`)
)

func scaled(d string, min time.Duration) string {
	v, err := model.ParseDuration(d)
	if err != nil {
		return d
	}
	s := time.Duration(v) / timeScale
	if s < min {
		s = min
	}
	return model.Duration(s.Round(time.Second)).String()
}

// compressRules rewrites a rule file's range windows, `for` durations and
// group intervals.
func compressRules(content string) string {
	content = rangeRe.ReplaceAllStringFunc(content, func(m string) string {
		sub := rangeRe.FindStringSubmatch(m)
		out := "[" + scaled(sub[1], 4*time.Second)
		if sub[2] != "" {
			out += ":" + scaled(sub[2], time.Second)
		}
		return out + "]"
	})
	return forRe.ReplaceAllStringFunc(content, func(m string) string {
		sub := forRe.FindStringSubmatch(m)
		return sub[1] + scaled(sub[2], time.Second)
	})
}

// webhook collects what Alertmanager delivers.
type webhook struct {
	mu     sync.Mutex
	alerts []map[string]string // label sets of firing alerts, with receiver
}

func (w *webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var msg struct {
		Receiver string `json:"receiver"`
		Alerts   []struct {
			Status string            `json:"status"`
			Labels map[string]string `json:"labels"`
		} `json:"alerts"`
	}
	if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	for _, a := range msg.Alerts {
		if a.Status == "firing" {
			l := map[string]string{"_receiver": msg.Receiver, "_path": r.URL.Path}
			maps.Copy(l, a.Labels)
			w.alerts = append(w.alerts, l)
		}
	}
	w.mu.Unlock()
}

func (w *webhook) find(match map[string]string) (map[string]string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range w.alerts {
		ok := true
		for k, v := range match {
			ok = ok && a[k] == v
		}
		if ok {
			return a, true
		}
	}
	return nil, false
}

func (w *webhook) all() []map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]map[string]string(nil), w.alerts...)
}

func TestPipeline(t *testing.T) {
	prometheus := testenv.LookPath(t, "prometheus", "prometheus")
	alertmanager := testenv.LookPath(t, "prometheus-alertmanager", "prometheus-alertmanager", "alertmanager")
	root, _ := filepath.Abs("..")
	work := t.TempDir()
	bin := filepath.Join(work, "roce_exporter")
	build := exec.Command("go", "build", "-o", bin, "./cmd/roce_exporter")
	build.Dir, build.Stderr = root, os.Stderr
	if err := build.Run(); err != nil {
		t.Fatal(err)
	}
	// Stand-in probe programs, installed under their real names.
	standin := filepath.Join(work, "bin")
	os.MkdirAll(standin, 0o755)
	for name, target := range map[string]string{"ib_write_bw": "perftest", "ib_write_lat": "perftest", "mpirun": "mpirun"} {
		os.Symlink(filepath.Join(root, "probes", "testdata", "standin", target), filepath.Join(standin, name))
	}

	// The healthy node is a GPU node (the DGX H100's GPU side for its rails), so
	// the GPU panels have data and a healthy GPU side raises nothing.
	healthy := newNode(t, work, "node01", 11, sysfixture.WithGPUs)
	faulty := newNode(t, work, "node02", 12, nil)
	// One fault, one alert: rail 0 left at the default MTU, the plan says 9000.
	mtuFault := newNode(t, work, "node03", 13, func(n *sysfixture.Node) { n.Devices[0].MTU = 1500 })
	nodes := []*node{healthy, faulty, mtuFault}
	plan := writePlan(t, work, nodes, standin)

	// node02 starts with a baseline of good runs, so that a drop shows as
	// a regression without waiting for the baseline to form.
	for _, n := range nodes {
		state := filepath.Join(n.root, "state")
		os.MkdirAll(state, 0o755)
		var links []string
		for r := 0; r < rails; r++ {
			for _, peer := range nodes {
				if peer != n {
					links = append(links, fmt.Sprintf(`"ib_write_bw|%s|mlx5_%d":[49.0e9,49.0e9,49.0e9]`, peer.name, r))
				}
			}
		}
		testenv.WriteFile(t, state, "baselines.json", `{"version":1,"links":{`+strings.Join(links, ",")+`}}`)
	}

	for _, n := range nodes {
		n.addr = testenv.FreeAddr(t)
		startProcess(t, n.name, n.addr, []string{"STANDIN_DIR=" + n.root, "STANDIN_MODE_FILE=" + n.modeFile, "STANDIN_SERVER=idle"}, bin,
			"--path.sysfs="+filepath.Join(n.root, "sys"), "--path.dev="+filepath.Join(n.root, "dev"),
			"--collector.ethtool.replay-dir="+filepath.Join(n.root, "replay"), "--config.file="+plan, "--node.name="+n.name,
			"--probes.state-dir="+filepath.Join(n.root, "state"), "--collector.rdma.gid-refresh=5s", "--log.level=warn")
	}

	// Webhook receiver, and Alertmanager with the shipped routing pointed
	// at it (only timings shortened).
	hook := &webhook{}
	hookSrv := httptest.NewServer(hook)
	t.Cleanup(hookSrv.Close)
	amConfig, _ := os.ReadFile(filepath.Join(root, "deploy", "alertmanager", "alertmanager.yml"))
	am := strings.ReplaceAll(string(amConfig), "http://127.0.0.1:5001", hookSrv.URL)
	am = regexp.MustCompile(`group_wait: \S+`).ReplaceAllString(am, "group_wait: 1s")
	am = regexp.MustCompile(`group_interval: \S+`).ReplaceAllString(am, "group_interval: 2s")
	amAddr := testenv.FreeAddr(t)
	startProcess(t, "alertmanager", amAddr, nil, alertmanager, "--config.file="+testenv.WriteFile(t, work, "alertmanager.yml", am),
		"--storage.path="+filepath.Join(work, "am"), "--cluster.listen-address=")
	checkInhibition(t, amAddr, hook)

	// Prometheus with the time-compressed rules, scraping like the shipped
	// config does (instance = node name).
	rulesDir := filepath.Join(work, "rules")
	os.MkdirAll(rulesDir, 0o755)
	ruleFiles, _ := filepath.Glob(filepath.Join(root, "alerts", "*.yml"))
	for _, f := range ruleFiles {
		b, _ := os.ReadFile(f)
		testenv.WriteFile(t, rulesDir, filepath.Base(f), compressRules(string(b)))
	}
	var targets strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&targets, "      - targets: ['%s']\n        labels: {node: %s}\n", n.addr, n.name)
	}
	promConfig := fmt.Sprintf(`global: {scrape_interval: 1s, scrape_timeout: 900ms, evaluation_interval: 1s}
rule_files: ['%s/*.yml']
alerting:
  alertmanagers: [{static_configs: [{targets: ['%s']}]}]
scrape_configs:
  - job_name: roce-exporter
    static_configs:
%s    relabel_configs:
      - {source_labels: [node], target_label: instance}
      - {action: labeldrop, regex: node}
`, rulesDir, amAddr, targets.String())
	promAddr := testenv.FreeAddr(t)
	startProcess(t, "prometheus", promAddr, nil, prometheus, "--config.file="+testenv.WriteFile(t, work, "prometheus.yml", promConfig),
		"--storage.tsdb.path="+filepath.Join(work, "tsdb"))

	// The driver: at t=0 the faulty node's rail 1 starts a PFC storm on
	// priority 3, its rail 0 link flaps, and its probes regress.
	stop := make(chan struct{})
	driverDone := make(chan struct{})
	go func() {
		defer close(driverDone)
		drive(t, faulty, stop)
	}()
	t.Cleanup(func() { close(stop); <-driverDone })

	want := []map[string]string{
		{"alertname": "RoCEPFCPauseStorm", "instance": "node02", "interface": "ens2f0np0", "priority": "3", "direction": "rx", "severity": "critical", "_path": "/pager"},
		{"alertname": "RoCEPFCStormWatchdogTriggered", "instance": "node02", "interface": "ens2f0np0", "severity": "critical"},
		{"alertname": "RoCELinkFlapping", "instance": "node02", "severity": "warning"},
		{"alertname": "RoCELinkDown", "instance": "node02", "device": "mlx5_0", "severity": "critical"},
		{"alertname": "RoCEProbeBandwidthRegression", "instance": "node02", "probe": "ib_write_bw", "peer": "node01", "severity": "warning", "_path": "/ticket"},
		{"alertname": "RoCEHealthCheckFailed", "instance": "node03", "check": "mtu_matches_plan", "subject": "ens1f0np0", "device": "mlx5_0", "interface": "ens1f0np0", "severity": "warning", "_path": "/ticket"},
	}
	stopWatch := make(chan struct{})
	flapsMuted := watchLinkDownMutesFlaps(amAddr, stopWatch)
	begin := time.Now()
	for _, w := range want {
		for {
			if _, ok := hook.find(w); ok {
				t.Logf("%s arrived after %s", w["alertname"], time.Since(begin).Round(time.Second))
				break
			}
			if time.Since(begin) > deadline {
				t.Fatalf("alert %v did not arrive within %s; got:\n%s\n%s", w, deadline, describe(hook.all()), probeState(nodes))
			}
			time.Sleep(time.Second)
		}
	}
	close(stopWatch)
	if !<-flapsMuted {
		t.Error("Alertmanager never muted node02's RoCELinkFlapping (mlx5_0 / ens1f0np0) while its RoCELinkDown fired")
	}
	checkProbeWarningsNotMuted(t, amAddr)
	// The healthy node raised nothing.
	for _, a := range hook.all() {
		if a["instance"] == healthy.name {
			t.Errorf("the healthy node raised %v\n%s", a, probeState(nodes))
		}
	}

	// Every panel query of every dashboard returns data from this
	// Prometheus (rate windows need a minute of samples).
	time.Sleep(time.Minute + 10*time.Second - time.Since(begin))
	queries, err := dashboards.Queries()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	noLLDP := withoutLLDP(t, promAddr)
	hasData := func(q string) bool {
		res, err := query(promAddr, q)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			return true
		}
		return res > 0
	}
	var missing []string
	for _, f := range slices.Sorted(maps.Keys(queries)) {
		for _, q := range queries[f] {
			n++
			if !hasData(q) && !noLLDP(q) {
				missing = append(missing, f+": "+q)
			}
		}
	}
	// Asked again for half a minute, as checkDashboardsSingleValues does.
	for wait := time.Now(); len(missing) > 0 && time.Since(wait) < 30*time.Second; {
		time.Sleep(2 * time.Second)
		missing = slices.DeleteFunc(missing, func(fq string) bool { return hasData(fq[strings.Index(fq, ": ")+2:]) })
	}
	for _, fq := range missing {
		t.Errorf("no data for half a minute: %s\nlocalisation now:\n%s", fq, localisationState(promAddr))
	}
	t.Logf("%d dashboard queries checked against Prometheus", n)
	checkDashboardsSingleValues(t, promAddr, nodes)

	// The port at MTU 1500 raised exactly one alert in Prometheus (pending
	// ones included: every rule that would speak has had its `for`) and
	// Alertmanager delivered only that one, long after every rule's window.
	got, err := alertSeries(promAddr, `ALERTS{instance="node03"}`)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{`alertname=RoCEHealthCheckFailed alertstate=firing check=mtu_matches_plan`}; !slices.Equal(got, want) {
		t.Errorf("node03 (one port at MTU 1500) has alerts %q, want %q", got, want)
	}
	for _, a := range hook.all() {
		if a["instance"] == mtuFault.name && (a["alertname"] != "RoCEHealthCheckFailed" || a["check"] != "mtu_matches_plan") {
			t.Errorf("node03 (one port at MTU 1500) also raised %v", a)
		}
	}
}

// amAlert is an alert as Alertmanager's v2 API lists it.
type amAlert struct {
	Labels      map[string]string `json:"labels"`
	Fingerprint string            `json:"fingerprint"`
	Status      struct {
		State       string   `json:"state"`
		InhibitedBy []string `json:"inhibitedBy"`
	} `json:"status"`
}

func amAlerts(amAddr, filter string) ([]amAlert, error) {
	resp, err := http.Get("http://" + amAddr + "/api/v2/alerts?filter=" + url.QueryEscape(filter))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET /api/v2/alerts: %s: %s", resp.Status, body)
	}
	var out []amAlert
	return out, json.NewDecoder(resp.Body).Decode(&out)
}

func postAlerts(t *testing.T, amAddr string, alerts []map[string]string) {
	t.Helper()
	type posted struct {
		Labels   map[string]string `json:"labels"`
		StartsAt time.Time         `json:"startsAt"`
		EndsAt   time.Time         `json:"endsAt"`
	}
	var body []posted
	for _, l := range alerts {
		body = append(body, posted{Labels: l, StartsAt: time.Now(), EndsAt: time.Now().Add(10 * time.Minute)})
	}
	raw, _ := json.Marshal(body)
	resp, err := http.Post("http://"+amAddr+"/api/v2/alerts", "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST /api/v2/alerts: %s: %s", resp.Status, msg)
	}
}

// sameLabels reports whether a carries exactly the labels of want.
func sameLabels(a, want map[string]string) bool {
	return maps.Equal(a, want)
}

// checkInhibition checks the shipped inhibit rules with alerts posted to
// Alertmanager as Prometheus posts them, labelled as the rules label them
// (the health alerts with the device and interface of the finding's port):
// a critical about a port mutes the warnings about that port, and nothing
// else; a critical that names no port mutes nothing.
func checkInhibition(t *testing.T, amAddr string, hook *webhook) {
	t.Helper()
	criticals := []map[string]string{
		// Port A of posted01, known by device and interface.
		{"alertname": "RoCEHealthCheckFailed", "severity": "critical", "instance": "posted01", "check": "trust_mode_matches_plan", "subject": "ens1f0np0", "device": "mlx5_0", "interface": "ens1f0np0"},
		// Node-wide: no port.
		{"alertname": "RoCEHealthCheckFailed", "severity": "critical", "instance": "posted01", "check": "verbs_device_usable", "subject": "node"},
		// Port A of posted02, known only by its interface.
		{"alertname": "RoCEPFCPauseStorm", "severity": "critical", "instance": "posted02", "interface": "ens2f0np0", "direction": "rx", "priority": "3"},
	}
	warnings := []struct {
		labels map[string]string
		muted  bool
	}{
		{map[string]string{"alertname": "RoCEPFCOnUnexpectedPriority", "severity": "warning", "instance": "posted01", "check": "pfc_only_on_roce_priority", "subject": "ens1f0np0", "device": "mlx5_0", "interface": "ens1f0np0"}, true},
		{map[string]string{"alertname": "RoCEPacketLoss", "severity": "warning", "instance": "posted01", "device": "mlx5_0", "port": "1", "interface": "ens1f0np0"}, true},
		// Port B, C: other ports of posted01 (the labels of issue 18's report).
		{map[string]string{"alertname": "RoCEPFCOnUnexpectedPriority", "severity": "warning", "instance": "posted01", "check": "pfc_only_on_roce_priority", "subject": "ens8f0np0", "device": "mlx5_7", "interface": "ens8f0np0"}, false},
		{map[string]string{"alertname": "RoCEPortRateBelowPlan", "severity": "warning", "instance": "posted01", "check": "link_rate_matches_plan", "subject": "mlx5_3", "device": "mlx5_3", "interface": "ens4f0np0"}, false},
		// Node-wide warnings: no port to share with any critical.
		{map[string]string{"alertname": "RoCENCCLBandwidthRegression", "severity": "warning", "instance": "posted01", "probe": "nccl"}, false},
		{map[string]string{"alertname": "RoCEHealthCheckFailed", "severity": "warning", "instance": "posted01", "check": "default_roce_mode_v2", "subject": "node"}, false},
		// posted02: the same interface is muted, another interface is not,
		// nor a port known only by its device.
		{map[string]string{"alertname": "RoCEPriorityDrops", "severity": "warning", "instance": "posted02", "interface": "ens2f0np0", "direction": "rx", "priority": "3"}, true},
		{map[string]string{"alertname": "RoCEPortBufferDrops", "severity": "warning", "instance": "posted02", "interface": "ens3f0np0", "direction": "rx"}, false},
		{map[string]string{"alertname": "RoCEPacketLoss", "severity": "warning", "instance": "posted02", "device": "mlx5_1", "port": "1"}, false},
	}
	const filter = `instance=~"posted0[12]"`
	postAlerts(t, amAddr, criticals)
	// The inhibitor must know the criticals before the warnings' groups flush.
	waitAM(t, amAddr, filter, func(as []amAlert) bool { return len(as) == len(criticals) })
	var ws []map[string]string
	for _, w := range warnings {
		ws = append(ws, w.labels)
	}
	postAlerts(t, amAddr, ws)

	stateOf := func(as []amAlert, l map[string]string) (string, bool) {
		for _, a := range as {
			if sameLabels(a.Labels, l) {
				return a.Status.State, len(a.Status.InhibitedBy) > 0
			}
		}
		return "missing", false
	}
	var last []amAlert
	ok := waitAMOrFalse(amAddr, filter, func(as []amAlert) bool {
		last = as
		for _, w := range warnings {
			state, inhibited := stateOf(as, w.labels)
			if w.muted != (state == "suppressed" && inhibited) || !w.muted && state != "active" {
				return false
			}
		}
		return true
	})
	if !ok {
		for _, w := range warnings {
			if state, inhibited := stateOf(last, w.labels); inhibited != w.muted || state == "missing" {
				t.Errorf("posted warning %v: muted %v, want %v (state %s)", w.labels, inhibited, w.muted, state)
			}
		}
		return
	}
	// Every warning that is not muted reaches the ticket queue; the muted
	// ones do not, two group intervals later either.
	end := time.Now().Add(30 * time.Second)
	for _, w := range warnings {
		if w.muted {
			continue
		}
		for _, ok := hook.find(w.labels); !ok; _, ok = hook.find(w.labels) {
			if time.Now().After(end) {
				t.Fatalf("posted warning %v was not delivered; got:\n%s", w.labels, describe(hook.all()))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	time.Sleep(5 * time.Second)
	for _, w := range warnings {
		if _, delivered := hook.find(w.labels); w.muted && delivered {
			t.Errorf("posted warning %v was delivered although a critical about its port fires", w.labels)
		}
	}
}

// watchLinkDownMutesFlaps polls Alertmanager until stop is closed and
// reports whether it ever saw node02's flap warning on mlx5_0 / ens1f0np0
// muted by the link-down (critical) of the same port: the rail flaps, then
// stays down while its flaps of the last minute still fire.
func watchLinkDownMutesFlaps(amAddr string, stop <-chan struct{}) <-chan bool {
	out := make(chan bool, 1)
	go func() {
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				out <- false
				return
			case <-tick.C:
			}
			as, err := amAlerts(amAddr, `instance="node02"`)
			if err != nil {
				continue
			}
			linkDown := ""
			for _, a := range as {
				if a.Labels["alertname"] == "RoCELinkDown" && a.Labels["device"] == "mlx5_0" && a.Status.State == "active" {
					linkDown = a.Fingerprint
				}
			}
			for _, a := range as {
				l := a.Labels
				if linkDown != "" && l["alertname"] == "RoCELinkFlapping" && l["device"] == "mlx5_0" && l["interface"] == "ens1f0np0" &&
					a.Status.State == "suppressed" && slices.Contains(a.Status.InhibitedBy, linkDown) {
					out <- true
					return
				}
			}
		}
	}()
	return out
}

// checkProbeWarningsNotMuted: node02's probe warnings name the rail's
// device but no port, so neither its link-down nor its PFC storm (both
// critical, each on a port of one of those devices) mutes them.
func checkProbeWarningsNotMuted(t *testing.T, amAddr string) {
	t.Helper()
	as, err := amAlerts(amAddr, `instance="node02"`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range as {
		if strings.HasPrefix(a.Labels["alertname"], "RoCEProbe") && a.Labels["severity"] == "warning" {
			n++
			if a.Status.State != "active" {
				t.Errorf("probe warning %v is %s (inhibited by %v): a critical about one port muted a warning that names none", a.Labels, a.Status.State, a.Status.InhibitedBy)
			}
		}
	}
	if n == 0 {
		t.Error("no probe warning of node02 in Alertmanager")
	}
}

func waitAM(t *testing.T, amAddr, filter string, done func([]amAlert) bool) {
	t.Helper()
	if !waitAMOrFalse(amAddr, filter, done) {
		t.Fatalf("Alertmanager never had the alerts %s wanted", filter)
	}
}

// waitAMOrFalse polls Alertmanager's alerts matching filter for up to 20
// seconds until done accepts them.
func waitAMOrFalse(amAddr, filter string, done func([]amAlert) bool) bool {
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if as, err := amAlerts(amAddr, filter); err == nil && done(as) {
			return true
		}
	}
	return false
}

// alertSeries returns, sorted, the alertname, alertstate and check labels of
// the series an instant query returns.
func alertSeries(addr, q string) ([]string, error) {
	return querySeries(addr, q, func(s promSample) string {
		l := "alertname=" + s.Metric["alertname"] + " alertstate=" + s.Metric["alertstate"]
		if c := s.Metric["check"]; c != "" {
			l += " check=" + c
		}
		return l
	})
}

// promSample is one series of an instant vector: its labels and value.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// instantVector runs an instant query that returns a vector.
func instantVector(addr, q string) ([]promSample, error) {
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []promSample `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, err
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("%s", r.Error)
	}
	return r.Data.Result, nil
}

// checkDashboardsSingleValues evaluates every panel query with one value
// picked for each template variable, as a user does in Grafana (each
// variable's choices come from its query, given the values picked before
// it), for every combination of values. Each query must evaluate for every
// pick and return data for at least one: a filter that only works with the
// "All" regular expression, or one on a label the metric does not carry,
// shows "No data" on every pick. A query without data is asked again for
// half a minute: the suspects of three nodes come and go with each probe
// result (a peer is healthy only while its last test with the one other
// peer passed), and the question is whether the panel can show them.
func checkDashboardsSingleValues(t *testing.T, promAddr string, nodes []*node) {
	t.Helper()
	files, err := dashboards.Files()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range slices.Sorted(maps.Keys(files)) {
		tmpl, err := dashboards.ParseTemplate(files[f])
		if err != nil {
			t.Fatal(err)
		}
		picks, err := singleValuePicks(promAddr, tmpl.Variables)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		hasData := func(e string) bool {
			found := false
			for _, pick := range picks {
				q, err := dashboards.Substitute(e, pick)
				if err != nil {
					t.Fatal(err)
				}
				res, err := query(promAddr, q)
				if err != nil {
					t.Errorf("%s: %s: %v", f, q, err)
				}
				found = found || res > 0
			}
			return found
		}
		noLLDP := withoutLLDP(t, promAddr)
		var missing []string
		for _, e := range tmpl.Exprs {
			if !hasData(e) && !noLLDP(e) {
				missing = append(missing, e)
			}
		}
		for wait := time.Now(); len(missing) > 0 && time.Since(wait) < 30*time.Second; {
			time.Sleep(2 * time.Second)
			missing = slices.DeleteFunc(missing, hasData)
		}
		for _, e := range missing {
			t.Errorf("%s: no data for any single value of the variables (%d picks) for half a minute for %s\nlocalisation now:\n%s\nprobe series:\n%s",
				f, len(picks), e, localisationState(promAddr), probeState(nodes))
		}
		t.Logf("%s: %d queries checked with %d single-value picks", f, len(tmpl.Exprs), len(picks))
	}
}

// localisationState lists the localisation's records as they are now, for
// failure reports.
func localisationState(promAddr string) string {
	var b strings.Builder
	for _, q := range []string{
		"peer_rail:roce_probe_passing:max",
		"instance_rail:roce_probe_healthy_peers_failed:count",
		"instance_rail:roce_probe_nic_suspect:healthy_peers",
		"node:roce_probe_suspect_node:max",
		"instance_peer_rail:roce_probe_path_suspect:timestamp",
		"chassis_id:roce_probe_switch_suspect:failing_ratio",
	} {
		series, err := querySeries(promAddr, q, labelsAndValue)
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", q, err)
			continue
		}
		fmt.Fprintf(&b, "%s: %d series\n", q, len(series))
		for _, s := range series {
			fmt.Fprintf(&b, "  %s\n", s)
		}
	}
	return b.String()
}

// withoutLLDP returns a function that says whether a query has no data only
// because no node reports its switch: the per-switch fleet aggregates join on
// roce_lldp_neighbor_info, which nodes without lldpd (and these fixtures,
// until they carry LLDP captures) do not have.
func withoutLLDP(t *testing.T, promAddr string) func(q string) bool {
	t.Helper()
	n, err := query(promAddr, "roce_lldp_neighbor_info")
	if err != nil {
		t.Fatal(err)
	}
	return func(q string) bool { return n == 0 && strings.Contains(q, "chassis_name") }
}

// singleValuePicks lists every combination of one value per query
// variable; a variable without a query keeps its "All" value.
func singleValuePicks(promAddr string, vars []dashboards.Variable) ([]map[string]string, error) {
	picks := []map[string]string{{}}
	for _, v := range vars {
		var next []map[string]string
		for _, p := range picks {
			if v.Query == "" {
				p = maps.Clone(p)
				p[v.Name] = v.All
				next = append(next, p)
				continue
			}
			q, err := dashboards.Substitute(v.Query, p)
			if err != nil {
				return nil, err
			}
			values, err := labelValues(promAddr, q, v.Label)
			if err != nil {
				return nil, fmt.Errorf("variable %s: %s: %w", v.Name, q, err)
			}
			for _, val := range values {
				p := maps.Clone(p)
				p[v.Name] = dashboards.SingleValue(val)
				next = append(next, p)
			}
		}
		if len(next) == 0 {
			return nil, fmt.Errorf("variable %s offers no value", v.Name)
		}
		picks = next
	}
	return picks, nil
}

// labelValues runs an instant query and returns the sorted values of label
// in its result, as Grafana lists a variable's choices.
func labelValues(addr, q, label string) ([]string, error) {
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, err
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("%s", r.Error)
	}
	seen := map[string]bool{}
	for _, s := range r.Data.Result {
		if v := s.Metric[label]; v != "" {
			seen[v] = true
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// probeState shows the probe series of every node, for failure reports.
func probeState(nodes []*node) string {
	var b strings.Builder
	for _, n := range nodes {
		resp, err := http.Get("http://" + n.addr + "/metrics")
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, l := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(l, "roce_probe_success") || strings.HasPrefix(l, "roce_probe_failure_info") || strings.HasPrefix(l, "roce_probe_runs_total") {
				fmt.Fprintf(&b, "%s: %s\n", n.name, l)
			}
		}
	}
	return b.String()
}

func describe(alerts []map[string]string) string {
	var b strings.Builder
	for _, a := range alerts {
		for _, k := range slices.Sorted(maps.Keys(a)) {
			fmt.Fprintf(&b, "%s=%s ", k, a[k])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// querySeries runs an instant query and returns its series, each as format
// shows it, sorted.
func querySeries(addr, q string, format func(promSample) string) ([]string, error) {
	samples, err := instantVector(addr, q)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range samples {
		out = append(out, format(s))
	}
	slices.Sort(out)
	return out, nil
}

// labelsAndValue shows a series as {name=value, ...} value.
func labelsAndValue(s promSample) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(s.Metric)) {
		kv = append(kv, k+"="+s.Metric[k])
	}
	return fmt.Sprintf("{%s} %v", strings.Join(kv, ", "), s.Value[1])
}

// query runs an instant query and returns the number of series or samples.
func query(addr, q string) (int, error) {
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return 0, fmt.Errorf("bad response: %s", body)
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("%s", r.Error)
	}
	switch r.Data.ResultType {
	case "vector", "matrix":
		var v []json.RawMessage
		json.Unmarshal(r.Data.Result, &v)
		return len(v), nil
	}
	return 1, nil
}

// drive advances the faulty node once a second.
func drive(t *testing.T, n *node, stop chan struct{}) {
	storm := sysfixture.DefaultNIC(1)
	pauseNIC := sysfixture.DefaultNIC(0)
	// 802.3x pause left on by mistake on rail 0 (its counters feed the
	// dashboards' global pause panel).
	pauseNIC.GlobalPauseRX, pauseNIC.GlobalPauseTX = true, true
	// RDMA traffic on rail 1, 1 GB/s each way, counted by the port
	// (port_*_data, in 4-byte words) and on the PFC priority's byte
	// counters alike: the RoCE-priority share panel has a real ratio (1).
	stormBytesTX, stormBytesRX := storm.TXPrioBytes, storm.RXPrioBytes
	dataDir := "class/infiniband/mlx5_1/ports/1/counters/"
	xmit0, rcv0 := n.attrUint(t, dataDir+"port_xmit_data"), n.attrUint(t, dataDir+"port_rcv_data")
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	linkDowns := 0
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		// Storm: the switch holds priority 3 paused all the time, and the
		// NIC's watchdog fires now and then. The counter moves in 1-second
		// steps, so the compressed 5-second rate window holds 3 to 5 of
		// them per 4 seconds of samples: 1.5 s per step keeps it above 95%
		// (the critical threshold) however the steps fall.
		storm.RXPauseDurationUS += 1_500_000
		storm.RXPause += 90_000
		storm.RXPauseTransitions += 45_000
		storm.RXDiscardsPHY += 1200
		storm.RXPrioDiscards += 1200
		if i%5 == 0 {
			storm.StormWarnings++
			storm.StormErrors++
		}
		pauseNIC.LinkDownEvents = uint64(linkDowns)
		moved := uint64(i+1) * 1_000_000_000
		storm.TXPrioBytes, storm.RXPrioBytes = stormBytesTX+moved, stormBytesRX+moved
		n.setAttr(t, dataDir+"port_xmit_data", fmt.Sprint(xmit0+moved/4))
		n.setAttr(t, dataDir+"port_rcv_data", fmt.Sprint(rcv0+moved/4))
		n.nics["mlx5_1"], n.nics["mlx5_0"] = storm, pauseNIC
		if i == 3 {
			os.WriteFile(n.modeFile, []byte("bw_regressed"), 0o644)
		}
		// Flap: rail 0 goes down for 3s every 6s for half a minute, then
		// stays down (a link that flaps before it dies).
		port := "class/infiniband/mlx5_0/ports/1/"
		netdev := "class/net/" + sysfixture.Netdev(0) + "/"
		if i <= 30 && i%6 == 0 {
			linkDowns++
			n.setAttr(t, port+"state", "1: DOWN")
			n.setAttr(t, port+"phys_state", "3: Disabled")
			n.setAttr(t, netdev+"operstate", "down")
			n.setAttr(t, port+"counters/link_downed", fmt.Sprint(linkDowns))
			n.setAttr(t, netdev+"carrier_changes", fmt.Sprint(2+2*linkDowns-1))
		} else if i < 30 && i%6 == 3 {
			n.setAttr(t, port+"state", "4: ACTIVE")
			n.setAttr(t, port+"phys_state", "5: LinkUp")
			n.setAttr(t, netdev+"operstate", "up")
			n.setAttr(t, netdev+"carrier_changes", fmt.Sprint(2+2*linkDowns))
		}
		n.writeReplay(t)
	}
}
