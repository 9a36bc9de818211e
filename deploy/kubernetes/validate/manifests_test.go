package validate

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/roce-exporter/roce_exporter/config"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

const (
	manifestDir = ".." // deploy/kubernetes
	namespace   = "roce-exporter"
	metricsPort = 14791
)

// object is one decoded manifest document.
type object struct {
	file string
	kind string
	obj  any
}

// newObject returns the typed struct for an apiVersion/kind.
func newObject(apiVersion, kind string) (any, error) {
	switch apiVersion + "/" + kind {
	case "apps/v1/DaemonSet":
		return &appsv1.DaemonSet{}, nil
	case "v1/Service":
		return &corev1.Service{}, nil
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "v1/ServiceAccount":
		return &corev1.ServiceAccount{}, nil
	case "v1/Namespace":
		return &corev1.Namespace{}, nil
	case "monitoring.coreos.com/v1/ServiceMonitor":
		return &monitoringv1.ServiceMonitor{}, nil
	case "monitoring.coreos.com/v1/PrometheusRule":
		return &monitoringv1.PrometheusRule{}, nil
	}
	return nil, fmt.Errorf("unexpected apiVersion %q kind %q", apiVersion, kind)
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// decodeStrict decodes every document of a YAML file into its typed struct,
// rejecting unknown and duplicate fields.
func decodeStrict(file string, data []byte) ([]object, error) {
	var out []object
	for i, doc := range docSeparator.Split(string(data), -1) {
		var probe map[string]any
		if err := yaml.Unmarshal([]byte(doc), &probe); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		if len(probe) == 0 {
			continue // only comments
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		obj, err := newObject(tm.APIVersion, tm.Kind)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			return nil, fmt.Errorf("%s: document %d (%s): %w", file, i, tm.Kind, err)
		}
		out = append(out, object{file: file, kind: tm.Kind, obj: obj})
	}
	return out, nil
}

// loadAll decodes every YAML file under deploy/kubernetes (except this module).
func loadAll(t *testing.T) []object {
	t.Helper()
	var objs []object
	err := filepath.WalkDir(manifestDir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "validate" {
			return filepath.SkipDir
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		o, err := decodeStrict(path, data)
		if err != nil {
			return err
		}
		objs = append(objs, o...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func byKind[T any](objs []object) map[string]T {
	out := map[string]T{}
	for _, o := range objs {
		if v, ok := o.obj.(T); ok {
			out[o.file] = v
		}
	}
	return out
}

func TestManifestsDecodeStrictly(t *testing.T) {
	objs := loadAll(t)
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.kind]++
		meta := reflect.ValueOf(o.obj).Elem().FieldByName("ObjectMeta").Interface().(metav1.ObjectMeta)
		if meta.Name == "" {
			t.Errorf("%s: %s without a name", o.file, o.kind)
		}
		if o.kind != "Namespace" && meta.Namespace != namespace {
			t.Errorf("%s: %s %s in namespace %q, want %q", o.file, o.kind, meta.Name, meta.Namespace, namespace)
		}
		if meta.Labels["app.kubernetes.io/name"] != "roce-exporter" {
			t.Errorf("%s: %s %s lacks label app.kubernetes.io/name=roce-exporter", o.file, o.kind, meta.Name)
		}
	}
	want := map[string]int{"Namespace": 1, "ServiceAccount": 1, "ConfigMap": 1, "DaemonSet": 2, "Service": 1, "ServiceMonitor": 1, "PrometheusRule": 1}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("manifest kinds %v, want %v", kinds, want)
	}
}

// The decoder is really strict: a typo in a field name is an error, not a
// silently dropped setting.
func TestStrictDecodeRejectsUnknownFields(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"typo", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      hostNetwrk: true\n", "hostNetwrk"},
		{"duplicate", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  clusterIP: None\n  clusterIP: None\n", "clusterIP"},
		{"servicemonitor typo", "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: x}\nspec:\n  endpoints:\n    - port: metrics\n      intervall: 15s\n", "intervall"},
		{"unknown kind", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n", "unexpected"},
	} {
		_, err := decodeStrict(tc.name, []byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}

func findContainer(t *testing.T, file string, ds *appsv1.DaemonSet) corev1.Container {
	t.Helper()
	cs := ds.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("%s: %d containers, want 1", file, len(cs))
	}
	return cs[0]
}

func volumeByName(spec corev1.PodSpec, name string) *corev1.Volume {
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == name {
			return &spec.Volumes[i]
		}
	}
	return nil
}

// mountAt returns the mount at path and its volume.
func mountAt(spec corev1.PodSpec, c corev1.Container, path string) (*corev1.VolumeMount, *corev1.Volume) {
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].MountPath == path {
			return &c.VolumeMounts[i], volumeByName(spec, c.VolumeMounts[i].Name)
		}
	}
	return nil, nil
}

func TestDaemonSets(t *testing.T) {
	objs := loadAll(t)
	dss := byKind[*appsv1.DaemonSet](objs)
	sas := byKind[*corev1.ServiceAccount](objs)
	cms := byKind[*corev1.ConfigMap](objs)
	if len(dss) != 2 {
		t.Fatalf("want the base and the probes DaemonSet, got %d", len(dss))
	}
	for file, ds := range dss {
		if ds.Name != "roce-exporter" {
			t.Errorf("%s: name %q: both variants must be named roce-exporter so one replaces the other", file, ds.Name)
		}
		checkDaemonSet(t, file, ds, strings.Contains(file, "probes"), true)
		checkNodeSelector(t, file, ds, map[string]string{"kubernetes.io/os": "linux", rdmaNodeLabel: "true"})
		spec := ds.Spec.Template.Spec
		if sa, ok := sas[filepath.Join(manifestDir, "serviceaccount.yaml")]; !ok || spec.ServiceAccountName != sa.Name {
			t.Errorf("%s: serviceAccountName %q has no ServiceAccount manifest", file, spec.ServiceAccountName)
		}
		if v := volumeByName(spec, "config"); v == nil || v.ConfigMap == nil {
			t.Errorf("%s: no config volume from a ConfigMap", file)
		} else if cm, ok := cms[filepath.Join(manifestDir, "configmap.yaml")]; !ok || cm.Name != v.ConfigMap.Name {
			t.Errorf("%s: ConfigMap %q has no manifest", file, v.ConfigMap.Name)
		}
	}
}

// rdmaNodeLabel is the label NVIDIA Network Operator's NodeFeatureRule
// "nvidia-nics-rules" makes Node Feature Discovery put on nodes with an
// NVIDIA/Mellanox NIC (PCI vendor 15b3, class 0200 Ethernet or 0207
// InfiniBand); stock NFD publishes no label for network devices.
const rdmaNodeLabel = "feature.node.kubernetes.io/pci-15b3.present"

// checkNodeSelector asserts that the DaemonSet runs exactly on the nodes
// want selects: by default only RDMA nodes, because on a CPU-only node the
// exporter has nothing to watch and its health checks would fail.
func checkNodeSelector(t *testing.T, file string, ds *appsv1.DaemonSet, want map[string]string) {
	t.Helper()
	spec := ds.Spec.Template.Spec
	if !reflect.DeepEqual(spec.NodeSelector, want) {
		t.Errorf("%s: nodeSelector %v, want %v", file, spec.NodeSelector, want)
	}
	if spec.Affinity != nil && spec.Affinity.NodeAffinity != nil {
		t.Errorf("%s: a node affinity would widen or narrow the nodeSelector; keep one place", file)
	}
}

// checkDaemonSet asserts the properties every roce_exporter DaemonSet must
// have; probes selects the probe variant's extra privileges, withPlan that
// the cluster plan is mounted and passed.
func checkDaemonSet(t *testing.T, file string, ds *appsv1.DaemonSet, probes, withPlan bool) {
	t.Helper()
	spec := ds.Spec.Template.Spec
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(ds.Spec.Template.Labels)) {
		t.Errorf("%s: selector %v does not match the pod labels %v", file, ds.Spec.Selector, ds.Spec.Template.Labels)
	}
	if !spec.HostNetwork {
		t.Errorf("%s: hostNetwork must be true (the RDMA netdevs are in the host network namespace)", file)
	}
	if spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("%s: dnsPolicy %q, want ClusterFirstWithHostNet", file, spec.DNSPolicy)
	}
	if spec.PriorityClassName != "system-node-critical" {
		t.Errorf("%s: priorityClassName %q", file, spec.PriorityClassName)
	}
	if !slices.ContainsFunc(spec.Tolerations, func(tl corev1.Toleration) bool {
		return tl.Operator == corev1.TolerationOpExists && tl.Key == "" && tl.Effect == ""
	}) {
		t.Errorf("%s: no toleration {operator: Exists} (GPU nodes are tainted)", file)
	}
	if spec.ServiceAccountName == "" || spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("%s: want a named service account without a mounted token", file)
	}
	c := findContainer(t, file, ds)

	// Port 14791 named metrics.
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool {
		return p.Name == "metrics" && p.ContainerPort == metricsPort && p.Protocol == corev1.ProtocolTCP
	}) {
		t.Errorf("%s: no container port metrics/%d", file, metricsPort)
	}
	for _, pr := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		if pr == nil || pr.HTTPGet == nil || pr.HTTPGet.Path != "/" || pr.HTTPGet.Port.String() != "metrics" {
			t.Errorf("%s: liveness and readiness must GET / on port metrics", file)
		}
	}

	// NODE_NAME from the downward API, passed as --node.name.
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
	}) {
		t.Errorf("%s: env NODE_NAME must come from fieldRef spec.nodeName", file)
	}
	for _, arg := range []string{"--node.name=$(NODE_NAME)", "--path.sysfs=/host/sys"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("%s: args %q lack %s", file, c.Args, arg)
		}
	}

	// /sys read-only at /host/sys.
	m, v := mountAt(spec, c, "/host/sys")
	if m == nil || !m.ReadOnly || v == nil || v.HostPath == nil || v.HostPath.Path != "/sys" {
		t.Errorf("%s: hostPath /sys must be mounted read-only at /host/sys", file)
	}
	// The plan from the ConfigMap at /etc/roce_exporter.
	m, v = mountAt(spec, c, "/etc/roce_exporter")
	hasArg := slices.Contains(c.Args, "--config.file=/etc/roce_exporter/cluster.yaml")
	if withPlan && (m == nil || !m.ReadOnly || v == nil || v.ConfigMap == nil || !hasArg) {
		t.Errorf("%s: the plan ConfigMap must be mounted read-only at /etc/roce_exporter and passed as --config.file", file)
	}
	if !withPlan && (m != nil || hasArg) {
		t.Errorf("%s: without a plan, nothing may be mounted at /etc/roce_exporter nor passed as --config.file", file)
	}

	// Resources.
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[r]; !ok {
			t.Errorf("%s: no %s request", file, r)
		}
	}
	if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
		t.Errorf("%s: no memory limit", file)
	}

	// Security context.
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		(sc.Privileged != nil && *sc.Privileged) {
		t.Errorf("%s: container must be read-only, not privileged, without privilege escalation, dropping ALL capabilities", file)
		return
	}
	devMount, devVol := mountAt(spec, c, "/dev/infiniband")
	if probes {
		if !slices.Equal(sc.Capabilities.Add, []corev1.Capability{"IPC_LOCK", "NET_RAW"}) {
			t.Errorf("%s: probes add capabilities %v, want exactly [IPC_LOCK NET_RAW]", file, sc.Capabilities.Add)
		}
		if devMount == nil || devMount.ReadOnly || devVol == nil || devVol.HostPath == nil || devVol.HostPath.Path != "/dev/infiniband" {
			t.Errorf("%s: probes need hostPath /dev/infiniband mounted read-write at /dev/infiniband", file)
		}
		if !slices.Contains(c.Args, "--probes.state-dir=/var/lib/roce_exporter") || !slices.Contains(c.Args, "--path.dev=/dev") {
			t.Errorf("%s: probes need --probes.state-dir and --path.dev=/dev", file)
		}
		if m, v := mountAt(spec, c, "/var/lib/roce_exporter"); m == nil || m.ReadOnly || v == nil || v.HostPath == nil {
			t.Errorf("%s: the probe state dir must be a writable hostPath (baselines survive restarts)", file)
		}
	} else {
		if len(sc.Capabilities.Add) != 0 {
			t.Errorf("%s: the exporter needs no capabilities, adds %v", file, sc.Capabilities.Add)
		}
		if devMount != nil {
			t.Errorf("%s: the base variant must not mount /dev/infiniband where verbs programs would open it", file)
		}
		if m, v := mountAt(spec, c, "/host/dev/infiniband"); m != nil && (!m.ReadOnly || v == nil || v.HostPath == nil || !slices.Contains(c.Args, "--path.dev=/host/dev")) {
			t.Errorf("%s: /host/dev/infiniband must be a read-only hostPath passed as --path.dev=/host/dev", file)
		}
		psc := spec.SecurityContext
		if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
			t.Errorf("%s: the base variant must run as a non-root user", file)
		}
	}
}

func TestServiceAndServiceMonitor(t *testing.T) {
	objs := loadAll(t)
	svcs := byKind[*corev1.Service](objs)
	sms := byKind[*monitoringv1.ServiceMonitor](objs)
	dss := byKind[*appsv1.DaemonSet](objs)
	if len(svcs) != 1 || len(sms) != 1 {
		t.Fatalf("want one Service and one ServiceMonitor, got %d and %d", len(svcs), len(sms))
	}
	var svc *corev1.Service
	for _, s := range svcs {
		svc = s
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("Service must be headless (clusterIP: None), got %q", svc.Spec.ClusterIP)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "metrics" || svc.Spec.Ports[0].Port != metricsPort || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
		t.Errorf("Service ports %+v, want metrics %d → metrics", svc.Spec.Ports, metricsPort)
	}
	for file, ds := range dss {
		for k, v := range svc.Spec.Selector {
			if ds.Spec.Template.Labels[k] != v {
				t.Errorf("Service selector %v does not select the pods of %s", svc.Spec.Selector, file)
			}
		}
	}
	for file, sm := range sms {
		checkServiceMonitor(t, file, sm, svc)
	}
}

// checkServiceMonitor: selects the Service, scrapes port metrics every 15s,
// and sets instance to the node name.
func checkServiceMonitor(t *testing.T, file string, sm *monitoringv1.ServiceMonitor, svc *corev1.Service) {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(svc.Labels)) {
		t.Errorf("%s: selector does not match the Service labels %v", file, svc.Labels)
	}
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("%s: %d endpoints, want 1", file, len(sm.Spec.Endpoints))
	}
	ep := sm.Spec.Endpoints[0]
	if ep.Port != "metrics" || ep.Interval != "15s" {
		t.Errorf("%s: endpoint port %q interval %q, want metrics / 15s", file, ep.Port, ep.Interval)
	}
	if ep.ScrapeTimeout != "" {
		timeout, err1 := time.ParseDuration(string(ep.ScrapeTimeout))
		interval, err2 := time.ParseDuration(string(ep.Interval))
		if err1 != nil || err2 != nil || timeout > interval {
			t.Errorf("%s: scrapeTimeout %s must be a duration no longer than interval %s", file, ep.ScrapeTimeout, ep.Interval)
		}
	}
	found := false
	for _, r := range ep.RelabelConfigs {
		if slices.Equal(r.SourceLabels, []monitoringv1.LabelName{"__meta_kubernetes_pod_node_name"}) && r.TargetLabel == "instance" &&
			(r.Action == "" || strings.EqualFold(r.Action, "replace")) {
			found = true
		}
	}
	if !found {
		t.Errorf("%s: no relabeling __meta_kubernetes_pod_node_name → instance", file)
	}
}

func TestPrometheusRule(t *testing.T) {
	objs := loadAll(t)
	prs := byKind[*monitoringv1.PrometheusRule](objs)
	if len(prs) != 1 {
		t.Fatalf("want one PrometheusRule, got %d", len(prs))
	}
	for file, pr := range prs {
		if len(pr.Spec.Groups) == 0 {
			t.Errorf("%s: no rule groups", file)
		}
		seen := map[string]bool{}
		for _, g := range pr.Spec.Groups {
			if g.Name == "" || seen[g.Name] {
				t.Errorf("%s: group name %q empty or repeated", file, g.Name)
			}
			seen[g.Name] = true
		}
		// The groups are a Prometheus rule file: let promtool check them.
		promtool := testenv.LookPath(t, "prometheus", "promtool")
		raw, err := yaml.Marshal(map[string]any{"groups": pr.Spec.Groups})
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(t.TempDir(), "rules.yml")
		if err := os.WriteFile(f, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(promtool, "check", "rules", f).CombinedOutput(); err != nil {
			t.Errorf("%s: promtool check rules: %v\n%s\n%s", file, err, out, raw)
		}
	}
}

func TestConfigMapPlan(t *testing.T) {
	objs := loadAll(t)
	cms := byKind[*corev1.ConfigMap](objs)
	cm, ok := cms[filepath.Join(manifestDir, "configmap.yaml")]
	if !ok {
		t.Fatal("no configmap.yaml")
	}
	checkPlanConfigMap(t, "configmap.yaml", cm)
}

// checkPlanConfigMap: the ConfigMap holds deploy/examples/cluster.yaml
// verbatim, and the exporter's own config.Parse accepts it.
func checkPlanConfigMap(t *testing.T, file string, cm *corev1.ConfigMap) {
	t.Helper()
	data, ok := cm.Data["cluster.yaml"]
	if !ok {
		t.Fatalf("%s: ConfigMap %s has no cluster.yaml key", file, cm.Name)
	}
	example, err := os.ReadFile(filepath.Join(manifestDir, "..", "examples", "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal([]byte(data), example) {
		t.Errorf("%s: cluster.yaml differs from deploy/examples/cluster.yaml: copy the example into the data block again", file)
	}
	plan, err := config.Parse(file+":cluster.yaml", []byte(data))
	if err != nil {
		t.Fatalf("%s: the cluster plan does not parse: %v", file, err)
	}
	if len(plan.Nodes) == 0 {
		t.Errorf("%s: the cluster plan lists no nodes", file)
	}
	// And config.Parse does reject a broken plan, so the check above means something.
	if _, err := config.Parse("broken.yaml", []byte(data+"\nno_such_key: 1\n")); err == nil {
		t.Error("config.Parse accepted an unknown key")
	}
}
