package probes

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/probes/parse"
)

// ncclRunner launches all_reduce_perf across the plan's nodes with mpirun
// from the leader, the way operators do it by hand, with the NCCL network
// selection pinned from the plan so a silent fallback to TCP or the wrong
// GID shows up as a failure rather than a slow success.
type ncclRunner struct {
	// probeKind is KindNCCL for the whole-cluster run, KindNCCLGroup for the
	// rotating groups (judged against the groups' own baseline).
	probeKind string
	plan      *config.Plan
	self      *config.Node
}

func (r *ncclRunner) cfg() config.NCCL { return r.plan.Probes.NCCL }

func (r *ncclRunner) kind() string { return r.probeKind }

// readsNode: the GID index of the compute addresses for NCCL_IB_GID_INDEX,
// whether the node offers GPUDirect RDMA, and the load gate.
func (r *ncclRunner) readsNode() bool { return true }

// env returns the NCCL variables derived from the plan and the node (snap).
// Values from the plan's env map win, so an operator can override the
// derivation.
func (r *ncclRunner) env(snap *node.Snapshot) map[string]string {
	var ifnames, hcas []string
	gids := map[int]bool{}
	for _, i := range r.self.Interfaces {
		ifnames = append(ifnames, i.Netdev)
		if i.RDMADevice != "" {
			hcas = append(hcas, i.RDMADevice+":1")
			if ip := i.IP(); ip.IsValid() {
				if g, ok := gidIndex(snap, i.RDMADevice, ip); ok {
					gids[g] = true
				}
			}
		}
	}
	// NCCL's own report of the transport it chose (NET/IB or NET/Socket,
	// GDRDMA on the channels, the HCAs) is printed at INFO in the INIT and
	// NET subsystems; the runner judges it besides the bandwidth.
	env := map[string]string{"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"}
	if len(ifnames) > 0 {
		env["NCCL_SOCKET_IFNAME"] = "=" + strings.Join(ifnames, ",")
	}
	if len(hcas) > 0 {
		env["NCCL_IB_HCA"] = "=" + strings.Join(hcas, ",")
	}
	switch gi := r.plan.Probes.IBWriteBW.GIDIndex; {
	case gi != nil:
		env["NCCL_IB_GID_INDEX"] = strconv.Itoa(*gi)
	case len(gids) == 1:
		for g := range gids {
			env["NCCL_IB_GID_INDEX"] = strconv.Itoa(g)
		}
	}
	// The class the plan's DSCP map sends to the PFC priority; NCCL's default 0 is
	// DSCP 0, the best-effort class. The health check nccl_env prints the same.
	exp := r.plan.Expectations
	if tc, ok := exp.RoCETrafficClass(); ok {
		env["NCCL_IB_TC"] = strconv.Itoa(tc)
		if exp.Trust == config.TrustPCP && exp.PFCPriority != nil {
			env["NCCL_IB_SL"] = strconv.Itoa(*exp.PFCPriority) // becomes the VLAN PCP
		}
	} else if exp.IBServiceLevel != nil {
		env["NCCL_IB_SL"] = strconv.Itoa(*exp.IBServiceLevel)
	}
	for k, v := range r.cfg().Env {
		env[k] = v
	}
	return env
}

// argvFor is the mpirun command line over the named nodes (a group).
func (r *ncclRunner) argvFor(names []string, env map[string]string) []string {
	c := r.cfg()
	var hosts []string
	for _, name := range names {
		n, _ := r.plan.Node(name)
		hosts = append(hosts, fmt.Sprintf("%s:%d", n.ManagementIP, c.GPUsPerNode))
	}
	argv := []string{c.MPIRun, config.MPIRunRanksFlag, strconv.Itoa(c.GPUsPerNode * len(hosts)), config.MPIRunHostsFlag, strings.Join(hosts, ",")}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		// "-x NAME" exports the variable from mpirun's own environment,
		// which we set; the value never passes through a shell.
		argv = append(argv, "-x", k)
	}
	argv = append(argv, c.ExtraMPIRunArgs...)
	return append(argv, c.Command, "-b", strconv.FormatInt(int64(c.MinBytes), 10), "-e", strconv.FormatInt(int64(c.MaxBytes), 10), "-f", "2", "-g", "1")
}

// probe runs all_reduce_perf across the nodes of t.
func (r *ncclRunner) probe(ctx context.Context, t target, before *node.Snapshot, res *Result) verdict {
	env := r.env(before)
	res.Command = r.argvFor(t.nodes, env)
	procEnv := os.Environ()
	for k, v := range env {
		procEnv = append(procEnv, k+"="+v)
	}
	out := runCommand(ctx, r.cfg().Timeout, res.Command, procEnv, nil)
	res.ExitCode, res.StderrTail = out.ExitCode, out.Stderr
	if v, didNotRun := failedToRun(res, out); didNotRun {
		return v
	}
	text := out.combined()
	parsed, err := parse.NCCL(bytes.NewReader(text))
	if parsed != nil {
		res.Warnings = parsed.Warnings
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
