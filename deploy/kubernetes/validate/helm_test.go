package validate

import (
	"os"
	"path"
	"path/filepath"
	"reflect"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The chart is rendered by Helm's own library (helm.sh/helm/v4) as
// `helm template roce-exporter deploy/helm/roce-exporter --namespace
// roce-exporter --set ... --set-file clusterPlan=...` renders it: the chart
// loader, the chart's values coalesced with the overrides into the render
// values of a first install against Helm's default capabilities, then the
// template engine. The output is then strictly decoded and checked like the
// plain manifests. TestHelmLint runs what `helm lint` runs.

const (
	chartDir    = "../../helm/roce-exporter"
	releaseName = "roce-exporter"
)

// renderChart renders the chart with overrides (the values --set and
// --set-file would give) and returns template path → output, without the
// partials and NOTES.txt, which are no manifests and which `helm template`
// leaves out too.
func renderChart(t *testing.T, overrides map[string]any) map[string]string {
	t.Helper()
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	opts := common.ReleaseOptions{Name: releaseName, Namespace: namespace, Revision: 1, IsInstall: true}
	values, err := util.ToRenderValues(chrt, overrides, opts, common.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := engine.Render(chrt, values)
	if err != nil {
		t.Fatal(err)
	}
	for name := range rendered {
		if path.Base(name) == "NOTES.txt" {
			delete(rendered, name)
		}
	}
	return rendered
}

// TestHelmLint fails where `helm lint` fails: on the errors it reports for
// the chart. Its warnings and INFO messages (such as "icon is recommended")
// are only logged.
func TestHelmLint(t *testing.T) {
	res := lint.RunAll(chartDir, nil, namespace)
	for _, m := range res.Messages {
		if m.Severity >= support.ErrorSev {
			t.Error(m)
		} else {
			t.Log(m)
		}
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
	linuxRDMA := map[string]string{"kubernetes.io/os": "linux", rdmaNodeLabel: "true"}
	for _, tc := range []struct {
		name      string
		overrides map[string]any
		probes    bool
		plan      bool
		kinds     map[string]int
		// nodeSelector is the one wanted; nil means linuxRDMA, the default.
		nodeSelector map[string]string
	}{
		{"defaults", nil, false, false,
			map[string]int{"ServiceAccount": 1, "DaemonSet": 1, "Service": 1, "ServiceMonitor": 1}, nil},
		{"own RDMA label", map[string]any{"rdmaNodeSelector": map[string]any{"key": "example.com/rdma", "value": "yes"}}, false, false,
			map[string]int{"ServiceAccount": 1, "DaemonSet": 1, "Service": 1, "ServiceMonitor": 1},
			map[string]string{"kubernetes.io/os": "linux", "example.com/rdma": "yes"}},
		{"every linux node", map[string]any{"rdmaNodeSelector": map[string]any{"key": ""}}, false, false,
			map[string]int{"ServiceAccount": 1, "DaemonSet": 1, "Service": 1, "ServiceMonitor": 1},
			map[string]string{"kubernetes.io/os": "linux"}},
		{"extra nodeSelector", map[string]any{"nodeSelector": map[string]any{"pool": "gpu"}}, false, false,
			map[string]int{"ServiceAccount": 1, "DaemonSet": 1, "Service": 1, "ServiceMonitor": 1},
			map[string]string{"kubernetes.io/os": "linux", "pool": "gpu", rdmaNodeLabel: "true"}},
		{"with plan", map[string]any{"clusterPlan": string(example)}, false, true,
			map[string]int{"ServiceAccount": 1, "ConfigMap": 1, "DaemonSet": 1, "Service": 1, "ServiceMonitor": 1}, nil},
		{"probes", map[string]any{"clusterPlan": string(example), "probes": map[string]any{
			"enabled": true, "rdmaResources": map[string]any{"rdma/hca_shared_devices_a": "1"}}}, true, true,
			map[string]int{"ServiceAccount": 1, "ConfigMap": 1, "DaemonSet": 1, "Service": 1, "ServiceMonitor": 1}, nil},
		{"no monitor", map[string]any{"prometheus": map[string]any{"monitor": map[string]any{"enabled": false}}}, false, false,
			map[string]int{"ServiceAccount": 1, "DaemonSet": 1, "Service": 1}, nil},
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
			wantSelector := tc.nodeSelector
			if wantSelector == nil {
				wantSelector = linuxRDMA
			}
			checkNodeSelector(t, "chart:daemonset.yaml", ds, wantSelector)
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
