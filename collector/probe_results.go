package collector

import (
	"log/slog"
	"maps"
	"slices"
	"strconv"

	"github.com/roce-exporter/roce_exporter/pipeline"
	"github.com/roce-exporter/roce_exporter/probes"
)

func init() {
	registerDerived("probe", "Results of the scheduled fabric probes (ib_write_bw, ib_write_lat, NCCL all_reduce, ping, incast); present when the plan enables probes.", newProbeCollector)
}

var (
	probeLabels       = []string{"probe", "peer", "device"}
	probeSuccessDesc  = newGaugeDesc(namespace+"_probe_success", "1 if the last run of the probe on this link passed, 0 if it failed (see roce_probe_failure_info). Updated by the probe schedule, not at scrape time.", probeLabels...)
	probeBandwidth    = newGaugeDesc(namespace+"_probe_bandwidth_bytes_per_second", "Bandwidth measured by the last run: perftest BW average; NCCL large-message bus bandwidth (best in-place busbw at or above probes.nccl.large_message_bytes).", probeLabels...)
	probeAvgBusBW     = newGaugeDesc(namespace+"_probe_nccl_average_bus_bandwidth_bytes_per_second", "nccl-tests' own \"Avg bus bandwidth\" of the last run: the mean over every message size, far below the large-message number on a full sweep; for reference only, nothing is judged on it.", probeLabels...)
	probeExpected     = newGaugeDesc(namespace+"_probe_expected_bandwidth_bytes_per_second", "Bandwidth the link must reach: the plan's min_bandwidth_fraction times the port rate (NCCL: the plan's floor).", probeLabels...)
	probeBaseline     = newGaugeDesc(namespace+"_probe_baseline_bandwidth_bytes_per_second", "Median bandwidth of the link's recent good runs (persisted across restarts).", probeLabels...)
	probeLatency      = newGaugeDesc(namespace+"_probe_latency_seconds", "Latency measured by the last run (perftest latency test or ping round trip), by statistic.", append(probeLabels[:len(probeLabels):len(probeLabels)], "stat")...)
	probeLoss         = newGaugeDesc(namespace+"_probe_loss_ratio", "Share of pings without a reply in the last run.", probeLabels...)
	probeBusBW        = newGaugeDesc(namespace+"_probe_nccl_bus_bandwidth_bytes_per_second", "NCCL all_reduce bus bandwidth (in-place) by message size in the last run.", append(probeLabels[:len(probeLabels):len(probeLabels)], "size")...)
	probeWrong        = newGaugeDesc(namespace+"_probe_nccl_wrong_results", "Wrong or out-of-bounds results reported by nccl-tests in the last run.", probeLabels...)
	probeDuration     = newGaugeDesc(namespace+"_probe_duration_seconds", "How long the last run took.", probeLabels...)
	probeLastRun      = newGaugeDesc(namespace+"_probe_last_run_timestamp_seconds", "When the last run started (Unix time).", probeLabels...)
	probeRuns         = newCounterDesc(namespace+"_probe_runs_total", "Probe runs by result: success, failure, or skipped (port busy, device in use, NCCL window).", "probe", "result")
	probeFailureInfo  = newGaugeDesc(namespace+"_probe_failure_info", "Why the last run of the probe failed; value is always 1.", append(probeLabels[:len(probeLabels):len(probeLabels)], "reason")...)
	probeStatOrdering = []string{"avg", "min", "max", "p99"}
)

// probeCollector exports the probe scheduler's latest results; they are
// updated by the schedule, not at scrape time.
type probeCollector struct{ opts *Options }

func newProbeCollector(o *Options, _ *slog.Logger) Collector { return &probeCollector{opts: o} }

func (c *probeCollector) Update(_ *pipeline.Collection, out *Sink) error {
	store := c.opts.Probes
	if store == nil {
		// Probes off in the plan is nothing to do, not a failure: success 0
		// here showed "Collectors failing: 1" on every healthy node.
		return nil
	}
	updateProbeState(store, out)
	for _, r := range store.Latest() {
		l := []string{r.Probe, r.Peer, r.Device}
		out.emit(probeSuccessDesc, boolFloat(r.Success), l...)
		out.emit(probeDuration, r.Duration.Seconds(), l...)
		out.emit(probeLastRun, float64(r.Start.UnixNano())/1e9, l...)
		if bw := r.Bandwidth; bw != nil {
			if bw.BytesPerSecond > 0 {
				out.emit(probeBandwidth, bw.BytesPerSecond, l...)
			}
			if bw.ExpectedBytesPerSecond > 0 {
				out.emit(probeExpected, bw.ExpectedBytesPerSecond, l...)
			}
			if bw.BaselineBytesPerSecond > 0 {
				out.emit(probeBaseline, bw.BaselineBytesPerSecond, l...)
			}
		}
		if r.Latency != nil {
			for _, stat := range probeStatOrdering {
				if v, ok := r.Latency.Seconds[stat]; ok {
					out.emit(probeLatency, v, r.Probe, r.Peer, r.Device, stat)
				}
			}
		}
		if r.Ping != nil {
			out.emit(probeLoss, r.Ping.LossRatio, l...)
		}
		if r.Probe == probes.KindNCCL || r.Probe == probes.KindNCCLGroup {
			var wrong int64
			if r.NCCL != nil {
				if avg := r.NCCL.AverageBusBandwidthBytesPerSecond; avg != nil {
					out.emit(probeAvgBusBW, *avg, l...)
				}
				for _, size := range slices.Sorted(maps.Keys(r.NCCL.BusBandwidth)) {
					out.emit(probeBusBW, r.NCCL.BusBandwidth[size], r.Probe, r.Peer, r.Device, strconv.FormatUint(size, 10))
				}
				wrong = r.NCCL.WrongResults
			}
			out.emit(probeWrong, float64(wrong), l...)
		}
		if !r.Success && r.Reason != "" {
			out.emit(probeFailureInfo, 1, r.Probe, r.Peer, r.Device, r.Reason)
		}
	}
	for _, rc := range store.Runs() {
		out.emit(probeRuns, float64(rc.Count), rc.Probe, rc.Result)
	}
	updateProbeFleet(store, out)
	return nil
}
