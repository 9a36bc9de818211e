package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Probes shows the active tests between nodes: RDMA bandwidth per link
// against its expected value and baseline, NCCL bus bandwidth, latency,
// ping, failures with their reasons, and how fresh the results are.
func Probes() *dashboard.DashboardBuilder {
	d := newDashboard(UIDProbes, "RoCE / Probes",
		"Active probes between nodes: ib_write_bw bandwidth per link (node, peer, rail) against the expected bandwidth and the "+
			"link's baseline, NCCL all_reduce bus bandwidth, RDMA write latency, ping loss and RTT, failures with their reasons, "+
			"and the age of the latest results. Probes run only when probes.enabled is true in the cluster plan.",
		"now-24h")
	b := newBoard(d)

	bw := []string{dev, `probe="ib_write_bw"`}

	b.row("RDMA bandwidth per link")
	b.add(b.timeseries("Bandwidth vs expected vs baseline",
		"Measured ib_write_bw bandwidth per link (node → peer, rail device), the expected bandwidth "+
			"(port rate × min_bandwidth_fraction) and the link's own baseline (kept across restarts).",
		"Bps", 24, 9,
		q(sel("roce_probe_bandwidth_bytes_per_second", bw...), "{{instance}} → {{peer}} {{device}} measured"),
		q(sel("roce_probe_expected_bandwidth_bytes_per_second", bw...), "{{instance}} → {{peer}} {{device}} expected"),
		q(sel("roce_probe_baseline_bandwidth_bytes_per_second", bw...), "{{instance}} → {{peer}} {{device}} baseline")))
	b.add(b.table("Share of expected bandwidth per link",
		"Latest measured bandwidth divided by the expected bandwidth. Below 100% the probe fails with reason below_threshold.",
		"percentunit", 12, 9, []string{"instance", "peer", "device", "probe", "Value"},
		qt(sel("roce_probe_bandwidth_bytes_per_second", bw...)+` / on(instance, probe, peer, device) `+
			sel("roce_probe_expected_bandwidth_bytes_per_second", bw...))).
		Thresholds(thresholds("red", 1.0, "green")).
		OverrideByName("Value", []dashboard.DynamicConfigValue{
			{Id: "displayName", Value: "measured / expected"},
			{Id: "custom.cellOptions", Value: map[string]any{"type": "color-background"}},
		}))
	b.add(b.table("Share of baseline bandwidth per link",
		"Latest measured bandwidth divided by the link's baseline: a drop shows a regression even above the expected floor.",
		"percentunit", 12, 9, []string{"instance", "peer", "device", "probe", "Value"},
		qt(sel("roce_probe_bandwidth_bytes_per_second", bw...)+` / on(instance, probe, peer, device) `+
			sel("roce_probe_baseline_bandwidth_bytes_per_second", bw...))).
		Thresholds(thresholds("red", 0.9, "orange", 0.97, "green")).
		OverrideByName("Value", []dashboard.DynamicConfigValue{
			{Id: "displayName", Value: "measured / baseline"},
			{Id: "custom.cellOptions", Value: map[string]any{"type": "color-background"}},
		}))

	b.row("NCCL")
	b.add(b.timeseries("NCCL all_reduce bus bandwidth by message size",
		"Bus bandwidth of the latest nccl-tests all_reduce_perf run across the plan's nodes, per message size (bytes). "+
			"Large messages on 400G NICs should reach about 46-48 GB/s per NIC.",
		"Bps", 12, 9,
		q(sel("roce_probe_nccl_bus_bandwidth_bytes_per_second", `probe="nccl"`), "{{instance}} {{size}} B")))
	b.add(b.bargauge("Latest NCCL bus bandwidth by message size", "Latest bus bandwidth per message size (bytes).",
		"Bps", 8, 9,
		qi(`max by (size) (`+sel("roce_probe_nccl_bus_bandwidth_bytes_per_second", `probe="nccl"`)+`)`, "{{size}} B")))
	b.add(b.stat("NCCL wrong results", "Wrong or out-of-bounds results nccl-tests reported in the latest run. Anything but 0 is a "+
		"correctness problem (bad GPU, NIC or driver), not a performance one.", "short", 4, 9,
		thresholds("green", 1.0, "red"),
		qi(`max(`+sel("roce_probe_nccl_wrong_results", `probe="nccl"`)+`)`, "wrong results")))

	b.row("Results and failures")
	b.add(b.states("Probe success", "Result of the latest run of each probe per link: ok (1) or failed (0).", 24, 9,
		valueText("0", "failed", "red", "1", "ok", "green"),
		thresholds("red", 1.0, "green"),
		q(sel("roce_probe_success"), "{{instance}} {{probe}} → {{peer}} {{device}}")))
	b.add(b.table("Current failures and reasons",
		"Failing probes with their classified reason (connect_refused, gid_index, timeout, no_device, wrong_results, below_threshold, ...).",
		"short", 12, 8, []string{"instance", "probe", "peer", "device", "reason", "Value"},
		qt(sel("roce_probe_failure_info"))).
		OverrideByName("Value", []dashboard.DynamicConfigValue{{Id: "custom.hidden", Value: true}}))
	b.add(b.bars("Probe runs by result", "Probe runs per interval by probe and result.", "short", 12, 8,
		q(`sum by (instance, probe, result) (`+increase("roce_probe_runs_total")+`)`, "{{instance}} {{probe}} {{result}}")))

	b.row("Latency and ping")
	b.add(b.timeseries("RDMA write latency", "ib_write_lat latency per link by statistic (e.g. min, typical, p99, max).", "s", 8, 8,
		q(sel("roce_probe_latency_seconds", dev, `probe="ib_write_lat"`), "{{instance}} → {{peer}} {{device}} {{stat}}")))
	b.add(b.timeseries("Ping RTT", "Round-trip time of ICMP echo to each peer's compute IPs, by statistic.", "s", 8, 8,
		q(sel("roce_probe_latency_seconds", `probe="ping"`), "{{instance}} → {{peer}} {{stat}}")))
	b.add(b.timeseries("Ping loss", "Share of ICMP echo requests to each peer's compute IPs that got no reply.", "percentunit", 8, 8,
		q(sel("roce_probe_loss_ratio", `probe="ping"`), "{{instance}} → {{peer}}")))

	b.row("Freshness")
	b.add(b.table("Time since last run", "Age of the latest result per probe and link. Much older than the probe interval means the "+
		"scheduler is stuck or the probe is skipped (busy port, probes disabled).",
		"s", 12, 8, []string{"instance", "probe", "peer", "device", "Value"},
		qt(`time() - `+sel("roce_probe_last_run_timestamp_seconds"))).
		OverrideByName("Value", []dashboard.DynamicConfigValue{{Id: "displayName", Value: "age"}}))
	b.add(b.timeseries("Probe duration", "Wall-clock duration of the latest run of each probe.", "s", 12, 8,
		q(sel("roce_probe_duration_seconds"), "{{instance}} {{probe}} → {{peer}} {{device}}")))
	return d
}
