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
	{[]string{"d", "ib-dev"}, "the runner picks the RDMA device of each rail from nodes[].interfaces, so that rail i is tested against rail i"},
	{[]string{"x", "gid-index"}, "set gid_index instead: both ends must use the same GID index, so the runner passes it to both"},
	{[]string{"p", "port"}, "each device's responder listens on its own TCP port from port_range and the client must dial that same port; a fixed port would send every client to one responder"},
	{[]string{"D", "duration"}, "set duration instead: the runner passes it to both ends and checks it against timeout"},
	{[]string{"s", "size"}, "set message_size instead: both ends must use the same size"},
	{[]string{"q", "qp"}, "set queue_pairs instead: both ends must use the same number of queue pairs"},
	{[]string{"tclass"}, "set expectations.roce_dscp instead: the runner passes its traffic class (DSCP<<2 plus ECT) so the test runs on the class NCCL_IB_TC gives NCCL"},
	{[]string{"use_cuda", "use_cuda_bus_id"}, "set use_cuda: true instead: the runner picks, on each end, the GPU nearest the tested NIC"},
}

// mpirunOwnedFlags choose which machines run, how many ranks and what they run; the
// runner derives them from the plan's nodes, gpus_per_node and command, so the NCCL test
// covers exactly the plan. Names of Open MPI 4 (`mpirun --help all`) and 5 (PRRTE).
var mpirunOwnedFlags = []ownedFlag{
	{[]string{"np", "n", "c"}, "the rank count comes from the plan: nodes × gpus_per_node"},
	{[]string{"N", "npernode", "pernode", "npersocket", "ppr"}, "ranks per node come from gpus_per_node"},
	{[]string{"H", "host", "hostfile", "machinefile", "default-hostfile", "rankfile", "rf"}, "the host list comes from the plan's nodes, so the test covers exactly the machines in the plan"},
	{[]string{"app"}, "an appfile's command lines replace the runner's whole command line: its hosts, ranks and the plan's command"},
	{[]string{"launch-agent"}, "it replaces the command that starts the daemons on the other nodes"},
	{[]string{"debug", "tv", "debugger", "xterm"}, "the ranks would run under a debugger or in xterm windows instead of as the plan's command"},
	{[]string{"index-argv-by-rank"}, "it renames the program each rank is started as"},
	{[]string{"do-not-launch"}, "mpirun would start nothing, and every run would fail without a result"},
	{[]string{"hnp", "dvm"}, "the job would run in another runtime, on its nodes rather than the plan's"},
}

// extraArgs reads an extra-argument list and rejects what the programs of tables would
// read as a flag the runner owns or as a word in the place of what it runs.
func (l *loader) extraArgs(f field, owned []ownedFlag, tables ...*optionTable) []string {
	var args []string
	var items []field
	ok := true
	l.list(f, func(_ int, item field) {
		arg, isText := l.text(item)
		if !isText {
			ok = false
			return
		}
		args = append(args, arg)
		items = append(items, item)
	})
	for _, p := range checkArgs(args, owned, tables...) {
		l.errorAt(items[p.index].node, items[p.index].path, "%s", p.msg)
		ok = false
	}
	if !ok {
		return nil
	}
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
