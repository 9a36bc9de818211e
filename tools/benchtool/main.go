// Command benchtool measures the exporter against Debian's
// prometheus-node-exporter on the same generated fixture: CPU seconds per
// scrape and their ratio, scrape latency percentiles, peak RSS, syscalls
// per exported value (strace), and RSS growth over a long soak.
//
//	go run ./tools/benchtool -ports 8 -scrapes 2000
//	go run ./tools/benchtool -ports 32 -soak 10000
//	go run ./tools/benchtool -ports 8 -all-collectors -idle-clients 1530 -nofile 2048 -node-exporter ''
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
	"github.com/roce-exporter/roce_exporter/tools/idleflood"
	"github.com/roce-exporter/roce_exporter/tools/loadtest"
)

func main() {
	ports := flag.Int("ports", 8, "RDMA ports in the generated fixture")
	scrapes := flag.Int("scrapes", 1000, "scrapes per exporter for CPU and latency")
	straceScrapes := flag.Int("strace-scrapes", 50, "scrapes counted under strace (0 skips)")
	soak := flag.Int("soak", 0, "if > 0: scrape our exporter this many times and report RSS at 1,000 and at the end")
	load := flag.Int("load", 0, "if > 0: this many concurrent clients for -load-duration (load test)")
	loadDuration := flag.Duration("load-duration", 60*time.Second, "duration of the load test")
	ours := flag.String("binary", "./roce_exporter", "our exporter binary")
	nodeExp := flag.String("node-exporter", "/usr/bin/prometheus-node-exporter", "node_exporter binary ('' skips the comparison)")
	allCollectors := flag.Bool("all-collectors", false, "run every default collector (with ethtool/DCB captures) instead of the node_exporter-equivalent rdma+netdev")
	extra := flag.String("args", "", "extra flags for our exporter, space separated")
	idleClients := flag.Int("idle-clients", 0, "if > 0: open this many idle keep-alive connections, then scrape during the attack (issue 12)")
	idleScrapes := flag.Int("idle-scrapes", 50, "scrapes made during the -idle-clients attack")
	nofile := flag.Int("nofile", 0, "if > 0: run our exporter under `prlimit --nofile=N:N` (util-linux)")
	defaultFlags := flag.Bool("default-flags", false, "run both exporters as installed: keep their own go_*/process_* metrics (no --web.disable-exporter-metrics); with -all-collectors ours also runs every default collector")
	flag.Parse()

	dir, err := os.MkdirTemp("", "roce-bench-")
	check(err)
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "node")
	check(sysfixture.WriteScaleNode(root, *ports))
	sys := filepath.Join(root, "sys")
	fmt.Printf("fixture: %d ConnectX-7 ports (full counters, hw_counters, 256-slot GID tables) in %s\n", *ports, root)

	// Self-metrics off on both sides isolates the cost of the node's
	// metrics; -default-flags measures what an installed exporter costs.
	selfMetrics := []string{"--web.disable-exporter-metrics"}
	if *defaultFlags {
		selfMetrics = nil
		fmt.Println("default flags: both exporters export their own go_* and process_* metrics")
	}
	oursArgs := append([]string{"--path.sysfs=" + sys, "--path.dev=" + filepath.Join(root, "dev"), "--log.level=warn"}, selfMetrics...)
	if *allCollectors {
		oursArgs = append(oursArgs, "--collector.ethtool.replay-dir="+filepath.Join(root, "replay"))
	} else {
		oursArgs = append(oursArgs, "--collector.disable-defaults", "--collector.rdma", "--collector.netdev")
	}
	oursArgs = append(oursArgs, strings.Fields(*extra)...)
	bin := *ours
	if *nofile > 0 {
		// prlimit sets the limit and execs the exporter in the same process.
		oursArgs = append([]string{fmt.Sprintf("--nofile=%d:%d", *nofile, *nofile), bin}, oursArgs...)
		bin = "prlimit"
	}
	a := start("roce_exporter", bin, oursArgs)
	defer a.stop()

	if *idleClients > 0 {
		r := idleflood.Run(idleflood.Options{Addr: a.addr, PID: a.cmd.Process.Pid, Clients: *idleClients, Path: "/metrics", Scrapes: *idleScrapes})
		fmt.Println("idle clients:", r)
		return
	}

	if *soak > 0 {
		runSoak(a, *soak)
		return
	}
	if *load > 0 {
		rss0, _ := a.rss()
		r := loadtest.Run("http://"+a.addr+"/metrics", *load, *loadDuration)
		fmt.Println("load:", r)
		if r.FirstError != "" {
			fmt.Println("  first error:", r.FirstError)
		}
		rss1, peak := a.rss()
		fmt.Printf("  RSS before %.1f MiB, after %.1f MiB, peak %.1f MiB\n", rss0, rss1, peak)
		return
	}
	ra := measure(a, *scrapes)
	report("roce_exporter", ra)
	if *straceScrapes > 0 {
		perfCount(a, *straceScrapes*4, ra)
		straceCount(a, *straceScrapes, ra)
	}
	if *nodeExp != "" {
		if _, err := os.Stat(*nodeExp); err != nil {
			fmt.Printf("node_exporter not found at %s: comparison skipped\n", *nodeExp)
			return
		}
		b := start("node_exporter", *nodeExp, append([]string{"--path.sysfs=" + sys, "--collector.disable-defaults",
			"--collector.infiniband", "--collector.netclass", "--log.level=warn"}, selfMetrics...))
		defer b.stop()
		rb := measure(b, *scrapes)
		report("node_exporter", rb)
		target := "0.5"
		if *defaultFlags {
			target = "0.4 with default flags"
		}
		fmt.Printf("\nCPU per scrape, roce_exporter / node_exporter: %.3f (target <= %s)\n", ra.cpuPerScrape/rb.cpuPerScrape, target)
		fmt.Printf("CPU per exported series, roce_exporter / node_exporter: %.3f\n", (ra.cpuPerScrape/float64(ra.series))/(rb.cpuPerScrape/float64(rb.series)))
	}
}

type proc struct {
	name string
	cmd  *exec.Cmd
	pf   procfs.Proc
	addr string
	logs bytes.Buffer
}

func start(name, bin string, args []string) *proc {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	addr := l.Addr().String()
	l.Close()
	p := &proc{name: name, addr: addr}
	p.cmd = exec.Command(bin, append(args, "--web.listen-address="+addr)...)
	p.cmd.Stdout, p.cmd.Stderr = &p.logs, &p.logs
	check(p.cmd.Start())
	p.pf, err = procfs.NewProc(p.cmd.Process.Pid)
	check(err)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "%s did not start:\n%s", name, p.logs.String())
			os.Exit(1)
		}
	}
	return p
}

func (p *proc) stop() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

// client scrapes without compression, so both exporters do the same work.
var client = &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 1}}

func (p *proc) scrape() ([]byte, time.Duration) {
	begin := time.Now()
	resp, err := client.Get("http://" + p.addr + "/metrics")
	check(err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	check(err)
	return body, time.Since(begin)
}

// cpuSeconds is the CPU time (user + system) the process has used.
func (p *proc) cpuSeconds() float64 {
	st, err := p.pf.Stat()
	check(err)
	return st.CPUTime()
}

// rss returns the resident set size and its peak (VmRSS, VmHWM) in MiB.
func (p *proc) rss() (cur, peak float64) {
	st, err := p.pf.NewStatus()
	check(err)
	return float64(st.VmRSS) / (1 << 20), float64(st.VmHWM) / (1 << 20)
}

type result struct {
	scrapes        int
	series         int
	counterValues  int
	cpuPerScrape   float64
	p50, p99, pmax time.Duration
	peakRSSMiB     float64
}

func measure(p *proc, n int) result {
	var body []byte
	for i := 0; i < 20; i++ { // warm up: caches, fds, GC steady state
		body, _ = p.scrape()
	}
	cpu0 := p.cpuSeconds()
	lat := make([]time.Duration, n)
	for i := 0; i < n; i++ {
		_, lat[i] = p.scrape()
	}
	cpu1 := p.cpuSeconds()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	series, counters := countSeries(body)
	_, peak := p.rss()
	return result{
		scrapes: n, series: series, counterValues: counters,
		cpuPerScrape: (cpu1 - cpu0) / float64(n),
		p50:          lat[n/2], p99: lat[n*99/100], pmax: lat[n-1],
		peakRSSMiB: peak,
	}
}

// countSeries counts the samples, and those of counter families.
func countSeries(body []byte) (series, counters int) {
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	check(err)
	for _, f := range families {
		series += len(f.Metric)
		if f.GetType() == dto.MetricType_COUNTER {
			counters += len(f.Metric)
		}
	}
	return series, counters
}

func report(name string, r result) {
	fmt.Printf("\n%s: %d scrapes, %d series (%d counter values)\n", name, r.scrapes, r.series, r.counterValues)
	fmt.Printf("  CPU per scrape:   %.3f ms\n", r.cpuPerScrape*1000)
	fmt.Printf("  latency:          p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", ms(r.p50), ms(r.p99), ms(r.pmax))
	fmt.Printf("  peak RSS:         %.1f MiB\n", r.peakRSSMiB)
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// traced runs tool, which writes its report to the file named by -o,
// attached to p (-p PID) during n scrapes, and returns the report; ok is
// false when tool is not installed. settle is how long the tracer keeps
// counting after the last scrape before it is interrupted.
func traced(p *proc, n int, settle time.Duration, tool string, args ...string) (report []byte, ok bool) {
	if _, err := exec.LookPath(tool); err != nil {
		return nil, false
	}
	out := filepath.Join(os.TempDir(), fmt.Sprintf("roce-%s-%d.txt", tool, os.Getpid()))
	defer os.Remove(out)
	cmd := exec.Command(tool, append(args, "-o", out, "-p", strconv.Itoa(p.cmd.Process.Pid))...)
	check(cmd.Start())
	time.Sleep(500 * time.Millisecond) // let the tracer attach to every thread
	for i := 0; i < n; i++ {
		p.scrape()
	}
	time.Sleep(settle)
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	report, _ = os.ReadFile(out)
	return report, true
}

var perfTotal = regexp.MustCompile(`(?m)^\s*([\d,]+)\s+raw_syscalls:sys_enter`)

// perfCount counts syscalls with the raw_syscalls:sys_enter tracepoint,
// which, unlike strace's ptrace stops, does not slow the exporter down and
// so does not inflate the Go runtime's own wake-ups (sysmon, spinning).
func perfCount(p *proc, n int, r result) {
	b, ok := traced(p, n, 0, "perf", "stat", "-e", "raw_syscalls:sys_enter")
	if !ok {
		fmt.Println("  syscalls (perf):   perf not installed, skipped")
		return
	}
	m := perfTotal.FindSubmatch(b)
	if m == nil {
		fmt.Printf("  syscalls (perf):   tracepoint not available here\n")
		return
	}
	total, _ := strconv.Atoi(strings.ReplaceAll(string(m[1]), ",", ""))
	per := float64(total) / float64(n)
	fmt.Printf("  syscalls (perf):   %.0f per scrape = %.3f per counter value, %.3f per series (tracepoint count, includes 0.5 s idle before the scrapes)\n",
		per, per/float64(r.counterValues), per/float64(r.series))
}

var straceTotal = regexp.MustCompile(`(?m)^\s*100\.00\s+\S+\s+\S+\s+(\d+)\s+(?:\d+\s+)?total$`)

// straceCount attaches strace -c -f to the running exporter during n
// scrapes (after the warm-up, so held-open files are steady state).
func straceCount(p *proc, n int, r result) {
	b, ok := traced(p, n, 200*time.Millisecond, "strace", "-c", "-f")
	if !ok {
		fmt.Println("  syscalls:         strace not installed, skipped")
		return
	}
	m := straceTotal.FindSubmatch(b)
	if m == nil {
		fmt.Printf("  syscalls:         could not parse strace output:\n%s\n", b)
		return
	}
	total, _ := strconv.Atoi(string(m[1]))
	per := float64(total) / float64(n)
	fmt.Printf("  syscalls (strace): %.0f per scrape = %.3f per counter value, %.3f per series (target <= 1.2 per counter value)\n",
		per, per/float64(r.counterValues), per/float64(r.series))
	fmt.Printf("%s", topSyscalls(b))
}

func topSyscalls(b []byte) string {
	var out strings.Builder
	lines := strings.Split(string(b), "\n")
	n := 0
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) >= 5 && f[0] != "%" && !strings.HasPrefix(f[0], "-") && f[len(f)-1] != "total" && n < 6 {
			fmt.Fprintf(&out, "                    %s\n", strings.TrimSpace(l))
			n++
		}
	}
	return out.String()
}

// runSoak scrapes n times and samples RSS every 1,000 scrapes. RSS of a Go
// process moves by a megabyte or so with the heap goal and the scavenger, so
// a leak is told from noise by the least-squares trend of the samples, not
// by the difference of two of them.
func runSoak(p *proc, n int) {
	var xs, ys []float64
	begin := time.Now()
	for i := 1; i <= n; i++ {
		p.scrape()
		if i%1000 == 0 {
			xs = append(xs, float64(i))
			rss, _ := p.rss()
			ys = append(ys, rss)
		}
	}
	fmt.Printf("soak: %d scrapes in %s\n", n, time.Since(begin).Round(time.Second))
	if len(ys) == 0 {
		fmt.Println("  fewer than 1,000 scrapes: no samples")
		return
	}
	fmt.Printf("  RSS every 1,000 scrapes (MiB):")
	for _, y := range ys {
		fmt.Printf(" %.1f", y)
	}
	fmt.Println()
	last := ys[len(ys)-1]
	fmt.Printf("  RSS after 1,000 scrapes: %.1f MiB, after %d: %.1f MiB (target <= 30 MiB)\n", ys[0], n, last)
	fmt.Printf("  samples 1,000..%d: min %.1f, max %.1f MiB\n", n, slices.Min(ys), slices.Max(ys))
	if len(ys) >= 3 {
		fmt.Printf("  trend: %+.3f MiB per 1,000 scrapes (least squares; a leak shows as a steady positive trend)\n", slope(xs, ys)*1000)
	}
	_, peak := p.rss()
	fmt.Printf("  peak RSS: %.1f MiB\n", peak)
}

func slope(xs, ys []float64) float64 {
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(ys))
	var num, den float64
	for i := range xs {
		num += (xs[i] - mx) * (ys[i] - my)
		den += (xs[i] - mx) * (xs[i] - mx)
	}
	if den == 0 {
		return 0
	}
	return num / den
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtool:", err)
		os.Exit(1)
	}
}
