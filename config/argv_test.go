package config

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func problems(args []string, owned []ownedFlag, tables ...*optionTable) map[int]string {
	out := map[int]string{}
	for _, p := range checkArgs(args, owned, tables...) {
		out[p.index] = p.msg
	}
	return out
}

// wantProblems compares the problems found in args (index -> message) with
// want (index -> part of the message); an index not in want must be accepted.
func wantProblems(t *testing.T, args []string, got, want map[int]string) {
	t.Helper()
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("%q: argument %d: %q, want %q", args, i, got[i], w)
		}
	}
	for i, msg := range got {
		if _, ok := want[i]; !ok {
			t.Errorf("%q: argument %d refused: %s", args, i, msg)
		}
	}
}

// perftest reads its options with getopt_long, which takes any unambiguous
// prefix of a long option and permutes: every word that is no option's
// value is the server to connect to.
func TestPerftestExtraArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want map[int]string // index -> part of the message; absent: accepted
	}{
		{[]string{"--tclas=0"}, map[int]string{0: "--tclas abbreviates --tclass, which is set by the runner"}},
		{[]string{"--tcl", "0"}, map[int]string{0: "abbreviates --tclass"}},
		// Ambiguous with --tcp: perftest refuses it, a build without --tcp
		// would take it for --tclass.
		{[]string{"--tc=0"}, map[int]string{0: "--tc can abbreviate --tclass"}},
		{[]string{"--siz=64"}, map[int]string{0: "abbreviates --size"}},
		// --sig_before and --sig_offload exist in builds with encryption.
		{[]string{"--si=64"}, map[int]string{0: "can abbreviate --size"}},
		{[]string{"--ib=mlx5_1"}, map[int]string{0: "can abbreviate --ib-dev"}},
		{[]string{"--gid=3"}, map[int]string{0: "abbreviates --gid-index"}},
		{[]string{"--use_cu=0"}, map[int]string{0: "can abbreviate --use_cuda"}},
		{[]string{"-Fd", "mlx5_1"}, map[int]string{0: "-d is set by the runner"}},
		{[]string{"-Fdmlx5_1"}, map[int]string{0: "-d is set by the runner"}},
		{[]string{"10.0.0.9"}, map[int]string{0: `"10.0.0.9" is no option: perftest takes a lone argument as the server`}},
		{[]string{"--report_gbits", "--", "10.0.0.9"}, map[int]string{2: "comes after --"}},
		{[]string{"-F", "-"}, map[int]string{1: "is no option"}},
		// A value is a value, however it looks: -D takes the next word.
		{[]string{"-D", "5"}, map[int]string{0: "-D is set by the runner"}},
		{[]string{"-l", "4", "-I", "0", "--report_gbits", "-F", "--ib-port=2", "--ib-port", "1", "--perform_warm_up", "-a"}, nil},
		// The runner passes each end's GPU by bus id (use_cuda: true).
		{[]string{"--use_cuda_bus_id=0000:1b:00.0"}, map[int]string{0: "--use_cuda_bus_id is set by the runner"}},
		{[]string{"--tclass_is_not_an_option=1"}, nil},
		{[]string{"--rate_limit", "10", "--burst_size=8", "-w", "90"}, nil},
		// An option this table does not know (a newer perftest) may take a
		// value: the word after it is not read as the server.
		{[]string{"--a_future_option", "value", "--report_gbits"}, nil},
		{[]string{"--a_future_option", "value", "--siz", "64"}, map[int]string{2: "abbreviates --size"}},
	} {
		wantProblems(t, tc.args, problems(tc.args, perftestOwnedFlags, perftestTable), tc.want)
	}
}

// mpirun of Open MPI 4 matches names whole (one dash or two) and takes a
// single-dash word apart into letters; Open MPI 5's takes abbreviations and
// --name=value. Both stop at the first word that is no option, the program.
func TestMPIRunExtraArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want map[int]string
	}{
		{[]string{"--app", "/tmp/appfile"}, map[int]string{0: "--app is set by the runner: an appfile"}},
		{[]string{"-app", "/tmp/appfile"}, map[int]string{0: "-app is set by the runner"}},
		{[]string{"--ap", "/tmp/appfile"}, map[int]string{0: "--ap abbreviates --app"}},
		{[]string{"--np=16"}, map[int]string{0: "--np is set by the runner"}},
		{[]string{"--hostf=/tmp/hosts"}, map[int]string{0: "abbreviates --hostfile"}},
		{[]string{"-qn", "16"}, map[int]string{0: "-n is set by the runner"}},
		{[]string{"-vH", "a,b"}, map[int]string{0: "-H is set by the runner"}},
		{[]string{"--launch-agent", "/bin/sh"}, map[int]string{0: "--launch-agent is set by the runner"}},
		{[]string{"--rankfile", "/tmp/rf"}, map[int]string{0: "the host list comes from the plan"}},
		{[]string{"/bin/sh", "-c", "true"}, map[int]string{0: `"/bin/sh" is no option: mpirun starts the first argument that is no option as the program`}},
		{[]string{"--bind-to", "none", ":", "-np", "1", "/bin/true"}, map[int]string{2: "is no option"}},
		{[]string{"--", "/bin/true"}, map[int]string{1: "comes after --"}},
		{[]string{"--allow-run-as-root", "--mca", "btl_tcp_if_include", "eth0"}, nil},
		{[]string{"-mca", "pml", "ucx", "-x", "LD_LIBRARY_PATH", "--bind-to", "none", "--map-by", "slot", "--report-bindings", "--tag-output"}, nil},
		{[]string{"--oversubscribe", "-q", "-v", "--timeout", "600", "-x", "NCCL_DEBUG=INFO"}, nil},
	} {
		wantProblems(t, tc.args, problems(tc.args, mpirunOwnedFlags, mpirun4Table, mpirun5Table), tc.want)
	}
}

// The tables are the programs' own: every entry is checked against the
// sources and help output kept in testdata/options (SOURCES says where
// each comes from).
func TestOptionTablesMatchTheirSources(t *testing.T) {
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile("testdata/options/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	entry := regexp.MustCompile(`\{\s*\.name\s*=\s*"([^"]+)"\s*,\s*\.has_arg\s*=\s*(\d)\s*,\s*(\.flag\s*=\s*&\w+\s*,\s*)?\.val\s*=\s*'?([^'}\s]+)'?\s*\}`)
	type source struct {
		hasArg int
		letter string // "" for an option that sets a flag variable
	}
	perftest := map[string]source{}
	for _, f := range []string{"perftest-master-00b55b66-long_options.c", "perftest-v4.5-0.17-long_options.c"} {
		src := read(f)
		for _, m := range entry.FindAllStringSubmatch(src, -1) {
			has, _ := strconv.Atoi(m[2])
			s := source{hasArg: has}
			if m[3] == "" {
				s.letter = m[4]
			}
			if _, dup := perftest[m[1]]; !dup {
				perftest[m[1]] = s
			}
		}
		if !strings.Contains(src, `"`+perftestShortOptions+`"`) {
			t.Errorf("%s: the optstring is not %q", f, perftestShortOptions)
		}
	}
	if len(perftest) != len(perftestLongOptions) {
		t.Errorf("%d perftest options in the sources, %d in the table", len(perftest), len(perftestLongOptions))
	}
	for _, o := range perftestLongOptions {
		s, ok := perftest[o.name]
		switch {
		case !ok || s.hasArg != o.hasArg:
			t.Errorf("perftest --%s: has_arg %d in the table, %+v (found %v) in the sources", o.name, o.hasArg, s, ok)
		case s.letter != "" && o.val != int(s.letter[0]):
			t.Errorf("perftest --%s: val %d in the table, '%s' in the sources", o.name, o.val, s.letter)
		case s.letter == "" && o.val < 1000:
			t.Errorf("perftest --%s sets a flag: its val %d is a letter's", o.name, o.val)
		}
	}

	words := map[string]int{}
	line := regexp.MustCompile(`(?m)^ {0,3}(-\S+)((?:\s+<arg\d+>)*)`)
	for _, m := range line.FindAllStringSubmatch(read("openmpi-4.1.4-mpirun-help-all.txt"), -1) {
		for _, n := range strings.Split(m[1], "|") {
			words[strings.TrimLeft(n, "-")] = strings.Count(m[2], "<arg")
		}
	}
	if len(words) != len(openMPI4Options) {
		t.Errorf("%d Open MPI 4 names in `mpirun --help all`, %d in the table", len(words), len(openMPI4Options))
	}
	for n, args := range openMPI4Options {
		if words[n] != args {
			t.Errorf("Open MPI 4 -%s: %d arguments in the table, %d in the help", n, args, words[n])
		}
	}

	defines := map[string]string{}
	for _, m := range regexp.MustCompile(`#define (PRTE_CLI_\w+)\s+"([^"]*)"`).FindAllStringSubmatch(read("prrte-v3.0.9-prte_cmd_line-defines.h"), -1) {
		defines[m[1]] = m[2]
	}
	src := read("prrte-v3.0.9-schizo_ompi-ompioptions.c")
	var prrte []longOption
	for _, m := range regexp.MustCompile(`PMIX_OPTION_(?:SHORT_)?DEFINE\(([^,]+),\s*PMIX_ARG_(\w+)(?:,\s*'(.)')?\)`).FindAllStringSubmatch(src, -1) {
		name := strings.Trim(m[1], `"`)
		if !strings.HasPrefix(m[1], `"`) {
			name = defines[m[1]]
		}
		o := longOption{name: name, hasArg: map[string]int{"NONE": 0, "REQD": 1, "OPTIONAL": 2}[m[2]]}
		if m[3] != "" {
			o.val = int(m[3][0])
		}
		prrte = append(prrte, o)
	}
	if !slices.Equal(prrte, openMPI5Options) {
		t.Errorf("Open MPI 5 table differs from its source:\n source %v\n  table %v", prrte, openMPI5Options)
	}
	if !strings.Contains(src, `"`+openMPI5ShortOptions+`"`) {
		t.Errorf("ompishorts is not %q", openMPI5ShortOptions)
	}
}

// getoptReply runs the installed program on arg alone and returns the
// first line it prints: glibc's getopt_long says there what it took arg for
// ("option '--tclass' requires an argument", "option '--CPU-freq' doesn't
// allow an argument", "option '--tc' is ambiguous; possibilities: ...",
// "unrecognized option"), or the program goes on (and, on a machine without
// RDMA devices, stops at once).
func getoptReply(t *testing.T, program, arg string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, program, arg).CombinedOutput()
	first, _, _ := strings.Cut(string(out), "\n")
	return first
}

// The perftest table is checked against the installed ib_write_bw's own
// getopt_long: for every prefix of every option the runner sets, what the
// program takes it for is what the guard refuses it as.
func TestOptionTablesMatchInstalledPrograms(t *testing.T) {
	program, err := exec.LookPath("ib_write_bw")
	if err != nil {
		t.Skip("ib_write_bw not installed (Debian: perftest)")
	}
	requires := regexp.MustCompile(`option '--([^']+)' requires an argument`)
	ambiguous := regexp.MustCompile(`option '--[^']*' is ambiguous; possibilities:((?: '--[^']+')+)`)
	noArgument := regexp.MustCompile(`option '--([^']+)' doesn't allow an argument`)
	checked := 0
	for _, own := range perftestOwnedFlags {
		for _, name := range own.names {
			if len(name) == 1 {
				continue
			}
			for n := 1; n <= len(name); n++ {
				prefix := name[:n]
				reply := getoptReply(t, program, "--"+prefix)
				refused := len(checkArgs([]string{"--" + prefix + "=1"}, perftestOwnedFlags, perftestTable)) > 0
				switch m, a := requires.FindStringSubmatch(reply), ambiguous.FindStringSubmatch(reply); {
				case m != nil:
					checked++
					if ownedBy(perftestOwnedFlags, m[1]) != nil && !refused {
						t.Errorf("ib_write_bw takes --%s for --%s, which the runner sets; the guard lets --%s=1 through", prefix, m[1], prefix)
					}
					if opt, cands := perftestTable.resolve(prefix); (opt == nil || opt.name != m[1]) && !slices.ContainsFunc(cands, func(o longOption) bool { return o.name == m[1] }) {
						t.Errorf("ib_write_bw takes --%s for --%s; the table resolves it to %v among %v", prefix, m[1], opt, cands)
					}
				case a != nil:
					checked++
					_, cands := perftestTable.resolve(prefix)
					for _, p := range strings.Fields(a[1]) {
						p = strings.Trim(p, "'-")
						if !slices.ContainsFunc(cands, func(o longOption) bool { return o.name == p }) {
							t.Errorf("ib_write_bw finds --%s in --%s; the table does not", p, prefix)
						}
					}
				case strings.Contains(reply, "unrecognized option"):
					// Not in this build (use_cuda without CUDA).
				default:
					t.Errorf("ib_write_bw took --%s without an argument: %q", prefix, reply)
				}
			}
		}
	}
	// Every long option the program knows is in the table: each letter's
	// prefix lists them (or names the one it stands for).
	known := 0
	for c := 'A'; c <= 'z'; c++ {
		if c > 'Z' && c < 'a' {
			continue
		}
		reply := getoptReply(t, program, "--"+string(c))
		var names []string
		if m := ambiguous.FindStringSubmatch(reply); m != nil {
			for _, p := range strings.Fields(m[1]) {
				names = append(names, strings.Trim(p, "'-"))
			}
		} else if m := requires.FindStringSubmatch(reply); m != nil {
			names = append(names, m[1])
		} else if !strings.Contains(reply, "unrecognized option") {
			// One option without an argument: name it by giving it one.
			if m := noArgument.FindStringSubmatch(getoptReply(t, program, "--"+string(c)+"=x")); m != nil {
				names = append(names, m[1])
			}
		}
		for _, n := range names {
			known++
			if opt, _ := perftestTable.resolve(n); opt == nil || opt.name != n {
				t.Errorf("ib_write_bw knows --%s; the table does not", n)
			}
		}
	}
	if known < 80 {
		t.Errorf("only %d long options of ib_write_bw found", known)
	}
	if checked == 0 {
		t.Error("no reply of ib_write_bw was understood")
	}
}

// Open MPI 4's table is the installed mpirun's `--help all`, and that
// mpirun takes no abbreviation.
func TestOpenMPI4TableMatchesInstalledMPIRun(t *testing.T) {
	program, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun not installed (Debian: openmpi-bin)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	version, _ := exec.CommandContext(ctx, program, "--version").CombinedOutput()
	if !strings.Contains(string(version), "(Open MPI) 4.1.") {
		t.Skipf("not Open MPI 4.1: %s", version)
	}
	help, err := exec.CommandContext(ctx, program, "--allow-run-as-root", "--help", "all").CombinedOutput()
	if err != nil {
		t.Fatalf("mpirun --help all: %v\n%s", err, help)
	}
	want, err := os.ReadFile("testdata/options/openmpi-4.1.4-mpirun-help-all.txt")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(version), "4.1.4") && string(help) != string(want) {
		t.Errorf("mpirun --help all is not the one the table was made from")
	}
	out, _ := exec.CommandContext(ctx, program, "--allow-run-as-root", "--hostf", "/nonexistent", "true").CombinedOutput()
	if !strings.Contains(string(out), `unknown option "--hostf"`) {
		t.Errorf("Open MPI 4's mpirun took an abbreviation: %s", out)
	}
}
