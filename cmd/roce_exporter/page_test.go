package main

import (
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/collector"
	"github.com/roce-exporter/roce_exporter/i18n"
	"github.com/roce-exporter/roce_exporter/pipeline"
	"github.com/roce-exporter/roce_exporter/probes"
	"github.com/roce-exporter/roce_exporter/reader"
)

// degradedPage renders the node page of an in-process exporter on the
// degraded fixture, with the probe results in store.
func degradedPage(t *testing.T, store *probes.Store, enabled ...string) string {
	t.Helper()
	return degradedPageIn(t, nil, store, enabled...)
}

// degradedPageIn is degradedPage in lang's language (nil: English).
func degradedPageIn(t *testing.T, lang *i18n.Printer, store *probes.Store, enabled ...string) string {
	t.Helper()
	if len(enabled) == 0 {
		enabled = []string{"dcb", "ethtool", "health", "netdev", "pcie", "probe", "rdma"}
	}
	root := filepath.Join(fixtureDir, "mlx5-degraded")
	opts := collector.Options{Enabled: enabled, NodeName: "gpu-node-07", Probes: store}
	rd, err := reader.New(reader.Options{SysPath: filepath.Join(root, "sys"), DevPath: filepath.Join(root, "dev"),
		Timeout: 10 * time.Second, Refresh: time.Minute, Sources: collector.Sources(enabled),
		ReplayDir: filepath.Join(root, "replay")}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	p, err := pipeline.New(opts.PipelineOptions(rd))
	if err != nil {
		t.Fatal(err)
	}
	e, err := collector.NewExporter(opts, p, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	body, err := renderPage(pageConfig{NodeName: "gpu-node-07", SysPath: root, MetricsPath: "/metrics", Started: now.Add(-time.Hour), Printer: lang},
		e.Status(), e.Collectors(), store, now)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

var rowStatus = regexp.MustCompile(`<tr class="(fail|warn|ok|skip)"><td>([^<]*)</td><td><code>([^<]*)</code>`)

func TestNodePageDegradedFailuresFirstWithFixes(t *testing.T) {
	page := degradedPage(t, nil)
	// The fixture's faults, as `roce_exporter doctor` reports them.
	wantFail := []string{"port_active", "global_pause_off_with_pfc", "ecn_enabled", "pcie_bandwidth_sufficient", "pcie_link_not_degraded"}
	wantWarn := []string{"mtu_consistent", "firmware_consistent", "port_counters_readable", "no_uncorrected_phy_errors"}
	var order []string
	var fails, warns []string
	for _, m := range rowStatus.FindAllStringSubmatch(page, -1) {
		order = append(order, m[1])
		switch m[1] {
		case "fail":
			fails = append(fails, m[3])
		case "warn":
			warns = append(warns, m[3])
		}
	}
	for _, id := range wantFail {
		if !contains(fails, id) {
			t.Errorf("no FAIL row for %s; FAIL rows: %v", id, fails)
		}
	}
	for _, id := range wantWarn {
		if !contains(warns, id) {
			t.Errorf("no WARN row for %s; WARN rows: %v", id, warns)
		}
	}
	// Failures first, then warnings, then what passed, then skips.
	rank := map[string]int{"fail": 0, "warn": 1, "ok": 2, "skip": 3}
	for i := 1; i < len(order); i++ {
		if rank[order[i]] < rank[order[i-1]] {
			t.Fatalf("row %d is %s after %s: failures must come first (%v)", i, order[i], order[i-1], order)
		}
	}
	if !strings.Contains(page, `<p class="verdict fail" id="verdict">FAILING: 5 failed, `) {
		t.Errorf("verdict line missing or wrong:\n%s", grepLines(page, "verdict"))
	}
	// The fix of a failure is on its row, commands as code, escaped.
	if !regexp.MustCompile(`<td><code>port_active</code></td><td><code>mlx5_1</code></td><td>[^\n]*<strong>Fix:</strong> bring the interface up: <code>ip link set dev ens2f0np0 up</code>`).MatchString(page) {
		t.Errorf("port_active row lacks its fix:\n%s", grepLines(page, "port_active"))
	}
	if !strings.Contains(page, "echo 1 &gt; /sys/class/net/ens7f0np0/ecn/roce_np/enable/3") {
		t.Error("the ECN fix is not there or not escaped")
	}
	// Collectors with their last success and duration.
	if !regexp.MustCompile(`<tr class="ok"><td>rdma</td><td>ok</td><td>\d\d:\d\d:\d\d UTC \(\d+s ago\)</td><td>[0-9.]+ (ms|µs)</td>`).MatchString(page) {
		t.Errorf("rdma collector row lacks last success or duration:\n%s", grepLines(page, "<td>rdma</td>"))
	}
	if !strings.Contains(page, "Probes are off") {
		t.Error("a node without probes must say they are off")
	}
	for _, want := range []string{"<h1>roce_exporter on <code>gpu-node-07</code></h1>", `href="/metrics"`, "<dt>version</dt>", "(up 1h0m0s)"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(strings.ToLower(page), "<script") {
		t.Error("the page must work without JavaScript")
	}
}

func TestNodePageProbesNewestFirstFailuresMarkedEscaped(t *testing.T) {
	store := probes.NewStore()
	t0 := time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)
	// Added in the order runs end; the long NCCL run started first.
	store.Add(&probes.Result{Probe: "ib_write_bw", Peer: "node02", Device: "mlx5_0", Start: t0.Add(2 * time.Minute), Success: true, Bandwidth: &probes.Bandwidth{BytesPerSecond: 49e9}})
	store.Add(&probes.Result{Probe: "nccl_all_reduce", Peer: "node03", Device: "mlx5_1", Start: t0, Success: false,
		Reason: "regression", Hint: "busbw 310 Gb/s < baseline", StderrTail: "<script>alert(1)</script> NCCL WARN\x1b]0;PWNED1\x07\x1b[2J"})
	store.Add(&probes.Result{Probe: "ping", Peer: "node04", Device: "mlx5_2", Start: t0.Add(time.Minute), Skipped: true, SkipReason: "no address"})
	page := degradedPage(t, store)
	rows := regexp.MustCompile(`<tr class="(ok|fail|skip)"><td>([^<]*)</td><td>(2026-12-03T[0-9:]+Z)</td><td>([a-z_]+)</td>`).FindAllStringSubmatch(page, -1)
	if len(rows) != 3 {
		t.Fatalf("want 3 probe rows, got %d:\n%s", len(rows), grepLines(page, "2026-12-03T"))
	}
	for i, want := range []struct{ class, result, probe string }{
		{"ok", "ok", "ib_write_bw"}, {"skip", "skipped", "ping"}, {"fail", "FAILED: regression", "nccl_all_reduce"},
	} {
		if rows[i][1] != want.class || rows[i][2] != want.result || rows[i][4] != want.probe {
			t.Errorf("probe row %d = %q %q %q, want %+v", i, rows[i][1], rows[i][2], rows[i][4], want)
		}
	}
	if strings.Contains(page, "<script>") || !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt; NCCL WARN") {
		t.Error("probe stderr must be shown escaped")
	}
	// A peer's stderr must not drive the terminal of whoever reads the page.
	if strings.ContainsAny(page, "\x1b\x07") || strings.Contains(page, "PWNED1") {
		t.Error("probe stderr reaches the page with its escape sequences")
	}
	if !strings.Contains(page, "1 of the recent probes failed") {
		t.Error("the summary must count the failed probes")
	}
}

func TestNodePageWithoutHealthCollector(t *testing.T) {
	page := degradedPage(t, nil, "rdma")
	if !strings.Contains(page, "health collector disabled") || strings.Contains(page, `<tr class="fail"><td>FAIL</td>`) {
		t.Errorf("without the health collector the page must say there is no verdict:\n%s", grepLines(page, "verdict"))
	}
	if !strings.Contains(page, "<tr class=\"skip\"><td>pcie</td><td>disabled</td>") {
		t.Errorf("disabled collectors must be listed as such:\n%s", grepLines(page, "<td>pcie</td>"))
	}
}

func TestTicksEscapesAndMarksCommands(t *testing.T) {
	for in, want := range map[string]string{
		"run `ip link set dev a<b up` now": "run <code>ip link set dev a&lt;b up</code> now",
		"odd ` tick <x>":                   "odd ` tick &lt;x&gt;",
		"plain & simple":                   "plain &amp; simple",
	} {
		if got := string(ticks(in)); got != want {
			t.Errorf("ticks(%q) = %q, want %q", in, got, want)
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Issue 27: a node with nothing to read showed a green "HEALTHY: every
// check passed or was skipped", its reason folded into "43 skipped". It has
// a state of its own, with the reason in view, and the log says so at start.
func TestNodePageNothingToCheckIsNotHealthy(t *testing.T) {
	p := startExporter(t, append(cpuNodeSysfs(t), "--node.name=cpu-01")...)
	_, page := p.get(t, "/")
	if !strings.Contains(page, `<p class="verdict empty" id="verdict">NOT AN RDMA NODE: no RDMA device and no RDMA-capable NIC on the PCI bus, and no cluster plan lists it`) {
		t.Errorf("verdict:\n%s", grepLines(page, "verdict"))
	}
	if strings.Contains(page, "HEALTHY") || !strings.Contains(page, `<p id="verdict-detail">Not one check could judge this node`) {
		t.Errorf("the empty node reads healthy, or without why:\n%s", grepLines(page, "verdict"))
	}
	// The reason is before the folded sections, not only inside them.
	if v, d := strings.Index(page, `id="verdict"`), strings.Index(page, "<details"); v < 0 || d < v {
		t.Error("the verdict is not above the folded findings")
	}
	if logs := p.logs.String(); !strings.Contains(logs, `msg="Found no RDMA device"`) {
		t.Errorf("the start-up log does not say there is no RDMA device:\n%s", logs)
	}
}

// The demo page is not titled with this machine's name over sample data.
func TestNodePageSampleIsSaidToBeASample(t *testing.T) {
	p := startExporter(t, scenarioArgs("mlx5-8x400g-healthy")...)
	_, page := p.get(t, "/")
	for _, want := range []string{
		"<title>sample node mlx5-8x400g-healthy: HEALTHY: ",
		"<h1>roce_exporter on sample node mlx5-8x400g-healthy</h1>",
		`<p class="muted" id="sample">Sample data, not this machine: the node is read from `,
		`<p class="verdict ok" id="verdict">HEALTHY: `,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, grepLines(page, "verdict"))
		}
	}
	if logs := p.logs.String(); !strings.Contains(logs, `msg="Found the node" summary="8 RDMA ports (8 up) on 8 NICs, 8 netdevs"`) {
		t.Errorf("start-up log:\n%s", logs)
	}
}
