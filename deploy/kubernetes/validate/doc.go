// Package validate holds the tests that strictly decode the Kubernetes
// manifests under deploy/kubernetes into the typed API structs (apps/v1,
// core/v1, monitoring.coreos.com/v1) and check their key properties, and
// render and lint the Helm chart under deploy/helm with Helm's own library.
//
// It is a separate module so that k8s.io/api, sigs.k8s.io/yaml, Helm and the
// prometheus-operator types stay out of the exporter's go.mod. Run it with
//
//	cd deploy/kubernetes/validate && go test ./...
package validate
