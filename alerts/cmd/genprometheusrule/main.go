// Command genprometheusrule writes deploy/kubernetes/prometheusrule.yaml
// from the rule files in alerts/.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/roce-exporter/roce_exporter/alerts"
)

func main() {
	dir := flag.String("rules", "alerts", "directory with the rule files")
	out := flag.String("out", "deploy/kubernetes/prometheusrule.yaml", "manifest to write")
	flag.Parse()
	b, err := alerts.PrometheusRule(*dir)
	if err == nil {
		err = os.WriteFile(*out, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "genprometheusrule:", err)
		os.Exit(1)
	}
}
