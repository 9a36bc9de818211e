// Command gendashboards writes the Grafana dashboards of roce_exporter as JSON.
//
//	go run ./dashboards/cmd/gendashboards -out dashboards
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/roce-exporter/roce_exporter/dashboards"
)

func main() {
	out := flag.String("out", "dashboards", "directory to write the dashboard JSON files into")
	flag.Parse()
	if err := dashboards.Write(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gendashboards:", err)
		os.Exit(1)
	}
}
