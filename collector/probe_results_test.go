package collector

import (
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/probes"
)

func TestProbeResultsExported(t *testing.T) {
	store := probes.NewStore()
	avg := 66.48e9
	store.Add(&probes.Result{Probe: probes.KindNCCL, Peer: "node02", Device: "all", Start: time.Unix(1700000000, 0),
		Duration: 30 * time.Second, Success: true, Bandwidth: &probes.Bandwidth{BytesPerSecond: 237.52e9},
		NCCL: &probes.NCCL{AverageBusBandwidthBytesPerSecond: &avg, BusBandwidth: map[uint64]float64{8589934592: 237.52e9, 1024: 1.2e9}}})
	store.Add(&probes.Result{Probe: probes.KindIBWriteBW, Peer: "node02", Device: "mlx5_0", Start: time.Unix(1700000000, 0),
		Success: false, Reason: probes.ReasonBelowThreshold, Bandwidth: &probes.Bandwidth{BytesPerSecond: 20e9}})
	cfg := fixtureConfig("mlx5-8x400g-healthy", "probe")
	cfg.o.Probes = store
	e, _ := newTestExporter(t, cfg)
	out := scrape(t, e)
	if v := value(t, mustSeries(t, out, "roce_probe_bandwidth_bytes_per_second", `probe="nccl"`)); v != "2.3752e+11" {
		t.Errorf("NCCL judged bandwidth = %s, want the large-message busbw", v)
	}
	if v := value(t, mustSeries(t, out, "roce_probe_nccl_average_bus_bandwidth_bytes_per_second", `probe="nccl"`)); v != "6.648e+10" {
		t.Errorf("NCCL average = %s", v)
	}
	if len(series(out, "roce_probe_nccl_average_bus_bandwidth_bytes_per_second", `probe="ib_write_bw"`)) != 0 {
		t.Error("an average exported for a perftest run")
	}
	mustSeries(t, out, "roce_probe_nccl_bus_bandwidth_bytes_per_second", `size="8589934592"`)
	mustSeries(t, out, "roce_probe_failure_info", `device="mlx5_0"`, `reason="below_threshold"`)
	if v := value(t, mustSeries(t, out, "roce_probe_success", `device="mlx5_0"`)); v != "0" {
		t.Errorf("failed run success = %s", v)
	}
}

func TestProbesOffIsNotAFailingCollector(t *testing.T) {
	e, _ := newTestExporter(t, fixtureConfig("mlx5-8x400g-healthy", "probe"))
	out := scrape(t, e)
	if v := value(t, mustSeries(t, out, "roce_scrape_collector_success", `collector="probe"`)); v != "1" {
		t.Errorf("probe collector success = %s with probes off", v)
	}
	if len(series(out, "roce_probe_success")) != 0 {
		t.Error("probe series with probes off")
	}
}

// Stale link results are dropped and counted; the kind's bound, last run
// and the per-rail peer judgement are exported.
func TestProbeFreshnessAndJudgement(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	store := probes.NewStore()
	store.SetClock(func() time.Time { return now })
	store.SetSelf("gpu01")
	store.SetFreshness(probes.KindIBWriteBW, 3*time.Hour+90*time.Second)
	store.Add(&probes.Result{Probe: probes.KindIBWriteBW, Peer: "gpu09", Device: "mlx5_3", Rail: 3, Start: now.Add(-5 * time.Hour), Success: false, Reason: probes.ReasonBelowThreshold})
	store.Add(&probes.Result{Probe: probes.KindIBWriteBW, Peer: "gpu02", Device: "mlx5_3", Rail: 3, Start: now.Add(-2 * time.Hour), Success: false, Reason: probes.ReasonBelowThreshold})
	store.Add(&probes.Result{Probe: probes.KindIBWriteBW, Peer: "gpu03", Device: "mlx5_3", Rail: 3, Start: now.Add(-time.Hour), Success: true})
	cfg := fixtureConfig("mlx5-8x400g-healthy", "probe")
	cfg.o.Probes = store
	e, _ := newTestExporter(t, cfg)
	out := scrape(t, e)
	if len(series(out, "roce_probe_success", `peer="gpu09"`)) != 0 {
		t.Error("a stale result is still exported")
	}
	if v := value(t, mustSeries(t, out, "roce_probe_stale_results", `probe="ib_write_bw"`)); v != "1" {
		t.Errorf("stale = %s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_probe_freshness_bound_seconds", `probe="ib_write_bw"`)); v != "10890" {
		t.Errorf("bound = %s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_probe_last_completed_timestamp_seconds", `probe="ib_write_bw"`)); v != "1.7999964e+09" {
		t.Errorf("last completed = %s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_probe_peers_failed", `device="mlx5_3"`, `rail="3"`, `node="gpu01"`)); v != "1" {
		t.Errorf("peers failed = %s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_probe_peers_passed", `device="mlx5_3"`, `node="gpu01"`)); v != "1" {
		t.Errorf("peers passed = %s", v)
	}
}

// The untestable rails per pair probe, and the identity once judged: 1 on a
// mismatch, 0 when the addresses match, absent before.
func TestProbeCoverageAndIdentity(t *testing.T) {
	scrapeStore := func(store *probes.Store) string {
		t.Helper()
		cfg := fixtureConfig("mlx5-8x400g-healthy", "probe")
		cfg.o.Probes = store
		e, _ := newTestExporter(t, cfg)
		return scrape(t, e)
	}
	store := probes.NewStore()
	store.SetUntestableRails(probes.KindIBWriteBW, []int{6, 7})
	store.SetUntestableRails(probes.KindIBWriteLat, nil)
	out := scrapeStore(store)
	if v := value(t, mustSeries(t, out, "roce_probe_untestable_rails", `probe="ib_write_bw"`)); v != "2" {
		t.Errorf("untestable ib_write_bw rails = %s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_probe_untestable_rails", `probe="ib_write_lat"`)); v != "0" {
		t.Errorf("untestable ib_write_lat rails = %s", v)
	}
	if len(series(out, "roce_probe_identity_mismatch")) != 0 {
		t.Error("identity exported before it was judged")
	}
	store.SetIdentityMismatch(true)
	if v := value(t, mustSeries(t, scrapeStore(store), "roce_probe_identity_mismatch")); v != "1" {
		t.Errorf("mismatch = %s", v)
	}
	store.SetIdentityMismatch(false)
	if v := value(t, mustSeries(t, scrapeStore(store), "roce_probe_identity_mismatch")); v != "0" {
		t.Errorf("matching identity = %s", v)
	}
}
