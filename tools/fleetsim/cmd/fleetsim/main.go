// Command fleetsim prints the fleet localisation table (make sim): for each
// fleet size and injected fault, the time until the right suspect is named,
// the wrong suspects and the peak share of the fabric under test.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/tools/fleetsim"
)

func main() {
	sizes := flag.String("nodes", "8,128,1024", "fleet sizes, comma separated")
	share := flag.Float64("share", 0.25, "probes.max_fabric_share")
	interval := flag.Duration("interval", time.Hour, "probes.nic_test_interval")
	epochs := flag.Int("epochs", 48, "intervals to simulate (the fault starts at the fourth)")
	flag.Parse()
	fmt.Println("| nodes × rails | fault | suspect named after | wrong suspects | peak share under test | alert |")
	fmt.Println("|---|---|---|---|---|---|")
	var trade []string
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			fmt.Fprintf(os.Stderr, "fleetsim: %q is not a node count\n", f)
			os.Exit(2)
		}
		cfg := fleetsim.DefaultConfig(n)
		cfg.Share, cfg.Interval, cfg.Epochs = *share, *interval, *epochs
		// The faults are independent runs: use every core.
		reports := make([]fleetsim.Report, len(fleetsim.Faults))
		var wg sync.WaitGroup
		for i, fault := range fleetsim.Faults {
			wg.Add(1)
			go func() { defer wg.Done(); reports[i] = fleetsim.Run(cfg, fault) }()
		}
		wg.Wait()
		for _, rep := range reports {
			fault := rep.Fault
			named := "never"
			if rep.Named >= 0 {
				named = rep.Named.Round(time.Minute).String()
			}
			if fault == fleetsim.FaultNone && rep.Named < 0 {
				named = "–"
			}
			wrong := strconv.Itoa(len(rep.Wrong))
			if len(rep.Wrong) > 0 {
				wrong += " (" + strings.Join(rep.Wrong, ", ") + ")"
			}
			fmt.Printf("| %d × %d | %s | %s | %s | %.1f%% | %s |\n", n, cfg.Rails, fault, named, wrong, 100*rep.PeakShare, fleetsim.ExpectedAlert[fault])
		}
		sweep := time.Duration(n-1+n%2) * cfg.Interval
		for _, sh := range []float64{1, 0.25, 0.1} {
			r := config.PairRounds(n, sh)
			perRound := (n/2 + r - 1) / r
			trade = append(trade, fmt.Sprintf("| %d | %v | %v | %d of %v | %d | %.1f%% | %v (%.1f days) |", n, sh, cfg.Interval, r, cfg.Interval/time.Duration(r),
				perRound, 100*float64(2*perRound)/float64(n), sweep, sweep.Hours()/24))
		}
	}
	fmt.Println()
	fmt.Println("| nodes | max_fabric_share | every NIC tested every | rounds per interval | pairs per round | peak share under test | full pair sweep (background) |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, l := range trade {
		fmt.Println(l)
	}
}
