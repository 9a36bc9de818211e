package probes

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/probes/parse"
)

// ncclRunner launches all_reduce_perf across the plan's nodes with mpirun
// from the leader, the way operators do it by hand, with the NCCL network
// selection pinned from the plan so a silent fallback to TCP or the wrong
// GID shows up as a failure rather than a slow success.
type ncclRunner struct {
	plan   *config.Plan
	self   *config.Node
	node   NodeInfo
	base   *Baselines
	logger *slog.Logger
}

func (r *ncclRunner) cfg() config.NCCL { return r.plan.Probes.NCCL }

// env returns the NCCL variables derived from the plan. Values from the
// plan's env map win, so an operator can override the derivation.
func (r *ncclRunner) env() map[string]string {
	var ifnames, hcas []string
	gids := map[int]bool{}
	for _, i := range r.self.Interfaces {
		ifnames = append(ifnames, i.Netdev)
		if i.RDMADevice != "" {
			hcas = append(hcas, i.RDMADevice+":1")
			if ip := i.IP(); ip.IsValid() {
				if g, ok := r.node.GIDIndex(i.RDMADevice, ip); ok {
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

// argv builds the mpirun command line: one rank per GPU, one GPU per rank.
func (r *ncclRunner) argv(env map[string]string) []string {
	return r.argvFor(r.plan.NodeNames(), env)
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

func (r *ncclRunner) run(ctx context.Context) *Result {
	return r.runOn(ctx, r.plan.NodeNames())
}

// runOn runs all_reduce_perf across the named nodes.
func (r *ncclRunner) runOn(ctx context.Context, names []string) *Result {
	res := &Result{Probe: KindNCCL, Start: time.Now()}
	if len(names) != len(r.plan.Nodes) {
		res.Probe = KindNCCLGroup // judged against the groups' own baseline
	}
	env := r.env()
	res.Command = r.argvFor(names, env)
	procEnv := os.Environ()
	for k, v := range env {
		procEnv = append(procEnv, k+"="+v)
	}
	out := runCommand(ctx, r.cfg().Timeout, res.Command, procEnv, nil)
	res.Duration = time.Since(res.Start)
	res.ExitCode, res.StderrTail = out.ExitCode, out.Stderr
	if res.failedToRun(out) {
		return res
	}
	parsed, err := parse.NCCL(bytes.NewReader(combined(out)))
	if parsed != nil {
		res.Warnings = parsed.Warnings
		res.WrongResults = parsed.WrongResults()
		res.BusBandwidth = parsed.BusBandwidthBySize()
		r.setBandwidth(res, parsed)
	}
	if reason := parse.NCCLFailureReason(out.ExitCode, parsed); reason != "" {
		res.fail(reason)
		return res
	}
	if err != nil || parsed == nil || len(parsed.Rows) == 0 {
		res.fail(ReasonExecError)
		return res
	}
	if reason := r.judgeTransport(res, combined(out)); reason != "" {
		res.fail(reason)
		return res
	}
	if floor := r.cfg().MinBusBandwidthGBps * 1e9; floor > 0 {
		res.ExpectedBytesPerSecond = floor
	}
	judgeBandwidth(res, r.base, r.logger)
	return res
}

// setBandwidth stores the large-message bus bandwidth as the judged number
// and nccl-tests' average beside it.
func (r *ncclRunner) setBandwidth(res *Result, parsed *parse.NCCLResult) {
	threshold := uint64(r.cfg().LargeMessageBytes)
	if lm, ok := parsed.LargeMessageBusBandwidth(threshold); ok {
		res.BandwidthBytesPerSecond, res.BandwidthMessageBytes = lm.BytesPerSecond, lm.SizeBytes
		if lm.Fallback {
			res.LargeMessageFallback = true
			res.Warnings = append(res.Warnings, parse.NCCLFallbackNote(threshold, lm.SizeBytes))
		}
	}
	if parsed.HasAverage {
		avg := parsed.AvgBusBandwidthBytesPerSecond
		res.AverageBusBandwidthBytesPerSecond = &avg
	}
}

// gpuDirectInfo is the optional part of NodeInfo that says whether this
// node offers GPUDirect RDMA (SnapshotNode answers it from the gpu source).
type gpuDirectInfo interface {
	// GPUDirectAvailable: available, and whether the node knows at all.
	GPUDirectAvailable() (available, known bool)
}

// judgeTransport reads NCCL's transport report and returns the reason a run
// fails on it, whatever its bandwidth: a fallback to sockets, or RDMA
// without GPUDirect on a node that offers GPUDirect.
func (r *ncclRunner) judgeTransport(res *Result, out []byte) string {
	tr := parse.NCCLTransport(string(out))
	if !tr.Reported() {
		return ""
	}
	res.NCCLTransport = &tr
	if tr.SocketFallback() {
		return ReasonSocketFallback
	}
	if gi, ok := r.node.(gpuDirectInfo); ok && tr.NoGDRDMA() {
		if avail, known := gi.GPUDirectAvailable(); known && avail {
			return ReasonNoGDRDMA
		}
	}
	return ""
}
