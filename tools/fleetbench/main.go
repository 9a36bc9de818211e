// Command fleetbench measures what a fleet of exporters costs the
// Prometheus that scrapes it: N exporter processes (default flags, every
// collector, on a generated 8-port ConnectX-7 node each) scraped every 15 s
// by Debian's Prometheus with alerts/ loaded, for long enough to reach a
// steady state. It reports Prometheus' CPU and memory per scraped node, the
// samples ingested per second, the head series, and the time the rule
// groups of alerts/ take per evaluation, and extrapolates to 1,024 and
// 4,096 nodes.
//
//	go run ./tools/fleetbench -binary ./roce_exporter -exporters 128 -duration 5m
//
// With -baseline, a second set of rule files (say, main's alerts/ before a
// change) is loaded beside -rules and its expressions are measured in the
// same passes, interleaved with those of -rules: on a shared machine, whose
// load moves a rule's CPU time by half between runs, that compares the two
// sets under the same load.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"

	"github.com/roce-exporter/roce_exporter/alerts"
	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
)

// options are the flags.
type options struct {
	bin, prom, rules, extra   string
	baseline                  string
	ports                     int
	interval, warmup, measure time.Duration
	top                       int
}

// result is one fleet size's measurement.
type result struct {
	nodes                                      int
	series, samples, cores, rss, rssPeak, heap float64
	ruleRound                                  float64 // the rule groups' wall time per interval
	groups                                     map[string]float64
	slowest                                    []ruleTime
	failures, down                             float64
	// ruleCPU is the CPU time Prometheus spends on the rules per interval
	// (a group evaluated every 1m counts a quarter of its cost per 15 s),
	// ruleCPUOnce that of one evaluation of every rule, each measured query
	// by query through the API after the scrapes stopped; ruleCPUTop the
	// most expensive rules (one evaluation).
	ruleCPU, ruleCPUOnce float64
	ruleCPUTop           []ruleTime
	// base is the same for the -baseline rules, measured in the same passes.
	base *ruleSetCPU
}

// ruleSetCPU is the rule CPU of one set of rule files: per interval, of one
// evaluation of every rule, and the most expensive rules.
type ruleSetCPU struct {
	perInterval, once float64
	top               []ruleTime
}

func main() {
	var o options
	flag.StringVar(&o.bin, "binary", "./roce_exporter", "the exporter binary")
	flag.StringVar(&o.prom, "prometheus", "prometheus", "the Prometheus binary (Debian package prometheus)")
	sizes := flag.String("exporters", "32,128", "fleet sizes to measure, comma separated: exporter processes, one per simulated node; "+
		"with two or more, the per-node cost is the slope between the smallest and the largest, without Prometheus' fixed cost")
	flag.IntVar(&o.ports, "ports", 8, "RDMA ports per node")
	flag.DurationVar(&o.interval, "interval", 15*time.Second, "scrape and rule evaluation interval")
	flag.DurationVar(&o.warmup, "warmup", 90*time.Second, "time before measuring: series creation, first rule runs")
	flag.DurationVar(&o.measure, "duration", 5*time.Minute, "measured time after the warm-up")
	flag.StringVar(&o.rules, "rules", "alerts", "directory of the rule files to load")
	flag.StringVar(&o.baseline, "baseline", "", "a second directory of rule files (e.g. main's alerts/) loaded beside -rules and measured in the same passes, for a comparison under the same load")
	flag.StringVar(&o.extra, "args", "", "extra flags for every exporter, space separated")
	flag.IntVar(&o.top, "top", 8, "how many of the most expensive rules to list")
	flag.Parse()

	var results []result
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		check(err)
		r := run(o, n)
		results = append(results, r)
		fmt.Printf("\nrule groups at %d nodes (last evaluation, ms):\n", n)
		names := make([]string, 0, len(r.groups))
		for g := range r.groups {
			names = append(names, g)
		}
		sort.Strings(names)
		for _, g := range names {
			fmt.Printf("  %-60s %8.2f\n", filepath.Base(g), 1000*r.groups[g])
		}
		fmt.Printf("slowest rules at %d nodes (last evaluation, ms):\n", n)
		for _, rt := range r.slowest {
			fmt.Printf("  %-50s %8.2f\n", rt.name, 1000*rt.seconds)
		}
		fmt.Printf("rule evaluation failures: %.0f; targets not up: %.0f\n", r.failures, r.down)
		fmt.Printf("CPU of one evaluation of every rule at %d nodes: %.0f ms, of the rules per %s: %.0f ms; the most expensive (ms):\n",
			n, 1000*r.ruleCPUOnce, o.interval, 1000*r.ruleCPU)
		for _, rt := range r.ruleCPUTop {
			fmt.Printf("  %-60s %8.1f\n", rt.name, 1000*rt.seconds)
		}
		if r.base != nil {
			fmt.Printf("the -baseline rules (%s), in the same passes: one evaluation of every rule %.0f ms, per %s %.0f ms; the most expensive (ms):\n",
				o.baseline, 1000*r.base.once, o.interval, 1000*r.base.perInterval)
			for _, rt := range r.base.top {
				fmt.Printf("  %-60s %8.1f\n", rt.name, 1000*rt.seconds)
			}
		}
	}

	fmt.Printf("\n%d-port nodes, scrape and evaluation every %s, measured %s after %s of warm-up\n\n", o.ports, o.interval, o.measure, o.warmup)
	fmt.Printf("| nodes | head series | samples/s | Prometheus CPU (cores) | RSS (MiB) | Go heap (MiB) | rule CPU per round (ms) | every rule once (ms) | rule groups' wall time per round (ms) |\n")
	fmt.Printf("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		fmt.Printf("| %d (measured) | %.0f | %.0f | %.3f | %.0f (peak %.0f) | %.0f | %.0f | %.0f | %.0f |\n",
			r.nodes, r.series, r.samples, r.cores, r.rss, r.rssPeak, r.heap, 1000*r.ruleCPU, 1000*r.ruleCPUOnce, 1000*r.ruleRound)
	}
	// Per node: the slope between the smallest and the largest size (one
	// size: the average, which includes Prometheus' fixed cost).
	a, b := results[0], results[len(results)-1]
	slope := func(f func(result) float64) (per, fixed float64) {
		if b.nodes == a.nodes {
			return f(b) / float64(b.nodes), 0
		}
		per = (f(b) - f(a)) / float64(b.nodes-a.nodes)
		return per, f(b) - per*float64(b.nodes)
	}
	get := []func(result) float64{
		func(r result) float64 { return r.series },
		func(r result) float64 { return r.samples },
		func(r result) float64 { return r.cores },
		func(r result) float64 { return r.rss },
		func(r result) float64 { return r.heap },
		func(r result) float64 { return r.ruleCPU },
		func(r result) float64 { return r.ruleCPUOnce },
		func(r result) float64 { return r.ruleRound },
	}
	per := make([]float64, len(get))
	fixed := make([]float64, len(get))
	for i, f := range get {
		per[i], fixed[i] = slope(f)
	}
	fmt.Printf("| per node | %.0f | %.1f | %.5f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", per[0], per[1], per[2], per[3], per[4], 1000*per[5], 1000*per[6], 1000*per[7])
	for _, n := range []float64{1024, 4096} {
		v := make([]float64, len(get))
		for i := range get {
			v[i] = fixed[i] + per[i]*n
		}
		fmt.Printf("| %.0f (extrapolated) | %.0f | %.0f | %.2f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", n, v[0], v[1], v[2], v[3], v[4], 1000*v[5], 1000*v[6], 1000*v[7])
	}
	if a.base == nil {
		return
	}
	// The two rule sets measured in the same passes: their per-node slopes
	// (the Prometheus figures above count both sets' groups running).
	fmt.Printf("\nrule CPU measured in the same passes (ms):\n\n")
	fmt.Printf("| rules | per round at %s nodes | per node and round | every rule once, per node |\n|---|---|---|---|\n", strings.Join(nodeList(results), " / "))
	for _, set := range []struct {
		name string
		get  func(result) *ruleSetCPU
	}{
		{o.baseline + " (-baseline)", func(r result) *ruleSetCPU { return r.base }},
		{o.rules + " (-rules)", func(r result) *ruleSetCPU { return &ruleSetCPU{perInterval: r.ruleCPU, once: r.ruleCPUOnce} }},
	} {
		var rounds []string
		for _, r := range results {
			rounds = append(rounds, fmt.Sprintf("%.0f", 1000*set.get(r).perInterval))
		}
		round, _ := slope(func(r result) float64 { return set.get(r).perInterval })
		once, _ := slope(func(r result) float64 { return set.get(r).once })
		fmt.Printf("| %s | %s | %.2f | %.2f |\n", set.name, strings.Join(rounds, " / "), 1000*round, 1000*once)
	}
}

// nodeList is the fleet sizes measured, as text.
func nodeList(results []result) []string {
	var out []string
	for _, r := range results {
		out = append(out, strconv.Itoa(r.nodes))
	}
	return out
}

// run starts n exporters and a Prometheus scraping them, waits for the
// warm-up and measures.
func run(o options, n int) result {
	dir, err := os.MkdirTemp("", "roce-fleetbench-")
	check(err)
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "node")
	check(sysfixture.WriteScaleNode(root, o.ports))
	rulesAbs, err := filepath.Abs(o.rules)
	check(err)
	ruleDirs := []string{rulesAbs}
	if o.baseline != "" {
		baseAbs, err := filepath.Abs(o.baseline)
		check(err)
		ruleDirs = append(ruleDirs, baseAbs)
	}
	var ruleGlobs []string
	for _, d := range ruleDirs {
		ruleGlobs = append(ruleGlobs, "'"+d+"/*.yml'")
	}

	// The exporters: every node reads the same generated tree (read-only);
	// Prometheus tells them apart by their instance label.
	args := append([]string{"--path.sysfs=" + filepath.Join(root, "sys"), "--path.dev=" + filepath.Join(root, "dev"),
		"--collector.ethtool.replay-dir=" + filepath.Join(root, "replay"), "--log.level=warn"}, strings.Fields(o.extra)...)
	var procs []*proc
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	var targets strings.Builder
	for i := 0; i < n; i++ {
		p := start(fmt.Sprintf("exporter %d", i), o.bin, args, "--web.listen-address=")
		procs = append(procs, p)
		fmt.Fprintf(&targets, "      - targets: ['%s']\n        labels: {node: node%04d}\n", p.addr, i+1)
	}
	fmt.Printf("%d exporters on %d-port nodes started\n", n, o.ports)

	cfg := fmt.Sprintf(`global: {scrape_interval: %s, scrape_timeout: %s, evaluation_interval: %s}
rule_files: [%s]
scrape_configs:
  - job_name: roce-exporter
    static_configs:
%s    relabel_configs:
      - {source_labels: [node], target_label: instance}
      - {action: labeldrop, regex: node}
`, model.Duration(o.interval), model.Duration(o.interval*4/5), model.Duration(o.interval), strings.Join(ruleGlobs, ", "), targets.String())
	cfgFile := filepath.Join(dir, "prometheus.yml")
	check(os.WriteFile(cfgFile, []byte(cfg), 0o644))
	p := start("prometheus", o.prom, []string{"--config.file=" + cfgFile, "--storage.tsdb.path=" + filepath.Join(dir, "tsdb"), "--log.level=warn"}, "--web.listen-address=")
	procs = append(procs, p)

	fmt.Printf("warming up for %s, then measuring for %s\n", o.warmup, o.measure)
	time.Sleep(o.warmup)
	m0 := p.metrics()
	cpu0, t0 := p.cpuSeconds(), time.Now()
	var rssMax float64
	for end := t0.Add(o.measure); time.Now().Before(end); time.Sleep(5 * time.Second) {
		rssMax = max(rssMax, p.rss())
	}
	m1 := p.metrics()
	cpu1, t1 := p.cpuSeconds(), time.Now()
	elapsed := t1.Sub(t0).Seconds()

	down := float64(n) - p.query("count(up == 1)", time.Now())
	slowest := p.slowestRules(o.top)
	// Rule CPU: stop the exporters (the scrapes then fail at once and cost
	// nothing), then evaluate every rule's expression through the query
	// API, one at a time, reading Prometheus' CPU time around each. On a
	// shared machine the rule groups' wall-clock durations measure the
	// wait for a CPU as much as the work; CPU time does not. The queries
	// are evaluated at the moment before the exporters stopped: after it,
	// the failed scrapes and the removed rule groups mark every scraped and
	// recorded series stale, so an instant selector (roce_port_info, a
	// recorded rate an alert reads) would find nothing and cost nothing.
	at := time.Now()
	for _, e := range procs[:len(procs)-1] {
		e.stop()
	}
	procs = procs[len(procs)-1:]
	// Reload without rules or targets: the rule groups would otherwise
	// run beside the measured queries and be counted with them.
	check(os.WriteFile(cfgFile, []byte("global: {scrape_interval: 15s}\n"), 0o644))
	check(p.cmd.Process.Signal(syscall.SIGHUP))
	time.Sleep(3 * time.Second)
	sets := p.ruleCPU(ruleDirs, at, o.interval, o.top)

	groups := m1.byLabel("prometheus_rule_group_last_duration_seconds", "rule_group")
	// Rule evaluation: the groups' time per interval, averaged over the
	// measured time (groups with a longer interval of their own run less
	// often).
	evalTime := m1.sum("prometheus_rule_group_duration_seconds_sum") - m0.sum("prometheus_rule_group_duration_seconds_sum")
	res := result{
		nodes:       n,
		series:      m1.sum("prometheus_tsdb_head_series"),
		samples:     (m1.sum("prometheus_tsdb_head_samples_appended_total") - m0.sum("prometheus_tsdb_head_samples_appended_total")) / elapsed,
		cores:       (cpu1 - cpu0) / elapsed,
		rss:         p.rss(),
		rssPeak:     max(rssMax, p.rss()),
		heap:        m1.sum("go_memstats_heap_inuse_bytes") / (1 << 20),
		ruleRound:   evalTime / elapsed * o.interval.Seconds(),
		groups:      groups,
		slowest:     slowest,
		failures:    m1.sum("prometheus_rule_evaluation_failures_total"),
		down:        down,
		ruleCPU:     sets[0].perInterval,
		ruleCPUOnce: sets[0].once,
		ruleCPUTop:  sets[0].top,
	}
	if len(sets) > 1 {
		res.base = &sets[1]
	}
	return res
}

type proc struct {
	name string
	cmd  *exec.Cmd
	pf   procfs.Proc
	addr string
	logs bytes.Buffer
}

// start runs bin with args and listenFlag+addr on a free loopback port and
// waits until it listens.
func start(name, bin string, args []string, listenFlag string) *proc {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	addr := l.Addr().String()
	l.Close()
	p := &proc{name: name, addr: addr}
	p.cmd = exec.Command(bin, append(args, listenFlag+addr)...)
	p.cmd.Stdout, p.cmd.Stderr = &p.logs, &p.logs
	check(p.cmd.Start())
	p.pf, err = procfs.NewProc(p.cmd.Process.Pid)
	check(err)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return p
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "%s did not start:\n%s", name, p.logs.String())
			os.Exit(1)
		}
	}
}

func (p *proc) stop() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

func (p *proc) cpuSeconds() float64 {
	st, err := p.pf.Stat()
	check(err)
	return st.CPUTime()
}

// cpuPrecise is the CPU time of every thread of the process in seconds,
// from schedstat (nanoseconds; stat counts clock ticks of 10 ms).
func (p *proc) cpuPrecise() float64 {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", p.cmd.Process.Pid))
	check(err)
	var ns float64
	for _, t := range tasks {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", p.cmd.Process.Pid, t.Name()))
		if err != nil {
			continue // the thread ended
		}
		if f := strings.Fields(string(raw)); len(f) > 0 {
			v, _ := strconv.ParseFloat(f[0], 64)
			ns += v
		}
	}
	return ns / 1e9
}

// rss is the resident set size in MiB.
func (p *proc) rss() float64 {
	st, err := p.pf.NewStatus()
	check(err)
	return float64(st.VmRSS) / (1 << 20)
}

// families are a /metrics page parsed.
type families map[string]*dto.MetricFamily

func (p *proc) metrics() families {
	resp, err := http.Get("http://" + p.addr + "/metrics")
	check(err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	check(err)
	parser := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	check(err)
	return mfs
}

// query returns the value of a one-sample instant query at t (0 if none).
func (p *proc) query(q string, t time.Time) float64 {
	resp, err := http.Get("http://" + p.addr + "/api/v1/query?query=" + url.QueryEscape(q) +
		"&time=" + strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64))
	check(err)
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	check(json.NewDecoder(resp.Body).Decode(&r))
	if len(r.Data.Result) != 1 {
		return 0
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	v, _ := strconv.ParseFloat(s, 64)
	return v
}

// ruleCPU evaluates every rule expression of the files in each of dirs at t
// and returns, per directory, the CPU time of the rules per interval (each
// rule's cost times interval / its group's interval: a group with an
// interval of its own runs less often), that of one evaluation of every
// rule, and the top most expensive rules. Each expression is evaluated once
// per pass over all of them (the directories' interleaved), and its cheapest
// pass counts: a garbage collection runs for a good part of a second on a
// large head and is charged to whatever query runs beside it, so repeating
// one query back to back would meet the same collection every time, while
// passes a second or more apart do not.
func (p *proc) ruleCPU(dirs []string, t time.Time, interval time.Duration, top int) []ruleSetCPU {
	var all []ruleTime
	var exprs []string
	var share []float64 // interval / the rule's group interval
	var set []int       // the index in dirs
	for i, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.yml"))
		check(err)
		for _, f := range files {
			rf, err := alerts.ReadRuleFile(f)
			check(err)
			for _, g := range rf.Groups {
				every := interval
				if g.Interval != "" {
					d, err := model.ParseDuration(g.Interval)
					check(err)
					every = time.Duration(d)
				}
				for _, r := range g.Rules {
					all = append(all, ruleTime{r.Name(), -1})
					exprs = append(exprs, r.Expr)
					share = append(share, interval.Seconds()/every.Seconds())
					set = append(set, i)
				}
			}
		}
	}
	// The sets take turns within a pass, each rule at the same fraction of
	// its own set, so a change of the machine's load meets both alike.
	order := make([]int, len(exprs))
	size := make([]int, len(dirs))
	pos := make([]float64, len(exprs))
	for i := range exprs {
		order[i] = i
		pos[i] = float64(size[set[i]])
		size[set[i]]++
	}
	for i := range pos {
		pos[i] /= float64(size[set[i]])
	}
	sort.SliceStable(order, func(a, b int) bool { return pos[order[a]] < pos[order[b]] })
	for pass := 0; pass < 11; pass++ {
		for _, i := range order {
			c0 := p.cpuPrecise()
			p.query(exprs[i], t)
			if c := p.cpuPrecise() - c0; all[i].seconds < 0 || c < all[i].seconds {
				all[i].seconds = c
			}
		}
	}
	out := make([]ruleSetCPU, len(dirs))
	ranked := make([][]ruleTime, len(dirs))
	for i, rt := range all {
		out[set[i]].once += rt.seconds
		out[set[i]].perInterval += rt.seconds * share[i]
		ranked[set[i]] = append(ranked[set[i]], rt)
	}
	for d, r := range ranked {
		sort.Slice(r, func(a, b int) bool { return r[a].seconds > r[b].seconds })
		out[d].top = r[:min(top, len(r))]
	}
	return out
}

type ruleTime struct {
	name    string
	seconds float64
}

// slowestRules lists the n rules whose last evaluation took longest
// (/api/v1/rules).
func (p *proc) slowestRules(n int) []ruleTime {
	resp, err := http.Get("http://" + p.addr + "/api/v1/rules")
	check(err)
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name           string  `json:"name"`
					EvaluationTime float64 `json:"evaluationTime"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	check(json.NewDecoder(resp.Body).Decode(&r))
	var out []ruleTime
	for _, g := range r.Data.Groups {
		for _, rl := range g.Rules {
			out = append(out, ruleTime{rl.Name, rl.EvaluationTime})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seconds > out[j].seconds })
	return out[:min(n, len(out))]
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

// sum adds the samples of a family; name may end in _sum or _count of a
// summary or histogram.
func (f families) sum(name string) float64 {
	for _, suffix := range []string{"_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok || f[base] == nil {
			continue
		}
		var s float64
		for _, m := range f[base].Metric {
			switch {
			case m.Summary != nil && suffix == "_sum":
				s += m.Summary.GetSampleSum()
			case m.Summary != nil:
				s += float64(m.Summary.GetSampleCount())
			case m.Histogram != nil && suffix == "_sum":
				s += m.Histogram.GetSampleSum()
			case m.Histogram != nil:
				s += float64(m.Histogram.GetSampleCount())
			}
		}
		return s
	}
	mf := f[name]
	if mf == nil {
		return 0
	}
	var s float64
	for _, m := range mf.Metric {
		s += value(m)
	}
	return s
}

func (f families) byLabel(name, label string) map[string]float64 {
	out := map[string]float64{}
	if mf := f[name]; mf != nil {
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if l.GetName() == label {
					out[l.GetValue()] += value(m)
				}
			}
		}
	}
	return out
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleetbench:", err)
		os.Exit(1)
	}
}
