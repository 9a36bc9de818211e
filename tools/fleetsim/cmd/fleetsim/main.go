// Command fleetsim prints the fleet diagnosis table (make sim): per fault
// class and fleet size, seeded trials of simulated roce_exporter nodes
// judged by Prometheus running the shipped alerts/; the time from onset to
// the right suspect, the wrong suspects, the missed faults and the peak
// share of the fabric under test. Progress goes to stderr, the table to
// stdout.
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/tools/fleetsim"
)

func main() {
	defaults := fleetsim.DefaultConfig(0)
	sizes := flag.String("nodes", "128,1024", "fleet sizes, comma separated")
	trials := flag.String("trials", "50,10", "seeded trials per class at each fleet size, comma separated")
	classes := flag.String("classes", "", "fault classes to run, separated by ';' (default: all)")
	rulesDir := flag.String("rules", "alerts", "directory of the rule files, as Prometheus loads them")
	evalInterval := flag.Duration("eval-interval", 15*time.Second, "evaluation_interval (deploy/prometheus/prometheus.yml)")
	scrape := flag.Duration("scrape-interval", defaults.Scrape, "scrape_interval")
	interval := flag.Duration("interval", defaults.Interval, "probes.nic_test_interval")
	duration := flag.Duration("duration", defaults.Duration, "probes.ib_write_bw.duration")
	timeout := flag.Duration("timeout", defaults.Timeout, "probes.ib_write_bw.timeout")
	witnessSwitches := flag.Bool("witness-switches", defaults.WitnessSwitches, "the nodes know the fleet's switches (--probes.prometheus-url) when they choose witnesses")
	share := flag.Float64("share", defaults.Share, "probes.max_fabric_share")
	noise := flag.Float64("noise", defaults.Noise, "share of first attempts that fail and pass their retest")
	warmup := flag.Duration("warmup", defaults.Warmup, "how long Prometheus runs before the onset")
	deadline := flag.Duration("deadline", defaults.Deadline, "how long after the onset a fault may take to be named")
	parallel := flag.Int("parallel", runtime.GOMAXPROCS(0), "trials run at once")
	exact := flag.Bool("exact", false, "run every rule evaluation, even those that cannot change anything (slower, same table)")
	tradeSizes := flag.String("tradeoff-nodes", "8,128,1024", "fleet sizes of the max_fabric_share trade-off table")
	verbose := flag.Bool("v", false, "print every trial's faults and when each judged alert fired (from the onset), wrong ones marked, to stderr")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile to this file")
	firstSeed := flag.Int("first-seed", 1, "the seed of each class's first trial: -trials N runs seeds first-seed … first-seed+N-1")
	recordPath := flag.String("record", "", "append every finished trial to this file (JSON lines) and skip the trials it already holds for the same rules, plan and simulator: a stopped run resumes, runs of other seeds merge")
	tablePaths := flag.String("table", "", "run nothing: print the table of the trials recorded in these files (comma separated) for the same rules, plan and simulator")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		check(err)
		check(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}

	collectSeldom()
	rs, err := fleetsim.LoadRules(*rulesDir, *evalInterval)
	check(err)
	fmt.Fprintf(os.Stderr, "fleetsim: %s: evaluating %d rules of %s every %v (judged: %s); %d rules cannot change a judged alert and are not evaluated\n",
		*rulesDir, rs.Rules, strings.Join(groupNames(rs.Groups), ", "), *evalInterval, strings.Join(rs.Judged, ", "), rs.Left)

	ns, ts := ints(*sizes), ints(*trials)
	if len(ts) != len(ns) {
		check(fmt.Errorf("-trials has %d counts for %d fleet sizes", len(ts), len(ns)))
	}
	if *firstSeed < 1 {
		check(fmt.Errorf("-first-seed %d: seeds start at 1", *firstSeed))
	}
	run := fleetsim.Classes
	if *classes != "" {
		run = nil
		for _, name := range strings.Split(*classes, ";") {
			c, ok := fleetsim.ClassNamed(strings.TrimSpace(name))
			if !ok {
				check(fmt.Errorf("no fault class %q", name))
			}
			run = append(run, c)
		}
	}
	configure := func(n int) fleetsim.Config {
		cfg := fleetsim.DefaultConfig(n)
		cfg.Scrape, cfg.Interval, cfg.Share, cfg.Noise, cfg.Warmup, cfg.Deadline, cfg.Exact = *scrape, *interval, *share, *noise, *warmup, *deadline, *exact
		cfg.Duration, cfg.Timeout, cfg.WitnessSwitches = *duration, *timeout, *witnessSwitches
		return cfg
	}
	var setup string
	if *recordPath != "" || *tablePaths != "" {
		exe, err := os.Executable()
		check(err)
		setup, err = fleetsim.Setup(rs, configure(0), exe)
		check(err)
	}

	start := time.Now()
	var rows []fleetsim.Row
	if *tablePaths != "" {
		recs, torn, err := fleetsim.ReadRecords(strings.Split(*tablePaths, ",")...)
		check(err)
		rows, err = fleetsim.Rows(recs, setup)
		check(err)
		setups := fleetsim.Setups(recs)
		fmt.Fprintf(os.Stderr, "fleetsim: %d trials recorded under this setup (%s); %d under %d other setups left out; %d torn lines skipped\n",
			setups[setup], setup, len(recs)-setups[setup], len(setups)-min(setups[setup], 1), torn)
	} else {
		var done []fleetsim.Record
		var out *fleetsim.RecordFile
		if *recordPath != "" {
			recs, torn, err := fleetsim.ReadRecords(*recordPath)
			check(err)
			for _, r := range recs {
				if r.Setup == setup {
					done = append(done, r)
				}
			}
			fmt.Fprintf(os.Stderr, "fleetsim: setup %s; %s holds %d of its trials (%d torn lines skipped); new trials are appended\n", setup, *recordPath, len(done), torn)
			out, err = fleetsim.OpenRecords(*recordPath)
			check(err)
			defer out.Close()
		}
		batch, batches := 0, len(ns)*len(run)
		for si, n := range ns {
			cfg := configure(n)
			sim := fleetsim.NewSim(cfg, rs)
			check(sim.Prepare(run))
			for _, c := range run {
				batch++
				began := time.Now()
				row := fleetsim.Row{Class: c, Nodes: n, Rails: cfg.Rails, Deadline: cfg.Deadline}
				var seeds []uint64
				for seed := uint64(*firstSeed); seed < uint64(*firstSeed+ts[si]); seed++ {
					if i := slices.IndexFunc(done, func(r fleetsim.Record) bool {
						return r.Nodes == n && r.Class == c.Name && r.Outcome.Seed == seed
					}); i >= 0 {
						row.Outcomes = append(row.Outcomes, done[i].Outcome)
						continue
					}
					seeds = append(seeds, seed)
				}
				recorded := len(row.Outcomes)
				evals, replayed := runTrials(sim, c, seeds, *parallel, func(o fleetsim.Outcome, took time.Duration) {
					row.Outcomes = append(row.Outcomes, o)
					if out != nil {
						check(out.Add(fleetsim.Record{Setup: setup, Class: c.Name, Nodes: n, Rails: cfg.Rails, Deadline: cfg.Deadline, Outcome: o}))
					}
					if *verbose {
						printTrial(o)
					} else if took > 30*time.Second {
						fmt.Fprintf(os.Stderr, "       %4d nodes  %-34s seed %d: %s (%v)\n", n, c.Name, o.Seed, namedText(o), took.Round(time.Second))
					}
				})
				slices.SortFunc(row.Outcomes, func(a, b fleetsim.Outcome) int { return int(a.Seed) - int(b.Seed) })
				rows = append(rows, row)
				median := "–"
				if t, ok := row.Quantile(0.5); ok {
					median = t.Round(time.Second).String()
				}
				wrongTrials, _ := row.Wrong()
				fmt.Fprintf(os.Stderr, "[%2d/%d] %4d nodes  %-34s %3d trials (%d recorded before) in %-7v median %-9s missed %d, wrong in %d; %d evaluations run, %d replayed; elapsed %v\n",
					batch, batches, n, c.Name, len(row.Outcomes), recorded, time.Since(began).Round(time.Second), median,
					row.Missed(), wrongTrials, evals, replayed, time.Since(start).Round(time.Second))
			}
		}
	}
	fmt.Printf("Rules: %s (judged: %s), evaluated every %v; scraped every %v. Plan: nic_test_interval %v, max_fabric_share %v, ib_write_bw duration %v, timeout %v; witnesses chosen with the switches known: %v. %g%% noise; faults named within %v of onset or missed.\n\n",
		*rulesDir, strings.Join(rs.Judged, ", "), *evalInterval, *scrape, *interval, *share, *duration, *timeout, *witnessSwitches, 100**noise, *deadline)
	fmt.Println(fleetsim.Header)
	for _, r := range rows {
		fmt.Println(r.Line())
	}
	fmt.Println()
	tradeOff(ints(*tradeSizes), *interval)
	fmt.Fprintf(os.Stderr, "fleetsim: done in %v\n", time.Since(start).Round(time.Second))
}

// tradeOff prints what max_fabric_share trades: the README's second table.
func tradeOff(sizes []int, interval time.Duration) {
	fmt.Println("| nodes | max_fabric_share | every NIC tested every | rounds per interval | pairs per round | peak share under test | full pair sweep (background) |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, n := range sizes {
		sweep := time.Duration(n-1+n%2) * interval
		for _, sh := range []float64{1, 0.25, 0.1} {
			r := config.PairRounds(n, sh)
			perRound := (n/2 + r - 1) / r
			fmt.Printf("| %d | %v | %v | %d of %v | %d | %.1f%% | %v (%.1f days) |\n", n, sh, interval, r, interval/time.Duration(r),
				perRound, 100*float64(2*perRound)/float64(n), sweep, sweep.Hours()/24)
		}
	}
}

// runTrials runs the seeds of class, parallel at once, and hands each
// outcome to done as it finishes (one at a time).
func runTrials(sim *fleetsim.Sim, c *fleetsim.Class, seeds []uint64, parallel int, done func(fleetsim.Outcome, time.Duration)) (evals, replayed int) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := 0
	for range max(parallel, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(seeds) {
					return
				}
				began := time.Now()
				o, err := sim.Run(c, seeds[i])
				check(err)
				mu.Lock()
				evals, replayed = evals+o.Evaluations, replayed+o.Replayed
				done(o, time.Since(began))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return evals, replayed
}

// collectSeldom trades memory for time: the trials keep hundreds of MB of
// series each and allocate fast, and a collection at every doubling of the
// heap cost a sixth of the CPU. The heap may grow tenfold, within three
// quarters of the memory available (GOGC and GOMEMLIMIT still rule when set).
func collectSeldom() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(1000)
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "MemAvailable:" {
			if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				debug.SetMemoryLimit(kb << 10 / 4 * 3)
			}
		}
	}
}

// printTrial says what one trial injected, what named it and what was wrong.
func printTrial(o fleetsim.Outcome) {
	fmt.Fprintf(os.Stderr, "  seed %d: %s; %s by %s\n", o.Seed, strings.Join(o.Faults, "; "), namedText(o), strings.Join(o.NamedBy, ", "))
	for _, a := range slices.Sorted(maps.Keys(o.Firing)) {
		mark := "  "
		if slices.Contains(o.Wrong, a) {
			mark = "✗ "
		}
		fmt.Fprintf(os.Stderr, "    %s%s fired %v\n", mark, a, o.Firing[a])
	}
}

// namedText says when a trial's faults were named.
func namedText(o fleetsim.Outcome) string {
	switch {
	case o.Named >= 0:
		return "named after " + o.Named.Round(time.Second).String()
	case len(o.Faults) == 0:
		return "nothing to name"
	}
	return "missed"
}

// groupNames shows rule group keys (file;name) as file: name.
func groupNames(keys []string) []string {
	var out []string
	for _, k := range keys {
		file, name, _ := strings.Cut(k, ";")
		out = append(out, filepath.Base(file)+": "+name)
	}
	return out
}

func ints(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			check(fmt.Errorf("%q is not a positive count", f))
		}
		out = append(out, n)
	}
	return out
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleetsim:", err)
		os.Exit(1)
	}
}
