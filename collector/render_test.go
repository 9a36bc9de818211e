package collector

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/roce-exporter/roce_exporter/pipeline"
	"github.com/roce-exporter/roce_exporter/probes"
)

// A Renderer on a collection exports the same series and values as the
// exporter scraped on it: the simulator's nodes are the real exporter.
func TestRendererExportsWhatTheExporterDoes(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	store := probes.NewStore()
	store.SetClock(func() time.Time { return now })
	store.SetSelf("gpu01")
	store.SetFreshness(probes.KindIBWriteBW, 3*time.Hour)
	store.Add(&probes.Result{Probe: probes.KindIBWriteBW, Peer: "gpu02", Device: "mlx5_3", Rail: 3, Start: now.Add(-time.Hour), Success: false,
		Reason: probes.ReasonBelowThreshold, Bandwidth: &probes.Bandwidth{BytesPerSecond: 20e9, ExpectedBytesPerSecond: 45e9}})
	store.Add(&probes.Result{Probe: probes.KindIBWriteBW, Peer: "gpu03", Device: "mlx5_3", Rail: 3, Start: now.Add(-30 * time.Minute), Success: true})

	collectors := []string{"rdma", "lldp", "probe"}
	scenario := filepath.Join(fixtures, "dgx-h100-8gpu-8nic")
	cfg := testConfig(scenario, collectors...)
	cfg.ro.ReplayDir = filepath.Join(scenario, "replay")
	cfg.o.Probes = store
	e, _ := newTestExporter(t, cfg)
	want := exposedSeries(t, scrape(t, e))
	if !slices.ContainsFunc(slices.Collect(maps.Keys(want)), func(k string) bool { return strings.HasPrefix(k, "roce_lldp_neighbor_info{") }) {
		t.Fatal("the fixture exports no LLDP neighbour: the comparison would miss the lldp collector")
	}

	r, err := NewRenderer(collectors, store)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	err = r.Render(&pipeline.Collection{Snapshot: snapshot(e)}, func(name string, names, values []string, v float64) {
		m := model.Metric{model.MetricNameLabel: model.LabelValue(name)}
		for i, n := range names {
			m[model.LabelName(n)] = model.LabelValue(values[i])
		}
		got[m.String()] = v
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s: exporter %v, renderer %v (present %v)", k, v, g, ok)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s rendered but not exported", k)
		}
	}
	if _, err := NewRenderer([]string{"no-such-collector"}, nil); err == nil {
		t.Error("an unknown collector was accepted")
	}
}

// exposedSeries parses exposition text into series → value, without the
// exporter's own roce_scrape_* families (the renderer runs no scrape).
func exposedSeries(t *testing.T, text string) map[string]float64 {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		if strings.HasPrefix(name, "roce_scrape_") {
			continue
		}
		for _, m := range f.GetMetric() {
			lm := model.Metric{model.MetricNameLabel: model.LabelValue(name)}
			for _, l := range m.GetLabel() {
				lm[model.LabelName(l.GetName())] = model.LabelValue(l.GetValue())
			}
			v := m.GetGauge().GetValue()
			if m.Counter != nil {
				v = m.GetCounter().GetValue()
			}
			out[lm.String()] = v
		}
	}
	return out
}
