package validate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"text/template"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// No helm binary is available here, so the chart is rendered with Go's
// text/template and a stand-in for the few Sprig/Helm functions the chart
// uses (same semantics as Helm's for these arguments). The output is then
// strictly decoded and checked like the plain manifests. This catches
// template syntax errors, wrong indentation and wrong fields; it is not
// `helm lint`.

const chartDir = "../../helm/roce-exporter"

// isEmpty follows Sprig's notion of "empty" for default.
func isEmpty(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String, reflect.Map, reflect.Slice, reflect.Array:
		return rv.Len() == 0
	case reflect.Bool:
		return !rv.Bool()
	case reflect.Int, reflect.Int64, reflect.Int32:
		return rv.Int() == 0
	case reflect.Float64, reflect.Float32:
		return rv.Float() == 0
	case reflect.Pointer, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

func indent(n int, s string) string {
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
}

// renderChart renders every template of the chart with values (the chart's
// values.yaml overlaid with overrides) and returns template name → output.
func renderChart(t *testing.T, overrides map[string]any) map[string]string {
	t.Helper()
	var chart struct {
		Name       string `json:"name"`
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	raw, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &chart); err != nil {
		t.Fatal(err)
	}
	values := map[string]any{}
	raw, err = os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	merge(values, overrides)
	data := map[string]any{
		"Values":  values,
		"Chart":   map[string]any{"Name": chart.Name, "Version": chart.Version, "AppVersion": chart.AppVersion},
		"Release": map[string]any{"Name": "roce-exporter", "Namespace": namespace, "Service": "Helm"},
	}

	root := template.New("chart").Option("missingkey=zero")
	funcs := template.FuncMap{
		"include": func(name string, data any) (string, error) {
			var b bytes.Buffer
			err := root.ExecuteTemplate(&b, name, data)
			return b.String(), err
		},
		"toYaml": func(v any) (string, error) {
			out, err := yaml.Marshal(v)
			return strings.TrimSuffix(string(out), "\n"), err
		},
		"nindent": func(n int, s string) string { return "\n" + indent(n, s) },
		"indent":  indent,
		"quote":   func(v any) string { return fmt.Sprintf("%q", fmt.Sprint(v)) },
		"default": func(d any, given ...any) any {
			if len(given) == 0 || isEmpty(given[0]) {
				return d
			}
			return given[0]
		},
		"contains": func(substr, s string) bool { return strings.Contains(s, substr) },
		"replace":  func(old, new, s string) string { return strings.ReplaceAll(s, old, new) },
		"trimSuffix": func(suffix, s string) string {
			return strings.TrimSuffix(s, suffix)
		},
		"trunc": func(n int, s string) string {
			if len(s) > n {
				return s[:n]
			}
			return s
		},
	}
	root.Funcs(funcs)
	files, err := filepath.Glob(filepath.Join(chartDir, "templates", "*"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	var names []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		if _, err := root.New(name).Parse(string(raw)); err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		if !strings.HasPrefix(name, "_") && strings.HasSuffix(name, ".yaml") {
			names = append(names, name)
		}
	}
	out := map[string]string{}
	for _, name := range names {
		var b bytes.Buffer
		if err := root.ExecuteTemplate(&b, name, data); err != nil {
			t.Fatalf("render %s: %v", name, err)
		}
		out[name] = strings.ReplaceAll(b.String(), "<no value>", "")
	}
	return out
}

// merge overlays src onto dst, recursively for maps.
func merge(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// decodeChart strictly decodes the rendered templates.
func decodeChart(t *testing.T, rendered map[string]string) []object {
	t.Helper()
	var objs []object
	for name, text := range rendered {
		o, err := decodeStrict("chart:"+name, []byte(text))
		if err != nil {
			t.Fatalf("%v\n--- rendered %s ---\n%s", err, name, text)
		}
		objs = append(objs, o...)
	}
	return objs
}

func one[T any](t *testing.T, objs []object) T {
	t.Helper()
	m := byKind[T](objs)
	if len(m) != 1 {
		var zero T
		t.Fatalf("want one %T, got %d", zero, len(m))
	}
	for _, v := range m {
		return v
	}
	panic("unreachable")
}

func TestHelmChart(t *testing.T) {
	example, err := os.ReadFile(filepath.Join(manifestDir, "..", "examples", "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		overrides map[string]any
		probes    bool
		plan      bool
		kinds     map[string]int
	}{
		{"defaults", nil, false, false,
			map[string]int{"ServiceAccount": 1, "DaemonSet": 1, "Service": 1, "ServiceMonitor": 1}},
		{"with plan", map[string]any{"clusterPlan": string(example)}, false, true,
			map[string]int{"ServiceAccount": 1, "ConfigMap": 1, "DaemonSet": 1, "Service": 1, "ServiceMonitor": 1}},
		{"probes", map[string]any{"clusterPlan": string(example), "probes": map[string]any{
			"enabled": true, "rdmaResources": map[string]any{"rdma/hca_shared_devices_a": "1"}}}, true, true,
			map[string]int{"ServiceAccount": 1, "ConfigMap": 1, "DaemonSet": 1, "Service": 1, "ServiceMonitor": 1}},
		{"no monitor", map[string]any{"prometheus": map[string]any{"monitor": map[string]any{"enabled": false}}}, false, false,
			map[string]int{"ServiceAccount": 1, "DaemonSet": 1, "Service": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := decodeChart(t, renderChart(t, tc.overrides))
			kinds := map[string]int{}
			for _, o := range objs {
				kinds[o.kind]++
			}
			if !reflect.DeepEqual(kinds, tc.kinds) {
				t.Fatalf("rendered kinds %v, want %v", kinds, tc.kinds)
			}
			ds := one[*appsv1.DaemonSet](t, objs)
			checkDaemonSet(t, "chart:daemonset.yaml", ds, tc.probes, tc.plan)
			sa := one[*corev1.ServiceAccount](t, objs)
			if ds.Spec.Template.Spec.ServiceAccountName != sa.Name {
				t.Errorf("DaemonSet uses service account %q, chart renders %q", ds.Spec.Template.Spec.ServiceAccountName, sa.Name)
			}
			svc := one[*corev1.Service](t, objs)
			if svc.Spec.ClusterIP != corev1.ClusterIPNone || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != metricsPort {
				t.Errorf("Service: want headless on port %d, got %+v", metricsPort, svc.Spec)
			}
			for k, v := range svc.Spec.Selector {
				if ds.Spec.Template.Labels[k] != v {
					t.Errorf("Service selector %v does not select the DaemonSet's pods %v", svc.Spec.Selector, ds.Spec.Template.Labels)
				}
			}
			if tc.kinds["ServiceMonitor"] == 1 {
				checkServiceMonitor(t, "chart:servicemonitor.yaml", one[*monitoringv1.ServiceMonitor](t, objs), svc)
			}
			if tc.plan {
				cm := one[*corev1.ConfigMap](t, objs)
				checkPlanConfigMap(t, "chart:configmap.yaml", cm)
				if v := volumeByName(ds.Spec.Template.Spec, "config"); v == nil || v.ConfigMap == nil || v.ConfigMap.Name != cm.Name {
					t.Errorf("DaemonSet does not mount ConfigMap %s", cm.Name)
				}
			}
			if tc.probes {
				c := ds.Spec.Template.Spec.Containers[0]
				if q, ok := c.Resources.Limits["rdma/hca_shared_devices_a"]; !ok || !q.Equal(resource.MustParse("1")) {
					t.Errorf("probes.rdmaResources not rendered into the limits: %v", c.Resources.Limits)
				}
			}
		})
	}
}
