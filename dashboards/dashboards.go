// Package dashboards builds the Grafana dashboards shipped with
// roce_exporter, with the grafana-foundation-sdk, and writes them as the JSON
// files committed next to this package.
//
// Regenerate the committed files with
//
//	go run ./dashboards/cmd/gendashboards -out dashboards
//
// (or `go generate ./dashboards`). A test fails when the committed JSON and
// the builders drift apart.
//
// Conventions every dashboard follows (checked by dashboards_test.go):
//   - a `datasource` variable (type datasource, query prometheus) that every
//     panel, target and variable uses as {"type":"prometheus","uid":"${datasource}"};
//     no `__inputs`, so the files work both for the import dialog and for
//     file provisioning;
//   - `instance` and `device` variables (multi, include All = ".+", refreshed
//     on time range change); every selector of a roce_ metric filters
//     instance=~"$instance", and device=~"$device" where the metric has a
//     device label; interface-level metrics are joined to roce_interface_info
//     to get (and filter by) their RDMA device;
//   - every rate()/irate()/increase() uses [$__rate_interval], every counter
//     is wrapped in one of them;
//   - stable hand-chosen uids, tag "roce-exporter", a dashboards link by tag,
//     panel ids and target refIds set, units set, legends shown, not editable.
package dashboards

//go:generate go run ./cmd/gendashboards -out .

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/bargauge"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// Tag is carried by every dashboard; the dashboards link to each other by it.
const Tag = "roce-exporter"

// Dashboard uids: stable, hand-chosen, at most 40 characters. Links between
// dashboards and provisioning updates key on them: never change them.
const (
	UIDClusterOverview = "roce-cluster-overview"
	UIDNodeDetail      = "roce-node-detail"
	UIDProbes          = "roce-probes"
)

// Spec names one dashboard: the file it is written to and its builder.
type Spec struct {
	// File is the base name of the committed JSON file.
	File string
	// UID is the dashboard uid.
	UID string
	// Build returns a fresh builder for the dashboard.
	Build func() *dashboard.DashboardBuilder
}

// Specs lists every dashboard, in file name order.
func Specs() []Spec {
	return []Spec{
		{File: "roce-cluster-overview.json", UID: UIDClusterOverview, Build: ClusterOverview},
		{File: "roce-node-detail.json", UID: UIDNodeDetail, Build: NodeDetail},
		{File: "roce-probes.json", UID: UIDProbes, Build: Probes},
	}
}

// Files builds every dashboard and returns file name → JSON, exactly as
// committed (two-space indent, trailing newline).
func Files() (map[string][]byte, error) {
	out := make(map[string][]byte)
	for _, s := range Specs() {
		d, err := s.Build().Build()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.File, err)
		}
		raw, err := Marshal(d)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.File, err)
		}
		out[s.File] = raw
	}
	return out, nil
}

// Marshal renders a dashboard the way the committed files are written.
func Marshal(d dashboard.Dashboard) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	// PromQL is full of < > & (e.g. "> 0"); keep it readable in the files.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Write builds every dashboard and writes it into dir.
func Write(dir string) error {
	files, err := Files()
	if err != nil {
		return err
	}
	for name, raw := range files {
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ---------------------------------------------------------------------------
// Shared pieces.

// dsRef is how every panel, target and variable refers to the data source.
func dsRef() common.DataSourceRef {
	t, u := "prometheus", "${datasource}"
	return common.DataSourceRef{Type: &t, Uid: &u}
}

// newDashboard returns a builder with the settings every dashboard shares:
// the datasource/instance/device variables, the tag, the link to the other
// dashboards, and editable false.
func newDashboard(uid, title, description, from string) *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(description).
		Tags([]string{Tag}).
		Readonly().
		Timezone(common.TimeZoneBrowser).
		Refresh("1m").
		Time(from, "now").
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Link(dashboard.NewDashboardLinkBuilder("RoCE dashboards").
			Type(dashboard.DashboardLinkTypeDashboards).
			Tags([]string{Tag}).
			AsDropdown(true).
			IncludeVars(true).
			KeepTime(true).
			TargetBlank(false)).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").
			Label("Data source").
			Type("prometheus")).
		WithVariable(queryVariable("instance", "Node", `label_values(roce_device_info, instance)`)).
		WithVariable(queryVariable("device", "RDMA device", `label_values(roce_port_info{instance=~"$instance"}, device)`))
}

// queryVariable is a multi-value label_values variable with an All option
// that matches any non-empty value.
func queryVariable(name, label, query string) *dashboard.QueryVariableBuilder {
	return dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Datasource(dsRef()).
		Query(dashboard.StringOrMap{String: &query}).
		Definition(query).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(true).
		IncludeAll(true).
		AllValue(".+")
}

// board assigns panel ids in order and lays panels out on the grid.
type board struct {
	d      *dashboard.DashboardBuilder
	nextID uint32
}

func newBoard(d *dashboard.DashboardBuilder) *board { return &board{d: d, nextID: 1} }

func (b *board) id() uint32 {
	id := b.nextID
	b.nextID++
	return id
}

// row starts a new (expanded) row.
func (b *board) row(title string) {
	b.d.WithRow(dashboard.NewRowBuilder(title).Id(b.id()).Collapsed(false))
}

// add appends a panel after the previous one.
func (b *board) add(p cog.Builder[dashboard.Panel]) { b.d.WithPanel(p) }

// query is one PromQL target with its legend.
type query struct {
	expr    string
	legend  string
	instant bool
	table   bool
}

// q is a range query drawn over time.
func q(expr, legend string) query { return query{expr: expr, legend: legend} }

// qi is an instant query (latest value only).
func qi(expr, legend string) query { return query{expr: expr, legend: legend, instant: true} }

// qt is an instant query in table format: one row per series, labels as columns.
func qt(expr string) query { return query{expr: expr, legend: "__auto", instant: true, table: true} }

// refIDs are assigned to a panel's targets in order.
const refIDs = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

// targets turns queries into SDK targets with refIds and the data source set.
func targets(qs []query) []cog.Builder[variants.Dataquery] {
	out := make([]cog.Builder[variants.Dataquery], 0, len(qs))
	for i, qq := range qs {
		t := prometheus.NewDataqueryBuilder().
			RefId(string(refIDs[i])).
			Datasource(dsRef()).
			EditorMode(prometheus.QueryEditorModeCode).
			Expr(qq.expr).
			LegendFormat(qq.legend)
		if qq.instant {
			t.Instant()
		} else {
			t.Range()
		}
		if qq.table {
			t.Format(prometheus.PromQueryFormatTable)
		} else {
			t.Format(prometheus.PromQueryFormatTimeSeries)
		}
		out = append(out, t)
	}
	return out
}

func legend() *common.VizLegendOptionsBuilder {
	return common.NewVizLegendOptionsBuilder().
		ShowLegend(true).
		DisplayMode(common.LegendDisplayModeList).
		Placement(common.LegendPlacementBottom)
}

func tableLegend() *common.VizLegendOptionsBuilder {
	return common.NewVizLegendOptionsBuilder().
		ShowLegend(true).
		DisplayMode(common.LegendDisplayModeTable).
		Placement(common.LegendPlacementBottom).
		Calcs([]string{"lastNotNull", "max"}).
		SortBy("Max").
		SortDesc(true)
}

func tooltip() *common.VizTooltipOptionsBuilder {
	return common.NewVizTooltipOptionsBuilder().
		Mode(common.TooltipDisplayModeMulti).
		Sort(common.SortOrderDescending)
}

func thresholds(base string, steps ...any) *dashboard.ThresholdsConfigBuilder {
	ts := []dashboard.Threshold{{Color: base}}
	for i := 0; i+1 < len(steps); i += 2 {
		v := steps[i].(float64)
		ts = append(ts, dashboard.Threshold{Value: &v, Color: steps[i+1].(string)})
	}
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps(ts)
}

// valueText maps numeric values of a state metric to text and colour.
func valueText(pairs ...string) []dashboard.ValueMapping {
	opts := map[string]dashboard.ValueMappingResult{}
	for i := 0; i+2 < len(pairs); i += 3 {
		text, color := pairs[i+1], pairs[i+2]
		idx := int32(i / 3)
		opts[pairs[i]] = dashboard.ValueMappingResult{Text: &text, Color: &color, Index: &idx}
	}
	return []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: opts}}}
}

// panelBuilder is what the SDK's panel builders have in common.
type panelBuilder[P any] interface {
	Id(uint32) P
	Title(string) P
	Description(string) P
	Datasource(common.DataSourceRef) P
	Unit(string) P
	Span(uint32) P
	Height(uint32) P
	Targets([]cog.Builder[variants.Dataquery]) P
}

// panel sets what every panel has: the next id, title, description, the
// data source, unit, size and the targets of qs.
func panel[P panelBuilder[P]](b *board, p P, title, desc, unit string, w, h uint32, qs []query) P {
	return p.Id(b.id()).
		Title(title).
		Description(desc).
		Datasource(dsRef()).
		Unit(unit).
		Span(w).Height(h).
		Targets(targets(qs))
}

// timeseries is a line chart of range queries.
func (b *board) timeseries(title, desc, unit string, w, h uint32, qs ...query) *timeseries.PanelBuilder {
	return panel(b, timeseries.NewPanelBuilder(), title, desc, unit, w, h, qs).
		Min(0).
		Legend(tableLegend()).
		Tooltip(tooltip()).
		FillOpacity(10).
		LineWidth(1).
		ShowPoints(common.VisibilityModeNever)
}

// bars is a time series drawn as bars: counts per interval.
func (b *board) bars(title, desc, unit string, w, h uint32, qs ...query) *timeseries.PanelBuilder {
	return b.timeseries(title, desc, unit, w, h, qs...).
		DrawStyle(common.GraphDrawStyleBars).
		FillOpacity(80)
}

// stat is a single big number.
func (b *board) stat(title, desc, unit string, w, h uint32, th *dashboard.ThresholdsConfigBuilder, qs ...query) *stat.PanelBuilder {
	return panel(b, stat.NewPanelBuilder(), title, desc, unit, w, h, qs).
		Thresholds(th).
		ColorMode(common.BigValueColorModeBackground).
		GraphMode(common.BigValueGraphModeNone).
		TextMode(common.BigValueTextModeValue).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}).Values(false))
}

// bargauge shows the latest value per series as horizontal bars.
func (b *board) bargauge(title, desc, unit string, w, h uint32, qs ...query) *bargauge.PanelBuilder {
	return panel(b, bargauge.NewPanelBuilder(), title, desc, unit, w, h, qs).
		Min(0).
		Orientation(common.VizOrientationHorizontal).
		DisplayMode(common.BarGaugeDisplayModeBasic).
		ShowUnfilled(true).
		Legend(legend()).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}).Values(false))
}

// table lists the series of instant table queries; hidden columns are
// dropped, the others ordered as given.
func (b *board) table(title, desc, unit string, w, h uint32, columns []string, qs ...query) *table.PanelBuilder {
	exclude := map[string]any{"Time": true, "__name__": true, "job": true}
	index := map[string]any{}
	for i, c := range columns {
		index[c] = i
	}
	return panel(b, table.NewPanelBuilder(), title, desc, unit, w, h, qs).
		ShowHeader(true).
		Filterable(true).
		Footer(noFooter()).
		WithTransformation(dashboard.DataTransformerConfig{
			Id:      "organize",
			Options: map[string]any{"excludeByName": exclude, "indexByName": index},
		})
}

// matrix shows one value per (row, column) label pair: node × peer.
func (b *board) matrix(title, desc, unit string, w, h uint32, rowField, colField string, th *dashboard.ThresholdsConfigBuilder, qq query) *table.PanelBuilder {
	bg := common.TableCellOptions{TableColoredBackgroundCellOptions: common.NewTableColoredBackgroundCellOptions()}
	return panel(b, table.NewPanelBuilder(), title, desc, unit, w, h, []query{qq}).
		ShowHeader(true).
		Footer(noFooter()).
		Thresholds(th).
		CellOptions(bg).
		WithTransformation(dashboard.DataTransformerConfig{
			Id:      "groupingToMatrix",
			Options: map[string]any{"rowField": rowField, "columnField": colField, "valueField": "Value"},
		}).
		OverrideByName(rowField+"\\"+colField, []dashboard.DynamicConfigValue{
			{Id: "custom.cellOptions", Value: map[string]any{"type": "auto"}},
			{Id: "unit", Value: "string"},
		})
}

// noFooter hides the table footer (the SDK leaves its required reducer null).
func noFooter() *common.TableFooterOptionsBuilder {
	return common.NewTableFooterOptionsBuilder().Show(false).Reducer([]string{}).CountRows(false)
}

// states is a state timeline of 0/1 (or enum) series.
func (b *board) states(title, desc string, w, h uint32, mappings []dashboard.ValueMapping, th *dashboard.ThresholdsConfigBuilder, qs ...query) *statetimeline.PanelBuilder {
	return panel(b, statetimeline.NewPanelBuilder(), title, desc, "short", w, h, qs).
		Mappings(mappings).
		Thresholds(th).
		ShowValue(common.VisibilityModeNever).
		MergeValues(true).
		Legend(legend()).
		Tooltip(tooltip())
}

// ---------------------------------------------------------------------------
// PromQL helpers.

const (
	inst = `instance=~"$instance"`
	dev  = `device=~"$device"`
	// devOrNode selects the device's series and those about the node as a
	// whole (device=""), such as the health findings on the node.
	devOrNode = `device=~"$device|"`
	// rateInterval is the only range the dashboards use.
	rateInterval = "[$__rate_interval]"
)

// sel is a selector of metric on the selected nodes, with extra matchers.
func sel(metric string, matchers ...string) string {
	return metric + "{" + strings.Join(append([]string{inst}, matchers...), ", ") + "}"
}

// rate is the per-second rate of a counter over $__rate_interval.
func rate(metric string, matchers ...string) string {
	return "rate(" + sel(metric, matchers...) + rateInterval + ")"
}

// increase is the increase of a counter over $__rate_interval.
func increase(metric string, matchers ...string) string {
	return "increase(" + sel(metric, matchers...) + rateInterval + ")"
}

// byDevice adds the RDMA device label to an interface-level expression
// (labels {instance, interface, ...}) and keeps the selected devices only.
// The group by on the right keeps the match one-to-one even while an info
// series is being replaced (e.g. after a firmware update).
func byDevice(expr string) string {
	return expr + " * on(instance, interface) group_left(device) group by (instance, interface, device) (" +
		sel("roce_interface_info", dev) + ")"
}

// countOrZero counts the series of a filter expression, 0 when there are none.
func countOrZero(expr string) string { return "count(" + expr + ") or vector(0)" }
