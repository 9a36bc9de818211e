package collector

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
	"github.com/roce-exporter/roce_exporter/node"
)

func replayConfig(scenario string, collectors ...string) *setup {
	cfg := fixtureConfig(scenario, collectors...)
	cfg.ro.ReplayDir = filepath.Join(fixtures, scenario, "replay")
	return cfg
}

func TestEthtoolHealthyReplay(t *testing.T) {
	e, _ := newTestExporter(t, replayConfig("mlx5-8x400g-healthy", "ethtool"))
	out := scrape(t, e)
	// PFC is on priority 3 only: mlx5 shows pause counters only there, and
	// an absent priority is absent, not 0.
	mustSeries(t, out, "roce_pfc_pause_frames_total", `interface="ens1f0np0"`, `direction="rx"`, `priority="3"`)
	if s := series(out, "roce_pfc_pause_frames_total", `priority="0"`); len(s) != 0 {
		t.Errorf("priority without PFC reported: %v", s)
	}
	// 5933 µs of rx pause on rail 0.
	if v := value(t, mustSeries(t, out, "roce_pfc_pause_duration_seconds_total", `interface="ens1f0np0"`, `direction="rx"`)); v != "0.005933" {
		t.Errorf("pause duration = %s s, want 0.005933", v)
	}
	if v := value(t, mustSeries(t, out, "roce_phy_fec_corrected_bit_errors_total", `interface="ens1f0np0"`)); v != "10771" {
		t.Errorf("corrected bits = %s", v)
	}
	mustSeries(t, out, "roce_priority_bytes_total", `interface="ens1f0np0"`, `direction="tx"`, `priority="3"`)
	mustSeries(t, out, "roce_priority_discards_total", `interface="ens1f0np0"`, `reason="discard"`, `priority="3"`)
	mustSeries(t, out, "roce_pfc_pause_storm_events_total", `interface="ens1f0np0"`, `severity="error"`)
	if v := value(t, mustSeries(t, out, "roce_global_pause_enabled", `interface="ens1f0np0"`, `direction="rx"`)); v != "0" {
		t.Errorf("global pause rx = %s", v)
	}
	if n := len(series(out, "roce_pfc_pause_frames_total", `direction="rx"`)); n != 8 {
		t.Errorf("want rx pause frames on 8 interfaces, got %d", n)
	}
	if len(series(out, "roce_ethtool_rx0_packets")) != 0 {
		t.Error("raw stats exported without --collector.ethtool.raw-include")
	}
}

func TestEthtoolStormReplay(t *testing.T) {
	e, _ := newTestExporter(t, replayConfig("mlx5-pfc-storm", "ethtool"))
	out := scrape(t, e)
	if v := value(t, mustSeries(t, out, "roce_pfc_pause_storm_events_total", `interface="ens3f0np0"`, `severity="error"`)); v != "3" {
		t.Errorf("storm errors = %s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_phy_discards_total", `interface="ens3f0np0"`, `direction="rx"`)); v != "1.203344e+06" {
		t.Errorf("rx_discards_phy = %s", v)
	}
	snap := snapshot(e)
	st := snap.Ethtool["ens3f0np0"]
	if st == nil {
		t.Fatal("no ethtool snapshot for the storming interface")
	}
	if v, ok := st.Get(node.FamilyPFCPauseDuration, node.DirRX, 3, ""); !ok || v != 4812345678901 {
		t.Errorf("snapshot pause duration = %d, %v", v, ok)
	}
}

// mlx5's rx_prio<N>_buf_discard, _cong_discard and _marked count traffic
// class N: they are exported under tc, never under priority. Drops in TC 0
// (priority 1's class under the default map) and marks in TC 5 are
// exported because they moved; the classes whose counters never moved are
// not, not even TC 3, where the RoCE priority 3 is.
func TestEthtoolTrafficClassCounters(t *testing.T) {
	dir := onePortReplay(t, strings.NewReplacer(
		"rx_prio0_buf_discard: 0\n", "rx_prio0_buf_discard: 7\n",
		"rx_prio0_cong_discard: 0\n", "rx_prio0_cong_discard: 2\n",
		"rx_prio5_marked: 0\n", "rx_prio5_marked: 11\n"))
	if b, _ := os.ReadFile(filepath.Join(dir, "ens1f0np0.txt")); !strings.Contains(string(b), "rx_prio0_buf_discard: 7") {
		t.Fatal("capture has no rx_prio0_buf_discard line")
	}
	cfg := fixtureConfig("mlx5-8x400g-healthy", "ethtool")
	cfg.ro.ReplayDir = dir
	e, _ := newTestExporter(t, cfg)
	out := scrape(t, e)
	if v := value(t, mustSeries(t, out, "roce_traffic_class_discards_total", `interface="ens1f0np0"`, `direction="rx"`, `tc="0"`, `reason="buffer"`)); v != "7" {
		t.Errorf("TC 0 buffer discards = %s, want 7", v)
	}
	if v := value(t, mustSeries(t, out, "roce_traffic_class_discards_total", `interface="ens1f0np0"`, `tc="0"`, `reason="congestion"`)); v != "2" {
		t.Errorf("TC 0 congestion discards = %s, want 2", v)
	}
	if v := value(t, mustSeries(t, out, "roce_traffic_class_ecn_marked_packets_total", `interface="ens1f0np0"`, `tc="5"`)); v != "11" {
		t.Errorf("TC 5 marked = %s, want 11", v)
	}
	if s := series(out, "roce_traffic_class_discards_total", `tc="3"`); len(s) != 0 {
		t.Errorf("class whose counters never moved exported: %q", s)
	}
	for _, s := range series(out, "roce_priority_discards_total") {
		if !strings.Contains(s, `reason="discard"`) {
			t.Errorf("per-TC drops exported per priority: %s", s)
		}
	}
	if s := series(out, "roce_priority_ecn_marked_packets_total"); len(s) != 0 {
		t.Errorf("per-TC marks exported per priority: %q", s)
	}
}

// onePortReplay is a replay directory with the healthy node's ethtool
// captures of ens1f0np0 only, edited by edit.
func onePortReplay(t *testing.T, edit *strings.Replacer) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(fixtures, "mlx5-8x400g-healthy", "replay")
	for _, f := range []string{"ens1f0np0.txt", "ens1f0np0.pause.txt"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(edit.Replace(string(b))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestEthtoolInterfaceWithoutCaptureIsQuiet(t *testing.T) {
	dir := onePortReplay(t, strings.NewReplacer())
	cfg := fixtureConfig("mlx5-8x400g-healthy", "ethtool")
	cfg.ro.ReplayDir = dir
	e, logs := newTestExporter(t, cfg)
	out := scrape(t, e)
	if v := value(t, mustSeries(t, out, "roce_scrape_collector_success", `collector="ethtool"`)); v != "1" {
		t.Errorf("success = %s", v)
	}
	if n := len(series(out, "roce_pfc_pause_frames_total", `direction="rx"`)); n != 1 {
		t.Errorf("want one interface, got %d", n)
	}
	if strings.Contains(logs.String(), "level=WARN") || strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("interfaces without statistics must be skipped quietly:\n%s", logs)
	}
}

func TestEthtoolStringTableChangeRebuildsMapping(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "ens1f0np0.txt"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root := writeNode(t, sysfixture.HealthyCX7(1))
	cfg := testConfig(root, "ethtool")
	cfg.ro.ReplayDir = dir
	e, _ := newTestExporter(t, cfg)

	write("NIC statistics:\n     rx_prio3_pause: 10\n     rx_prio3_pause_duration: 1000\n     rx_discards_phy: 1\n")
	out := scrape(t, e)
	mustSeries(t, out, "roce_pfc_pause_frames_total", `priority="3"`)
	// PFC moved to priority 4: same stat count, different names.
	write("NIC statistics:\n     rx_prio4_pause: 10\n     rx_prio4_pause_duration: 1000\n     rx_discards_phy: 2\n")
	out = scrape(t, e)
	if len(series(out, "roce_pfc_pause_frames_total", `priority="3"`)) != 0 {
		t.Error("stale mapping: priority 3 still reported")
	}
	mustSeries(t, out, "roce_pfc_pause_frames_total", `priority="4"`)
	// Priority 5 enabled as well: the count grows.
	write("NIC statistics:\n     rx_prio4_pause: 11\n     rx_prio5_pause: 3\n     rx_prio4_pause_duration: 1000\n     rx_discards_phy: 2\n")
	out = scrape(t, e)
	if v := value(t, mustSeries(t, out, "roce_pfc_pause_frames_total", `priority="5"`)); v != "3" {
		t.Errorf("prio5 = %s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_pfc_pause_frames_total", `priority="4"`)); v != "11" {
		t.Errorf("prio4 = %s", v)
	}
}

func TestEthtoolVendorNamesThroughCollector(t *testing.T) {
	for _, tc := range []struct {
		file  string
		check func(t *testing.T, out string)
	}{
		{"bnxt_en-ethtool-S.txt", func(t *testing.T, out string) {
			// bnxt reports all eight priorities (rx_pfc_ena_frames_pri0..7).
			if v := value(t, mustSeries(t, out, "roce_pfc_pause_frames_total", `direction="rx"`, `priority="3"`)); v != "5521" {
				t.Errorf("bnxt rx prio3 pause = %s", v)
			}
			mustSeries(t, out, "roce_phy_fec_corrected_bit_errors_total")
		}},
		{"ice-ethtool-S.txt", func(t *testing.T, out string) {
			mustSeries(t, out, "roce_pfc_pause_frames_total", `direction="tx"`, `priority="3"`)
			mustSeries(t, out, "roce_global_pause_frames_total", `direction="rx"`)
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "internal", "nicstats", "testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "ens1f0np0.txt"), b, 0o644)
			cfg := testConfig(writeNode(t, sysfixture.HealthyCX7(1)), "ethtool")
			cfg.ro.ReplayDir = dir
			e, _ := newTestExporter(t, cfg)
			tc.check(t, scrape(t, e))
		})
	}
}

func TestEthtoolRawInclude(t *testing.T) {
	cfg := replayConfig("mlx5-8x400g-healthy", "ethtool")
	cfg.ro.EthtoolRawInclude = mustRegexp(t, `^(rx\d+_packets|outbound_pci_stalled_rd)$`)
	e, _ := newTestExporter(t, cfg)
	out := scrape(t, e)
	if v := value(t, mustSeries(t, out, "roce_ethtool_rx0_packets", `interface="ens1f0np0"`)); v != "458053" {
		t.Errorf("raw rx0_packets = %s", v)
	}
	mustSeries(t, out, "roce_ethtool_outbound_pci_stalled_rd", `interface="ens2f0np0"`)
	if len(series(out, "roce_ethtool_tx0_packets")) != 0 {
		t.Error("raw stat outside the regexp exported")
	}
}

func TestEthtoolGarbageCaptureIsCounted(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "ens1f0np0.txt"), []byte("this is not ethtool output\n"), 0o644)
	cfg := testConfig(writeNode(t, sysfixture.HealthyCX7(1)), "ethtool")
	cfg.ro.ReplayDir = dir
	e, _ := newTestExporter(t, cfg)
	out := scrape(t, e)
	if v := value(t, mustSeries(t, out, "roce_scrape_read_errors_total", `collector="ethtool"`)); v != "1" {
		t.Errorf("read errors = %s", v)
	}
}

func TestDCBHealthyReplay(t *testing.T) {
	e, _ := newTestExporter(t, replayConfig("mlx5-8x400g-healthy", "dcb"))
	out := scrape(t, e)
	if v := value(t, mustSeries(t, out, "roce_pfc_enabled", `interface="ens1f0np0"`, `priority="3"`)); v != "1" {
		t.Errorf("pfc prio3 = %s", v)
	}
	// Without the ethtool source no traffic is known and there is no plan:
	// the PFC priority matters, and the CNP priority (cnp_802p_prio 6).
	if s := series(out, "roce_pfc_enabled", `interface="ens1f0np0"`); len(s) != 2 {
		t.Errorf("pfc_enabled on the PFC and CNP priorities only, got %q", s)
	}
	if v := value(t, mustSeries(t, out, "roce_pfc_enabled", `interface="ens1f0np0"`, `priority="6"`)); v != "0" {
		t.Errorf("pfc on the CNP priority = %s", v)
	}
	mustSeries(t, out, "roce_dcb_trust_info", `interface="ens5f0np0"`, `trust="dscp"`)
	// ECN is on for all 8 priorities: one series says so.
	if v := value(t, mustSeries(t, out, "roce_ecn_enabled", `interface="ens1f0np0"`, `priority="all"`, `role="rp"`)); v != "1" {
		t.Errorf("ecn rp all = %s", v)
	}
	if s := series(out, "roce_ecn_enabled", `interface="ens1f0np0"`); len(s) != 2 {
		t.Errorf("uniform ECN: want one series per role, got %q", s)
	}
}

// With the ethtool counters, priorities that carry traffic join the PFC
// priority; --collector.priority.all brings back all eight.
func TestDCBPrioritiesThatMatter(t *testing.T) {
	e, _ := newTestExporter(t, replayConfig("mlx5-8x400g-healthy", "dcb", "ethtool"))
	out := scrape(t, e)
	if v := value(t, mustSeries(t, out, "roce_pfc_enabled", `interface="ens1f0np0"`, `priority="0"`)); v != "0" {
		t.Errorf("pfc prio0 (carries TCP traffic) = %s", v)
	}
	for _, fam := range []string{"roce_pfc_enabled", "roce_priority_packets_total", "roce_priority_bytes_total", "roce_priority_discards_total"} {
		if s := series(out, fam, `interface="ens1f0np0"`, `priority="5"`); len(s) != 0 {
			t.Errorf("%s on an idle priority without PFC: %q", fam, s)
		}
	}
	mustSeries(t, out, "roce_priority_discards_total", `interface="ens1f0np0"`, `priority="3"`)

	cfg := replayConfig("mlx5-8x400g-healthy", "dcb", "ethtool")
	cfg.o.AllPriorities = true
	e, _ = newTestExporter(t, cfg)
	out = scrape(t, e)
	if s := series(out, "roce_pfc_enabled", `interface="ens1f0np0"`); len(s) != 8 {
		t.Errorf("--collector.priority.all: want 8 pfc_enabled, got %q", s)
	}
	if s := series(out, "roce_ecn_enabled", `interface="ens1f0np0"`, `priority="all"`); len(s) != 0 {
		t.Errorf("--collector.priority.all keeps per-priority ECN, got %q", s)
	}
	mustSeries(t, out, "roce_priority_packets_total", `interface="ens1f0np0"`, `direction="rx"`, `priority="5"`)
}

func TestDCBDegradedReplay(t *testing.T) {
	e, _ := newTestExporter(t, replayConfig("mlx5-degraded", "dcb", "ethtool"))
	out := scrape(t, e)
	mustSeries(t, out, "roce_dcb_trust_info", `interface="ens1f0np0"`, `trust="pcp"`)
	// No plan and no traffic on 3 on this card, but the default RoCE DSCP
	// (26) maps to 3: the priority RoCE is marked for matters, and its PFC
	// is off.
	if v := value(t, mustSeries(t, out, "roce_pfc_enabled", `interface="ens8f0np0"`, `priority="3"`)); v != "0" {
		t.Errorf("wrong-priority card, priority 3 = %s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_pfc_enabled", `interface="ens8f0np0"`, `priority="0"`)); v != "1" {
		t.Errorf("wrong-priority card prio0 = %s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_ecn_enabled", `interface="ens7f0np0"`, `priority="3"`, `role="np"`)); v != "0" {
		t.Errorf("ECN disabled on prio 3 reports %s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_global_pause_enabled", `interface="ens8f0np0"`, `direction="tx"`)); v != "1" {
		t.Errorf("global pause = %s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_phy_uncorrected_symbol_errors_total", `interface="ens6f0np0"`)); v != "37" {
		t.Errorf("uncorrected symbol errors = %s", v)
	}
}

func TestDCBWithoutSupportIsQuiet(t *testing.T) {
	cfg := fixtureConfig("mlx5-8x400g-healthy", "dcb")
	cfg.ro.ReplayDir = t.TempDir() // no captures at all
	e, logs := newTestExporter(t, cfg)
	out := scrape(t, e)
	// The healthy fixture has MLNX_OFED ECN files, so the collector still
	// reports those even without any PFC source.
	if len(series(out, "roce_pfc_enabled")) != 0 {
		t.Error("PFC state invented without a source")
	}
	mustSeries(t, out, "roce_ecn_enabled", `interface="ens1f0np0"`, `priority="all"`, `role="np"`)
	if strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("missing DCB support must not warn:\n%s", logs)
	}
}

func TestEveryFamilyHasAMetric(t *testing.T) {
	for f := node.FamilyUnmapped + 1; f < node.NumFamilies; f++ {
		m := familyMetrics[f]
		if !f.Exported() {
			if m.desc != nil {
				t.Errorf("%v: internal family exported as %s", f, m.desc.name)
			}
			continue
		}
		if m.desc == nil {
			t.Errorf("%v: no metric", f)
			continue
		}
		if !strings.HasPrefix(m.desc.name, "roce_") || !strings.HasSuffix(m.desc.name, "_total") {
			t.Errorf("%v: metric name %q", f, m.desc.name)
		}
		if m.desc.help == "" || m.scale <= 0 {
			t.Errorf("%v: help %q scale %v", f, m.desc.help, m.scale)
		}
	}
}
