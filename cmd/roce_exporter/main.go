// Command roce_exporter exports RDMA/RoCE health metrics, checks a node
// against the cluster plan (doctor) and probes the fabric.
package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"

	"github.com/roce-exporter/roce_exporter/collector"
	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/reader"
)

// defaultListenAddress is outside the crowded 9100-9999 exporter band; 4791
// is the RoCE v2 UDP port.
const defaultListenAddress = ":14791"

// app holds the flags shared by every subcommand.
type app struct {
	kp         *kingpin.Application
	collectors *collector.Flags
	configFile *string
	nodeName   *string
	logConfig  *promslog.Config
	logger     *slog.Logger
}

func newApp() *app {
	a := &app{kp: kingpin.New("roce_exporter", "Prometheus exporter and health checker for RoCE v2 / InfiniBand GPU-cluster networks.")}
	a.kp.Version(version.Print("roce_exporter"))
	a.kp.HelpFlag.Short('h')
	a.collectors = collector.RegisterFlags(a.kp)
	a.configFile = a.kp.Flag("config.file", "Cluster plan (YAML): IP plan, expectations and probe settings. Optional for serving counters; required for plan checks and probes.").PlaceHolder("FILE").String()
	a.nodeName = a.kp.Flag("node.name", "Name of this node in the cluster plan (default: the short hostname).").String()
	a.logConfig = &promslog.Config{}
	promslogflag.AddFlags(a.kp, a.logConfig)
	return a
}

// loadPlan loads --config.file, or returns nil when none is given.
func (a *app) loadPlan() (*config.Plan, error) {
	if *a.configFile == "" {
		return nil, nil
	}
	return config.Load(*a.configFile)
}

// options turns the flags into the collectors' options (with the plan the
// health checks compare against) and the reader's.
func (a *app) options(plan *config.Plan) (collector.Options, reader.Options, error) {
	o, ro, err := a.collectors.Options()
	if err != nil {
		return o, ro, err
	}
	o.NodeName = config.SelfName(*a.nodeName)
	o.Plan = plan
	return o, ro, nil
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	a := newApp()
	serve := newServeCommand(a)
	probe := newProbeCommand(a)
	serve.probe = probe
	doctor := newDoctorCommand(a)

	cmd, err := a.kp.Parse(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "roce_exporter: %v\n", err)
		return 2
	}
	a.logger = promslog.New(a.logConfig)
	switch cmd {
	case doctor.cmd.FullCommand():
		return doctor.run()
	case probe.runCmd.FullCommand():
		return probe.runNow()
	case probe.parseCmd.FullCommand():
		return probe.parse()
	default:
		return serve.run()
	}
}
