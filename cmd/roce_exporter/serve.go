package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/roce-exporter/roce_exporter/collector"
	"github.com/roce-exporter/roce_exporter/health"
	"github.com/roce-exporter/roce_exporter/internal/connguard"
	"github.com/roce-exporter/roce_exporter/internal/procself"
	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/pipeline"
	"github.com/roce-exporter/roce_exporter/probes"
	"github.com/roce-exporter/roce_exporter/reader"
)

type serveCommand struct {
	a              *app
	collectors     *collector.Flags
	stateDir       *string
	cmd            *kingpin.CmdClause
	webFlags       *web.FlagConfig
	telemetryPath  *string
	maxRequests    *int
	webTimeout     *time.Duration
	readTimeout    *time.Duration
	writeTimeout   *time.Duration
	idleTimeout    *time.Duration
	maxConns       *int
	disableExpMetr *bool
	prometheusURL  *string
}

func newServeCommand(a *app) *serveCommand {
	s := &serveCommand{a: a}
	s.cmd = a.kp.Command("serve", "Serve metrics over HTTP (the default).").Default()
	// serve is the default command, so the node_exporter-style invocation
	// without a command accepts its flags.
	s.webFlags = kingpinflag.AddFlags(s.cmd, defaultListenAddress)
	s.telemetryPath = s.cmd.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").String()
	s.maxRequests = s.cmd.Flag("web.max-requests", "Maximum number of parallel scrape requests; more get 503. Concurrent scrapes share one collection, so a request costs little beyond writing the response. 0 disables the limit.").Default("100").Int()
	s.webTimeout = s.cmd.Flag("web.timeout", "Upper bound for answering a scrape; collectors that are still reading by then are reported as failed. Prometheus' X-Prometheus-Scrape-Timeout-Seconds header shortens it per scrape (its value minus 0.5s), never lengthens it.").Default("10s").Duration()
	s.readTimeout = s.cmd.Flag("web.read-timeout", "Time a client has to send a request's headers (and to finish the TLS handshake); a slow or stalled client is disconnected after it.").Default("10s").Duration()
	s.writeTimeout = s.cmd.Flag("web.write-timeout", "Time to answer a request, from the end of its headers to the last byte of the response. Must be longer than --web.timeout, which bounds the collection alone.").Default("30s").Duration()
	s.idleTimeout = s.cmd.Flag("web.idle-timeout", "How long a keep-alive connection may wait for its next request before it is closed. The default outlasts a 60 s scrape interval, so Prometheus keeps one connection (and TLS session) from scrape to scrape.").Default("90s").Duration()
	s.maxConns = s.cmd.Flag("web.max-connections", "Maximum number of open HTTP connections. At the limit a new connection closes the one idle the longest (a connection in the middle of a request is never closed), so idle or unauthenticated clients cannot lock out a scrape or use up the file descriptors the collectors need. 0 disables the limit.").Default("256").Int()
	s.disableExpMetr = s.cmd.Flag("web.disable-exporter-metrics", "Exclude the Go runtime and process metrics of the exporter itself (go_*, process_*); roce_exporter_build_info stays.").Bool()
	s.prometheusURL = s.cmd.Flag("probes.prometheus-url", "A Prometheus that scrapes this fleet and evaluates its alerts (alerts/). Optional. With it the node page says when this node's failing rails sit under a switch the rules name RoCEProbeSuspectSwitch (the node is that switch's victim), and a triangulation prefers witnesses behind other switches (read every 10 minutes). Without it, or while it does not answer, both work from the node's own view.").Default("").String()
	s.collectors = collector.RegisterFlags(s.cmd)
	s.stateDir = stateDirFlag(s.cmd)
	return s
}

func (s *serveCommand) run() int {
	logger := s.a.logger
	logger.Info("Starting roce_exporter", "version", version.Info())
	logger.Info("Build context", "build_context", version.BuildContext())

	plan, err := s.a.loadPlan()
	if err != nil {
		logger.Error("cannot load the cluster plan", "file", *s.a.configFile, "err", err)
		return 2
	}
	if plan != nil {
		for _, w := range plan.Warnings {
			logger.Warn("doubtful value in the cluster plan", "warning", w.Error())
		}
	}
	opts, ropts, err := s.a.options(s.collectors, plan)
	if err != nil {
		logger.Error("bad flags", "err", err)
		return 2
	}
	if err := s.checkTimeouts(); err != nil {
		logger.Error("bad web flags", "err", err)
		return 2
	}
	if *s.webTimeout <= ropts.Timeout {
		logger.Warn("--web.timeout is not longer than --collector.timeout: a stuck collector may turn scrapes into 503s",
			"web.timeout", *s.webTimeout, "collector.timeout", ropts.Timeout)
	}
	rd, err := reader.New(ropts, logger)
	if err != nil {
		logger.Error("cannot set up the reader", "err", err)
		return 2
	}
	defer rd.Close()
	// Everyone reads the node through one pipeline: the metrics, the page
	// and the probes.
	pl, err := pipeline.New(opts.PipelineOptions(rd))
	if err != nil {
		logger.Error("cannot set up the reader", "err", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	// The probes' first read then has a collection before it to measure the
	// port's load against.
	probesOn := plan != nil && plan.Probes.Enabled
	logWhatWasFound(ctx, pl, probesOn, ropts, logger)

	// Probes (and their responders) run only when the plan enables them.
	var sched *probes.Scheduler
	probesDone := make(chan struct{})
	if probesOn {
		if !slices.Contains(ropts.Sources, node.SourceRDMA) {
			logger.Warn("probes are enabled but the rdma collector is not: the probes cannot find GID indices and port rates")
		}
		popts := probes.Options{
			Plan: plan, Self: opts.NodeName, Node: pipelineNode{pl},
			StateDir: stateDirFor(*s.stateDir, plan), Logger: logger.With("component", "probes"),
		}
		if *s.prometheusURL != "" {
			topology := &fleetTopology{}
			go topology.refresh(ctx, *s.prometheusURL, 10*time.Minute, logger)
			popts.Topology = topology.switchOf
		}
		sched, err = probes.New(popts)
		if err != nil {
			logger.Error("cannot start probes", "err", err)
			return 2
		}
		opts.Probes = sched.Store()
		go func() { defer close(probesDone); sched.Run(ctx) }()
		logger.Info("Probes enabled", "node", opts.NodeName)
	} else {
		close(probesDone)
	}
	// Wait for the probe children to be killed before exiting.
	defer func() { stop(); <-probesDone }()

	exporter, err := collector.NewExporter(opts, pl, logger)
	if err != nil {
		logger.Error("cannot set up collectors", "err", err)
		return 2
	}
	logger.Info("Enabled collectors", "collectors", strings.Join(exporter.Collectors(), ","))

	fleet := &fleetView{prometheus: *s.prometheusURL, cacheFor: 30 * time.Second, rails: func() map[string]probes.RailSwitch {
		if c := pl.Latest(); c != nil {
			return probes.RailSwitches(c.Snapshot)
		}
		return nil
	}}
	handler, err := s.handler(exporter, pageConfig{NodeName: opts.NodeName, Sample: opts.Sample, SysPath: rd.SysPath()}, opts.Probes, func() probes.SwitchView { return fleet.view(ctx) }, logger)
	if err != nil {
		logger.Error("cannot build HTTP handler", "err", err)
		return 2
	}
	server := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: *s.readTimeout,
		ReadTimeout:       *s.readTimeout,
		WriteTimeout:      *s.writeTimeout,
		IdleTimeout:       *s.idleTimeout,
	}
	connguard.New(*s.maxConns, logger).Install(server)
	errc := make(chan error, 1)
	go func() { errc <- web.ListenAndServe(server, s.webFlags, logger) }()
	select {
	case err := <-errc:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("HTTP server failed", "err", err)
			return 1
		}
	case <-ctx.Done():
		logger.Info("Shutting down")
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := server.Shutdown(shutdownCtx); err != nil {
			logger.Warn("HTTP shutdown incomplete", "err", err)
		}
	}
	return 0
}

// checkTimeouts refuses web timeouts that would cut every slow scrape off
// or never close a connection.
func (s *serveCommand) checkTimeouts() error {
	for _, d := range []struct {
		flag  string
		value time.Duration
	}{{"--web.read-timeout", *s.readTimeout}, {"--web.write-timeout", *s.writeTimeout}, {"--web.idle-timeout", *s.idleTimeout}} {
		if d.value <= 0 {
			return fmt.Errorf("%s must be above 0 (it was %s): without it a client can hold a connection forever", d.flag, d.value)
		}
	}
	if *s.writeTimeout <= *s.webTimeout {
		return fmt.Errorf("--web.write-timeout (%s) must be longer than --web.timeout (%s): a scrape that uses its whole --web.timeout would be cut off before its answer is written", *s.writeTimeout, *s.webTimeout)
	}
	if *s.maxConns < 0 {
		return fmt.Errorf("--web.max-connections must be 0 (no limit) or more, not %d", *s.maxConns)
	}
	return nil
}

func (s *serveCommand) handler(exporter *collector.Exporter, page pageConfig, store *probes.Store, switches func() probes.SwitchView, logger *slog.Logger) (http.Handler, error) {
	self := prometheus.NewRegistry()
	self.MustRegister(versioncollector.NewCollector("roce_exporter"))
	if !*s.disableExpMetr {
		// procself: client_golang's process_* metrics without re-reading
		// /proc/self/{limits,fd,…} and /proc/stat on every scrape.
		self.MustRegister(collectors.NewGoCollector(), procself.New(func() int64 {
			_, open := reader.FileBudget()
			return open
		}))
	}
	metrics := collector.NewHandler(exporter, collector.HandlerOpts{
		MaxRequests: *s.maxRequests,
		Timeout:     *s.webTimeout,
		Self:        self,
		Logger:      logger,
	})
	mux := http.NewServeMux()
	mux.Handle(*s.telemetryPath, metrics)
	if *s.telemetryPath != "/" {
		page.PlanFile, page.MetricsPath, page.Started, page.Switches = *s.a.configFile, *s.telemetryPath, time.Now(), switches
		page.Printer = s.a.printer()
		mux.Handle("/", nodePage(exporter, store, page))
	}
	return mux, nil
}

// logCollection logs how the first collection went.
func logCollection(logger *slog.Logger, c *pipeline.Collection) {
	failedSources := 0
	for _, s := range c.Sources {
		if !s.OK() && !errors.Is(s.Err, reader.ErrNoData) {
			failedSources++
		}
	}
	count := map[health.Status]int{}
	for _, f := range c.Findings {
		count[f.Status]++
	}
	logger.Info("Read the node", "took", c.When.Sub(c.Snapshot.Time).Round(time.Millisecond), "sources_failed", failedSources,
		"checks_failed", count[health.StatusFail], "checks_warned", count[health.StatusWarn])
}
