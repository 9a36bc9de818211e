package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/roce-exporter/roce_exporter/internal/safefile"
	"github.com/roce-exporter/roce_exporter/probes"
)

// maxMetricsBytes bounds the exposition `probe judge` reads: a 32-port node
// with every collector is about half a megabyte; a cut one would be
// judged on a part of its rails.
const maxMetricsBytes = 64 << 20

// judge fetches the running exporter's metrics and prints the judgement.
func (p *probeCommand) judge(w io.Writer) int {
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(*p.judgeURL)
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter: cannot read the exporter's metrics: %v\n", err)
		return 2
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(os.Stderr, "roce_exporter: %s answered %s\n", *p.judgeURL, resp.Status)
		return 2
	}
	body, err := safefile.ReadAll(resp.Body, maxMetricsBytes)
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter: cannot read the exporter's metrics: %v\n", err)
		return 2
	}
	js, rails, err := judgementFromMetrics(bytes.NewReader(body))
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter: %v\n", err)
		return 2
	}
	prom := ""
	if p.judgePrometheus != nil {
		prom = *p.judgePrometheus
	}
	fleet := &fleetView{prometheus: prom, rails: func() map[string]probes.RailSwitch { return rails }}
	return printJudgement(w, js, fleet.view(context.Background()))
}

// judgementFromMetrics rebuilds the per-rail judgement from the exposition:
// roce_probe_peers_failed/_passed per rail, and the failed peers from
// roce_probe_success == 0 per link; and each device's switch from
// roce_port_info (device → interface) and roce_lldp_neighbor_info.
func judgementFromMetrics(r io.Reader) ([]probes.DeviceJudgement, map[string]probes.RailSwitch, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot parse the metrics: %w", err)
	}
	label := func(m *dto.Metric, name string) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		return ""
	}
	byDev := map[[2]string]*probes.DeviceJudgement{}
	get := func(probe, device string) *probes.DeviceJudgement {
		k := [2]string{probe, device}
		if byDev[k] == nil {
			byDev[k] = &probes.DeviceJudgement{Probe: probe, Device: device}
		}
		return byDev[k]
	}
	for _, name := range []string{"roce_probe_peers_failed", "roce_probe_peers_passed"} {
		for _, m := range families[name].GetMetric() {
			j := get(label(m, "probe"), label(m, "device"))
			j.Rail, _ = strconv.Atoi(label(m, "rail"))
			if name == "roce_probe_peers_failed" {
				j.PeersFailed = int(m.GetGauge().GetValue())
			} else {
				j.PeersPassed = int(m.GetGauge().GetValue())
			}
		}
	}
	for _, m := range families["roce_probe_success"].GetMetric() {
		k := [2]string{label(m, "probe"), label(m, "device")}
		if j := byDev[k]; j != nil && m.GetGauge().GetValue() == 0 {
			j.FailedPeers = append(j.FailedPeers, label(m, "peer"))
		}
	}
	neighbours := map[string]probes.RailSwitch{}
	for _, m := range families["roce_lldp_neighbor_info"].GetMetric() {
		if id := label(m, "chassis_id"); id != "" {
			neighbours[label(m, "interface")] = probes.RailSwitch{ChassisID: id, Name: label(m, "chassis_name")}
		}
	}
	rails := map[string]probes.RailSwitch{}
	for _, m := range families["roce_port_info"].GetMetric() {
		if sw, ok := neighbours[label(m, "interface")]; ok {
			rails[label(m, "device")] = sw
		}
	}
	return probes.SortedJudgements(byDev), rails, nil
}

// printJudgement prints the table and the verdict per probe kind, and what
// the switches say; 1 when a rail failed with a peer.
func printJudgement(w io.Writer, js []probes.DeviceJudgement, switches probes.SwitchView) int {
	if len(js) == 0 {
		fmt.Fprintln(w, "no fresh pair-probe results (probes off, or none has run within its freshness bound)")
		return 0
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROBE\tDEVICE\tRAIL\tPEERS FAILED\tPEERS PASSED\tFAILED WITH\tSWITCH")
	failing := false
	kinds := map[string]bool{}
	for _, j := range js {
		kinds[j.Probe] = true
		failing = failing || j.PeersFailed > 0
		sw := "unknown"
		if s, ok := switches.Rails[j.Device]; ok {
			sw = s.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\n", j.Probe, j.Device, j.Rail, j.PeersFailed, j.PeersPassed, strings.Join(j.FailedPeers, ", "), sw)
	}
	tw.Flush()
	for _, k := range []string{probes.KindIBWriteBW, probes.KindIBWriteLat} {
		if kinds[k] {
			fmt.Fprintf(w, "%s: %s\n", k, probes.LocalVerdict(js, k))
			for _, v := range probes.SwitchVerdicts(js, k, switches) {
				fmt.Fprintf(w, "%s: %s\n", k, v)
			}
		}
	}
	if failing {
		return 1
	}
	return 0
}
