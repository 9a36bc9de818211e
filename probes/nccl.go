package probes

import (
	"bytes"
	"context"
	"os"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/probes/parse"
)

// ncclRunner launches all_reduce_perf across the plan's nodes with mpirun
// from the leader, the way operators do it by hand, with each node's NCCL
// network selection pinned from its own plan entry (nccl_launch.go), so a
// silent fallback to TCP shows up as a failure rather than a slow success.
type ncclRunner struct {
	// probeKind is KindNCCL for the whole-cluster run, KindNCCLGroup for the
	// rotating groups (judged against the groups' own baseline).
	probeKind string
	plan      *config.Plan
	self      *config.Node
}

func (r *ncclRunner) cfg() config.NCCL { return r.plan.Probes.NCCL }

func (r *ncclRunner) kind() string { return r.probeKind }

// readsNode: the GPU↔NIC relation and GPUDirect support GPUDirect is judged
// by, and the load gate.
func (r *ncclRunner) readsNode() bool { return true }

// probe runs all_reduce_perf across the nodes of t.
func (r *ncclRunner) probe(ctx context.Context, t target, before *node.Snapshot, res *Result) verdict {
	maxBytes, sizing := r.sweepMaxBytes(ctx)
	l := r.launch(t.nodes)
	res.Command = r.argv(l, maxBytes)
	procEnv := os.Environ()
	for k, v := range l.shared {
		procEnv = append(procEnv, k+"="+v)
	}
	out := runCommand(ctx, r.cfg().Timeout, res.Command, procEnv, nil)
	res.ExitCode, res.StderrTail = out.ExitCode, out.Stderr
	if sizing != "" {
		res.Warnings = append(res.Warnings, sizing)
	}
	if v, didNotRun := failedToRun(res, out); didNotRun {
		return v
	}
	text := out.combined()
	parsed, err := parse.NCCL(bytes.NewReader(text))
	if parsed != nil {
		res.Warnings = append(res.Warnings, parsed.Warnings...)
		res.NCCL = &NCCL{WrongResults: parsed.WrongResults(), BusBandwidth: parsed.BusBandwidthBySize()}
		r.setBandwidth(res, parsed)
	}
	if reason := parse.NCCLFailureReason(out.ExitCode, parsed); reason != "" {
		return failed(reason)
	}
	if err != nil || parsed == nil || len(parsed.Rows) == 0 {
		return failed(ReasonExecError)
	}
	if v := r.judgeTransport(res, text, before, t.devices); v.reason != "" {
		return v
	}
	if floor := r.cfg().MinBusBandwidthGBps * 1e9; floor > 0 && res.Bandwidth != nil {
		res.Bandwidth.ExpectedBytesPerSecond = floor
	}
	return verdict{}
}

// setBandwidth stores the large-message bus bandwidth as the judged number
// and nccl-tests' average beside it.
func (r *ncclRunner) setBandwidth(res *Result, parsed *parse.NCCLResult) {
	threshold := uint64(r.cfg().LargeMessageBytes)
	if lm, ok := parsed.LargeMessageBusBandwidth(threshold); ok {
		res.Bandwidth = &Bandwidth{BytesPerSecond: lm.BytesPerSecond}
		res.NCCL.BandwidthMessageBytes = lm.SizeBytes
		if lm.Fallback {
			res.NCCL.LargeMessageFallback = true
			res.Warnings = append(res.Warnings, parse.NCCLFallbackNote(threshold, lm.SizeBytes))
		}
	}
	if parsed.HasAverage {
		avg := parsed.AvgBusBandwidthBytesPerSecond
		res.NCCL.AverageBusBandwidthBytesPerSecond = &avg
	}
}

// judgeTransport reads NCCL's transport report and returns the reason a run
// fails on it, whatever its bandwidth: a fallback to TCP sockets, or this
// node's ranks without GPUDirect RDMA although its GPUs and NICs share a PCIe
// switch (judgeGPUDirect). GPUDirect off by NCCL's own distance rule is by
// design: such a run is judged on its bandwidth.
func (r *ncclRunner) judgeTransport(res *Result, out []byte, snap *node.Snapshot, devices []string) verdict {
	tr := parse.NCCLTransport(string(out))
	if !tr.Reported() {
		return verdict{}
	}
	res.NCCL.Transport = &tr
	if tr.SocketFallback() {
		return failed(ReasonSocketFallback)
	}
	hosts, failing := judgeGPUDirect(&tr, localView(r.self.Name, snap, devices))
	res.NCCL.GPUDirect = hosts
	for _, h := range hosts {
		if h.suspect {
			res.Warnings = append(res.Warnings, "GPUDirect RDMA on "+orUnnamed(h.Host)+": cannot tell: "+h.Why)
		}
	}
	if failing != nil {
		return verdict{reason: ReasonNoGDRDMA, hint: gpuDirectHint(failing)}
	}
	return verdict{}
}

// ownTraffic bounds what the run moved through this node's ports, all of
// them together: nccl-tests defines the bus bandwidth as the rate each rank
// moves 2(N-1)/N of the data at, and that is what leaves (and enters) a node
// between nodes: on a ring, one edge of each ring crosses the node's
// boundary and carries that much; on NCCL's double binary tree, a node
// sends and receives about twice the data each way. So the best bus
// bandwidth of any size, over the whole run, bounds it each way.
func (r *ncclRunner) ownTraffic(_ target, res *Result, elapsed time.Duration) traffic {
	if res.NCCL == nil {
		return traffic{}
	}
	best := 0.0
	for _, bw := range res.NCCL.BusBandwidth {
		best = max(best, bw)
	}
	each := best * elapsed.Seconds()
	return traffic{tx: each, rx: each}
}
