package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/pipeline"
	"github.com/roce-exporter/roce_exporter/reader"
)

// surveySources are what the start-up line counts: devices and ports, the
// netdevs behind them, and the PCI bus for a NIC without a driver.
var surveySources = []string{node.SourceRDMA, node.SourceNetdev, node.SourcePCIe}

// logWhatWasFound reads the node once at start-up and logs what is there,
// so that a wrong --path.sysfs or a node without RDMA shows in the first
// lines of the log. With probes on, the pipeline's first collection is that
// read (the probes need it as their first Previous). Otherwise it is a read
// of its own, by a short-lived reader of the sources it counts: the
// pipeline's first collection stays the first scrape's, without a Previous
// a moment older (a rate over milliseconds would judge noise), and its
// reader's counts of skipped files stay those of the scrapes.
func logWhatWasFound(ctx context.Context, pl *pipeline.Pipeline, probesOn bool, ropts reader.Options, logger *slog.Logger) {
	if probesOn {
		c, err := pl.Collect(ctx)
		if err != nil {
			logger.Warn("first reading of the node failed", "err", err)
			return
		}
		logSurvey(logger, c.Snapshot, ropts.SysPath, ropts.Sources)
		logCollection(logger, c)
		return
	}
	o := ropts
	o.Sources = nil
	for _, s := range surveySources {
		if slices.Contains(ropts.Sources, s) {
			o.Sources = append(o.Sources, s)
		}
	}
	// The scrapes' reader logs the files it skips; this one stays quiet.
	rd, err := reader.New(o, slog.New(slog.DiscardHandler))
	if err != nil {
		logger.Warn("first reading of the node failed", "err", err)
		return
	}
	defer rd.Close()
	done := make(chan *reader.Result, 1)
	go func() { done <- rd.Read() }()
	select {
	case res := <-done:
		logSurvey(logger, res.Snapshot, ropts.SysPath, ropts.Sources)
	case <-ctx.Done():
	}
}

// logSurvey logs one line of what the node has: an info line with the
// counts, or a warning when there is no RDMA device to read.
func logSurvey(logger *slog.Logger, snap *node.Snapshot, sysPath string, sources []string) {
	if !slices.Contains(sources, node.SourceRDMA) {
		logger.Warn("The rdma collector is disabled: no RDMA device is read")
		return
	}
	infiniband := filepath.Join(sysPath, "class", "infiniband")
	found, nothing := describeNode(snap, infiniband)
	if nothing {
		logger.Warn("Found no RDMA device", "summary", found)
		return
	}
	logger.Info("Found the node", "summary", found)
}

// describeNode says in a line what a read found, in English (the log and
// the plan's comments): "8 RDMA ports (8 up) on 8
// NICs, 8 netdevs", or why there is nothing to read (true).
func describeNode(snap *node.Snapshot, infiniband string) (string, bool) {
	if snap.Sources[node.SourceRDMA] == node.SourceFailed {
		return tr(nil, msgSurveyUnreadable, infiniband), true
	}
	ports, up := 0, 0
	nics, netdevs := map[string]bool{}, map[string]bool{}
	unreadable := 0
	for _, d := range snap.Devices {
		if d.Unreadable != "" {
			unreadable++
			continue
		}
		if d.PCIAddress != "" {
			nics[d.PCIAddress] = true
		}
		for _, p := range d.Ports {
			ports++
			if p.Up() {
				up++
			}
			if p.Interface != "" {
				netdevs[p.Interface] = true
			}
		}
	}
	if len(snap.Devices) == 0 {
		if len(snap.NICs) > 0 {
			var names []string
			for _, n := range snap.NICs {
				names = append(names, node.NICName(n)+" at "+n.Address)
			}
			return tr(nil, msgSurveyNICsNoRDMA, infiniband, len(snap.NICs), strings.Join(names, "; ")), true
		}
		return tr(nil, msgSurveyNoRDMA, infiniband), true
	}
	s := tr(nil, msgSurveyFound, ports, up, len(nics), len(netdevs))
	if unreadable > 0 {
		s = tr(nil, msgSurveyFoundUnreadable, s, unreadable)
	}
	return s, false
}
