// Package alerts holds roce_exporter's Prometheus alerting and recording rules
// (alerts.yml, recording_rules.yml), their promtool unit tests (tests/*.yml)
// and one runbook per alert (runbooks/<AlertName>.md).
//
// PrometheusRule renders the rules as a prometheus-operator manifest. The
// package also exists so that `go test ./...`
// checks the rules against the monitoring-mixins style guide (the rules that
// mixtool lint enforces), checks that every alert has a runbook and a firing
// and a silent test, and runs promtool when it is installed.
package alerts
