package probes

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/probes/parse"
)

// ncclLaunch is how the ranks of one run get their environment. The
// variables every node's ranks share reach all of them by mpirun's -x (from
// mpirun's own environment, which the runner sets); those whose values
// differ between nodes (a node's own netdev names, HCAs, or a GID index the
// plan gives it alone) cannot go that way, since -x is one value for every
// rank. Each distinct set of them becomes one Open MPI app context, whose
// ranks start through /usr/bin/env NAME=VALUE …: the values reach exactly
// that context's hosts and never pass through a shell.
type ncclLaunch struct {
	shared   map[string]string
	contexts []appContext
}

// appContext is one "-np N -H hosts … program" of an MPMD mpirun command
// line (contexts are joined by ":" and share one MPI_COMM_WORLD).
type appContext struct {
	nodes []*config.Node
	env   map[string]string
}

// envProgram starts a context's ranks with their own variables: present at
// this path on every Linux distribution, so no $PATH lookup on the remote
// side is needed.
const envProgram = "/usr/bin/env"

// rankEnv is the environment of one node's ranks: NCCL's debug report that
// the transport is judged on, the plan's traffic class, and the node's own
// compute netdevs and HCAs from its plan entry; then the plan's env; then the
// node's node_env. NCCL_IB_GID_INDEX is never derived: the index is per node
// (an extra IPv6 or VLAN address shifts it), NCCL 2.21 and later pick each
// device's RoCE v2 IPv4 GID themselves when it is unset, and a plan that needs
// it sets it in env or per node in node_env.
func (r *ncclRunner) rankEnv(n *config.Node) map[string]string {
	// NCCL's own report of the transport it chose (NET/IB or NET/Socket,
	// GDRDMA on the channels, the HCAs) is printed at INFO in the INIT and
	// NET subsystems; the runner judges it besides the bandwidth.
	env := map[string]string{"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"}
	var ifnames, hcas []string
	allDevices := true
	for _, i := range n.Interfaces {
		if i.Address.IsValid() {
			ifnames = append(ifnames, i.Netdev)
		}
		if i.RDMADevice == "" {
			allDevices = false
			continue
		}
		hcas = append(hcas, i.RDMADevice+":1")
	}
	// Exact-match lists ('=' prefix): mlx5_1 must not also select mlx5_10.
	if len(ifnames) > 0 {
		env["NCCL_SOCKET_IFNAME"] = "=" + strings.Join(ifnames, ",")
	}
	// A partial list would keep NCCL off the devices the plan left to
	// discovery: without all of them, NCCL chooses.
	if len(hcas) > 0 && allDevices {
		env["NCCL_IB_HCA"] = "=" + strings.Join(hcas, ",")
	}
	// The class the plan's DSCP map sends to the PFC priority; NCCL's default 0 is
	// DSCP 0, the best-effort class. NCCL_IB_FIFO_TC (NCCL 2.22.3 and later) is the
	// class of the receiver's clear-to-send messages, NCCL_IB_TC's unless set: pinned
	// to the same, so a value inherited from elsewhere cannot put them on a lossy
	// class. The health check nccl_env prints the same.
	exp := r.plan.Expectations
	if tc, ok := exp.RoCETrafficClass(); ok {
		env["NCCL_IB_TC"] = strconv.Itoa(tc)
		env["NCCL_IB_FIFO_TC"] = strconv.Itoa(tc)
		if exp.Trust == config.TrustPCP && exp.PFCPriority != nil {
			env["NCCL_IB_SL"] = strconv.Itoa(*exp.PFCPriority) // becomes the VLAN PCP
		}
	} else if exp.IBServiceLevel != nil {
		env["NCCL_IB_SL"] = strconv.Itoa(*exp.IBServiceLevel)
	}
	maps.Copy(env, r.cfg().Env)
	maps.Copy(env, r.cfg().NodeEnv[n.Name])
	return env
}

// launch splits the named nodes' environments into what they share and
// one app context per distinct rest, in the nodes' order.
func (r *ncclRunner) launch(names []string) ncclLaunch {
	var nodes []*config.Node
	var envs []map[string]string
	for _, name := range names {
		if n, ok := r.plan.Node(name); ok {
			nodes = append(nodes, n)
			envs = append(envs, r.rankEnv(n))
		}
	}
	l := ncclLaunch{shared: map[string]string{}}
	if len(envs) == 0 {
		return l
	}
	for k, v := range envs[0] {
		if !slices.ContainsFunc(envs[1:], func(e map[string]string) bool { w, ok := e[k]; return !ok || w != v }) {
			l.shared[k] = v
		}
	}
	for i, n := range nodes {
		own := map[string]string{}
		for k, v := range envs[i] {
			if _, shared := l.shared[k]; !shared {
				own[k] = v
			}
		}
		j := slices.IndexFunc(l.contexts, func(c appContext) bool { return maps.Equal(c.env, own) })
		if j < 0 {
			l.contexts = append(l.contexts, appContext{env: own})
			j = len(l.contexts) - 1
		}
		l.contexts[j].nodes = append(l.contexts[j].nodes, n)
	}
	return l
}

// argv is the mpirun command line of l with nccl-tests sweeping up to
// maxBytes. Every app context carries the same options: Open MPI takes some
// (-wdir, -x with a value) per context, and repeating a global one is
// harmless; with one context it is the command line operators type.
func (r *ncclRunner) argv(l ncclLaunch, maxBytes uint64) []string {
	c := r.cfg()
	var options []string
	for _, k := range slices.Sorted(maps.Keys(l.shared)) {
		// "-x NAME" exports the variable from mpirun's own environment,
		// which we set; the value never passes through a shell.
		options = append(options, "-x", k)
	}
	options = append(options, r.mcaDefaults()...)
	options = append(options, c.ExtraMPIRunArgs...)
	program := []string{c.Command, "-b", strconv.FormatInt(int64(c.MinBytes), 10), "-e", strconv.FormatUint(maxBytes, 10), "-f", "2", "-g", "1"}
	argv := []string{c.MPIRun}
	for i, ctx := range l.contexts {
		if i > 0 {
			argv = append(argv, ":")
		}
		var hosts []string
		for _, n := range ctx.nodes {
			hosts = append(hosts, fmt.Sprintf("%s:%d", n.ManagementIP, c.GPUsPerNode))
		}
		argv = append(argv, config.MPIRunRanksFlag, strconv.Itoa(c.GPUsPerNode*len(hosts)), config.MPIRunHostsFlag, strings.Join(hosts, ","))
		argv = append(argv, options...)
		if len(ctx.env) > 0 {
			argv = append(argv, envProgram)
			for _, k := range slices.Sorted(maps.Keys(ctx.env)) {
				argv = append(argv, k+"="+ctx.env[k])
			}
		}
		argv = append(argv, program...)
	}
	return argv
}

// mpiTCPParams are the Open MPI parameters that choose the interfaces of
// its own TCP traffic: the byte transfer layer between ranks (btl) and the
// runtime's out-of-band channel to its daemons (oob; Open MPI 5's PRRTE
// takes oob_* from --mca too, schizo_ompi.c check_prte_overlap). Unset,
// Open MPI tries every interface, docker0 and virbr0 included, and a run can
// hang there until its timeout.
var mpiTCPParams = []struct{ include, exclude string }{
	{"btl_tcp_if_include", "btl_tcp_if_exclude"},
	{"oob_tcp_if_include", "oob_tcp_if_exclude"},
}

// mcaDefaults keeps Open MPI's own TCP traffic on the plan's management
// network (Open MPI takes a CIDR there), unless the operator chose the
// interfaces in extra_mpirun_args or an OMPI_MCA_ variable (include and
// exclude together are an error in Open MPI).
func (r *ncclRunner) mcaDefaults() []string {
	mgmt := r.plan.Networks.Management
	if !mgmt.IsValid() {
		return nil
	}
	var out []string
	for _, p := range mpiTCPParams {
		if r.mcaChosen(p.include) || r.mcaChosen(p.exclude) {
			continue
		}
		out = append(out, "--mca", p.include, mgmt.Masked().String())
	}
	return out
}

// mcaChosen says whether the operator set the Open MPI parameter: as an
// argument of extra_mpirun_args ("--mca name value", "-mca", "--gmca"), or
// in the exporter's own environment (OMPI_MCA_name), which mpirun inherits.
func (r *ncclRunner) mcaChosen(param string) bool {
	if slices.Contains(r.cfg().ExtraMPIRunArgs, param) {
		return true
	}
	_, ok := os.LookupEnv("OMPI_MCA_" + param)
	return ok
}

// nvidiaSMITimeout bounds the memory query: nvidia-smi answers in well under
// a second unless the driver is stuck, and then the NCCL run would not work
// either.
const nvidiaSMITimeout = 15 * time.Second

// gib is 2^30 bytes, the unit of nccl-tests' own memory rule.
const gib = uint64(1) << 30

// sweepMaxBytes is nccl-tests' -e: the plan's max_bytes, or the largest
// power of two, at most config.DefaultNCCLMaxBytes, that fits the smallest
// of this node's GPUs by nccl-tests' own rule (src/common.cu since v2.18.5:
// three buffers of it with -c 1, plus 1 GiB, plus 1 GiB per 16 GiB installed
// up to 4 GiB for NCCL). A GPU too small for an 8 GiB sweep would otherwise
// fail the run as out of memory, an exec_error. The note says how it was
// sized when nvidia-smi could not tell ("" when it could or was not asked).
func (r *ncclRunner) sweepMaxBytes(ctx context.Context) (uint64, string) {
	c := r.cfg()
	if c.MaxBytes > 0 {
		return uint64(c.MaxBytes), ""
	}
	limit := uint64(config.DefaultNCCLMaxBytes)
	argv := []string{c.NVIDIASMI, "--query-gpu=memory.total", "--format=csv,noheader,nounits"}
	out := runCommand(ctx, nvidiaSMITimeout, argv, nil, nil)
	mib, err := parse.NVIDIASMIMemoryMiB(out.Stdout)
	if out.Err == nil && out.ExitCode == 0 && err == nil {
		return maxBytesFor(slices.Min(mib)<<20, uint64(c.MinBytes), limit), ""
	}
	why := err
	if out.Err != nil {
		why = out.Err
	} else if out.ExitCode != 0 {
		why = fmt.Errorf("exit status %d: %s", out.ExitCode, strings.TrimSpace(out.Stderr))
	}
	return limit, fmt.Sprintf("max_bytes: the GPUs' memory is unknown (%s: %v), so the sweep goes to %v; set probes.nccl.max_bytes on GPUs under 27 GiB", c.NVIDIASMI, why, config.DefaultNCCLMaxBytes)
}

// maxBytesFor applies nccl-tests' memory rule to a GPU of total bytes.
func maxBytesFor(total, minBytes, limit uint64) uint64 {
	reserve := min((total+16*gib-1)/(16*gib)*gib, 4*gib) + gib
	if total <= reserve {
		return max(minBytes, 1)
	}
	fit := (total - reserve) / 3
	size := limit
	for size > fit && size > 1 {
		size /= 2
	}
	return max(size, minBytes)
}
