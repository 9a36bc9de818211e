package config

import (
	"path/filepath"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Probe commands are started with an argv (exec), never through a shell. A plan value
// that only works through a shell — a command line with arguments, a $VARIABLE, a
// pipe — would be passed literally and fail, so the plan rejects it up front.

// shellMetacharacters are characters that mean something to a shell. In an executable
// path they are almost always a pasted command line, not a real file name.
const shellMetacharacters = " \t\n\r|&;<>()$`\\\"'*?[]#~{}!"

// executable reads a probe's program path.
func (l *loader) executable(f field) (string, bool) {
	s, ok := l.text(f)
	if !ok {
		return "", false
	}
	switch i := strings.IndexAny(s, shellMetacharacters); {
	case s == "":
		l.errorAt(f.node, f.path, "must not be empty; leave the key out to use the default")
		return "", false
	case !filepath.IsAbs(s):
		l.errorAt(f.node, f.path, "%q must be an absolute path (e.g. /usr/bin/ib_write_bw): the exporter starts it directly, with no shell and no $PATH lookup", s)
		return "", false
	case i >= 0:
		l.errorAt(f.node, f.path, "%q contains %q: the program runs without a shell, so put arguments in the extra_args list and write the path without quotes or variables", s, s[i:i+1])
		return "", false
	case strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		l.errorAt(f.node, f.path, "%q contains a control character", s)
		return "", false
	}
	return s, true
}

// ownedFlag is a command-line flag the probe runner sets itself. A copy in extra_args
// would either be overridden silently or, worse, make the two ends of a test disagree.
type ownedFlag struct {
	names []string
	why   string
}

// The flags the probe runners set themselves, spelled once: the runners build their
// argv with these constants and the tables below refuse them in extra_args, so a flag
// the runner sets cannot also come from the plan.
const (
	PerftestDeviceFlag       = "-d"
	PerftestGIDIndexFlag     = "-x"
	PerftestPortFlag         = "-p"
	PerftestDurationFlag     = "-D"
	PerftestSizeFlag         = "-s"
	PerftestQueuePairsFlag   = "-q"
	PerftestTrafficClassFlag = "--tclass"
	PerftestUseCUDAFlag      = "--use_cuda"
	// PerftestUseCUDABusIDFlag names the GPU by PCI address (perftest 4.4-0.36 and
	// later, beside --use_cuda under the same HAVE_CUDA build switch): --use_cuda's
	// index is CUDA's order, fastest first, not the PCI order nvidia-smi shows.
	PerftestUseCUDABusIDFlag = "--use_cuda_bus_id"
	MPIRunRanksFlag          = "-np"
	MPIRunHostsFlag          = "-H"
)

// perftestOwnedFlags are the perftest flags whose value comes from the plan or from the
// runner. perftest needs the same options on client and server, so the runner passes
// these to both sides; extra_args may hold any other perftest flag.
var perftestOwnedFlags = []ownedFlag{
	{[]string{PerftestDeviceFlag, "--ib-dev"}, "the runner picks the RDMA device of each rail from nodes[].interfaces, so that rail i is tested against rail i"},
	{[]string{PerftestGIDIndexFlag, "--gid-index"}, "set gid_index instead: both ends must use the same GID index, so the runner passes it to both"},
	{[]string{PerftestPortFlag, "--port"}, "each device's responder listens on its own TCP port from port_range and the client must dial that same port; a fixed port would send every client to one responder"},
	{[]string{PerftestDurationFlag, "--duration"}, "set duration instead: the runner passes it to both ends and checks it against timeout"},
	{[]string{PerftestSizeFlag, "--size"}, "set message_size instead: both ends must use the same size"},
	{[]string{PerftestQueuePairsFlag, "--qp"}, "set queue_pairs instead: both ends must use the same number of queue pairs"},
	{[]string{PerftestTrafficClassFlag}, "set expectations.roce_dscp instead: the runner passes its traffic class (DSCP<<2 plus ECT) so the test runs on the class NCCL_IB_TC gives NCCL"},
	{[]string{PerftestUseCUDAFlag, PerftestUseCUDABusIDFlag}, "set use_cuda: true instead: the runner picks, on each end, the GPU nearest the tested NIC"},
}

// mpirunOwnedFlags choose which machines run and how many ranks; the runner derives them
// from the plan's nodes and gpus_per_node, so the NCCL test covers exactly the plan.
var mpirunOwnedFlags = []ownedFlag{
	{[]string{MPIRunRanksFlag, "--np", "-n", "--n", "-c"}, "the rank count comes from the plan: nodes × gpus_per_node"},
	{[]string{"-N", "-npernode", "--npernode"}, "ranks per node come from gpus_per_node"},
	{[]string{MPIRunHostsFlag, "-host", "--host", "-hostfile", "--hostfile", "-machinefile", "--machinefile", "--default-hostfile"}, "the host list comes from the plan's nodes, so the test covers exactly the machines in the plan"},
}

// ownerOf returns the owned flag arg sets, if any. Long options match with or without
// "=value"; a perftest short option also matches with its value attached ("-dmlx5_0"),
// as getopt allows. Bundled short options ("-Fd") are not taken apart, because perftest's
// option table (which letters take a value) would have to be copied here to do it right.
func ownerOf(arg string, owned []ownedFlag, attachedShortValues bool) (string, *ownedFlag) {
	name, _, _ := strings.Cut(arg, "=")
	for i := range owned {
		for _, flag := range owned[i].names {
			if name == flag {
				return flag, &owned[i]
			}
			isShort := len(flag) == 2 && flag[0] == '-' && flag[1] != '-'
			if attachedShortValues && isShort && len(arg) > 2 && arg[:2] == flag {
				return flag, &owned[i]
			}
		}
	}
	return "", nil
}

// extraArgs reads an extra-argument list and rejects the flags the runner owns.
func (l *loader) extraArgs(f field, owned []ownedFlag, attachedShortValues bool) []string {
	var args []string
	l.list(f, func(_ int, item field) {
		arg, ok := l.text(item)
		if !ok {
			return
		}
		if flag, owner := ownerOf(arg, owned, attachedShortValues); owner != nil {
			l.errorAt(item.node, item.path, "%s is set by the runner: %s", flag, owner.why)
			return
		}
		args = append(args, arg)
	})
	return args
}

// envKey is the portable environment-variable name: anything else is either rejected by
// mpirun -x or silently not exported by some shells and launchers.
var envKey = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)

// environment reads a KEY: value mapping. Values may be any scalar so that
// NCCL_IB_TIMEOUT: 22 needs no quotes.
func (l *loader) environment(f field) map[string]string {
	env := map[string]string{}
	if f.node.Kind != yaml.MappingNode {
		l.errorAt(f.node, f.path, "must be a mapping of NAME: value lines, not %s", describe(f.node))
		return env
	}
	for i := 0; i+1 < len(f.node.Content); i += 2 {
		keyNode, valueNode := f.node.Content[i], f.node.Content[i+1]
		key := keyNode.Value
		if keyNode.Kind != yaml.ScalarNode || !envKey.MatchString(key) {
			l.errorAt(keyNode, f.path, "%s is not an environment variable name: use capital letters, digits and _ (e.g. NCCL_DEBUG)", describe(keyNode))
			continue
		}
		path := childPath(f.path, key)
		if _, dup := env[key]; dup {
			l.errorAt(keyNode, path, "is set twice; keep one")
			continue
		}
		value := l.resolve(valueNode, path)
		if value == nil {
			continue
		}
		l.written[path] = position{valueNode.Line, valueNode.Column}
		text := ""
		if !isNull(value) {
			var ok bool
			if text, ok = l.text(field{path, value}); !ok {
				continue
			}
		}
		if strings.ContainsRune(text, 0) {
			l.errorAt(valueNode, path, "contains a NUL byte, which no environment can hold")
			continue
		}
		env[key] = text
	}
	return env
}
