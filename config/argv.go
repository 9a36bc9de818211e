package config

import (
	"fmt"
	"strings"
)

// The guard on extra_args and extra_mpirun_args reads an argument list the
// way the program will: with its own option table and its own parser's
// rules. Matching flags by their spelling alone let `--tclas=0` through
// (getopt_long takes any unambiguous prefix of a long option, so it is
// --tclass) and `--app FILE` (mpirun then runs the appfile's command lines
// instead of the runner's), and a bare word through too (perftest takes it
// as the server to connect to, mpirun as the program to start).

// longOption is one entry of a getopt_long option table.
type longOption struct {
	name string
	// hasArg is getopt's has_arg: 0 none, 1 required (the next argument
	// when not written --name=value), 2 optional (only as --name=value).
	hasArg int
	// val is getopt's val (the short letter, or the flag variable set):
	// glibc takes a prefix that several options share as the first of them
	// when they all have the same hasArg and val, and refuses it otherwise.
	val int
}

// parserKind is how a program reads its command line.
type parserKind int

const (
	// getoptLong: glibc's getopt_long, permuting, as perftest calls it.
	getoptLong parserKind = iota
	// openMPI4: Open MPI 4.1's opal_cmd_line, which stops at the program.
	openMPI4
	// openMPI5: Open MPI 5's PRRTE, getopt_long after single-dash words
	// are made double-dash ones, stopping at the program.
	openMPI5
)

// optionTable is what a program's parser knows of its options.
type optionTable struct {
	program string
	parser  parserKind
	short   string       // getopt optstring (getoptLong, openMPI5)
	long    []longOption // getoptLong, openMPI5
	// words maps every name (without its dashes) to the number of
	// arguments after it (openMPI4).
	words map[string]int
	// positional says what the program does with a bare word.
	positional string
}

var (
	perftestTable = &optionTable{program: "perftest", parser: getoptLong, short: perftestShortOptions, long: perftestLongOptions,
		positional: "perftest takes a lone argument as the server to connect to: the responder would become a client of it, and the client would refuse two servers"}
	mpirun4Table = &optionTable{program: "mpirun (Open MPI 4)", parser: openMPI4, words: openMPI4Options,
		positional: "mpirun starts the first argument that is no option as the program, in place of the plan's command"}
	mpirun5Table = &optionTable{program: "mpirun (Open MPI 5)", parser: openMPI5, short: openMPI5ShortOptions, long: openMPI5Options,
		positional: "mpirun starts the first argument that is no option as the program, in place of the plan's command"}
)

// argProblem is an argument the runner must not be given, and why.
type argProblem struct {
	index int
	msg   string
}

// ownedFlag is a command-line option the probe runner sets itself, or one
// that would replace what it runs. A copy in extra arguments would either
// be overridden silently or, worse, make the two ends of a test disagree.
type ownedFlag struct {
	// names are the option's names without dashes: one letter for a short
	// option ("d"), a word for a long one ("ib-dev").
	names []string
	why   string
}

// ownedBy returns the owned flag with the long or short name, nil if none.
func ownedBy(owned []ownedFlag, name string) *ownedFlag {
	for i := range owned {
		for _, n := range owned[i].names {
			if n == name {
				return &owned[i]
			}
		}
	}
	return nil
}

// checkArgs returns the arguments of args that the programs of tables
// would read as an owned option or as a word in the program's place. Each
// table is one parser the runner may meet (mpirun of Open MPI 4 and 5).
func checkArgs(args []string, owned []ownedFlag, tables ...*optionTable) []argProblem {
	var out []argProblem
	seen := map[int]bool{}
	for _, t := range tables {
		for _, p := range t.check(args, owned) {
			if !seen[p.index] {
				seen[p.index] = true
				out = append(out, p)
			}
		}
	}
	// In argument order, whichever table found it first.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].index < out[j-1].index; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func (t *optionTable) check(args []string, owned []ownedFlag) []argProblem {
	var out []argProblem
	problem := func(i int, format string, a ...any) { out = append(out, argProblem{i, fmt.Sprintf(format, a...)}) }
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			// Everything after it is the program's (mpirun) or positional
			// (perftest): in extra arguments, that is a word in the
			// program's place.
			for j := i + 1; j < len(args); j++ {
				problem(j, "%q comes after --, so %s", args[j], t.positional)
			}
			return out
		case len(a) < 2 || a[0] != '-':
			problem(i, "%q is no option: %s", a, t.positional)
			if t.parser != getoptLong {
				// The parser stops here: what follows is the program's.
				return out
			}
		case t.parser == openMPI4:
			i += t.checkOpenMPI4(args, i, owned, problem)
		case strings.HasPrefix(a, "--") || (t.parser == openMPI5 && len(a) > 2):
			i += t.checkLong(args, i, owned, problem)
		default:
			i += t.checkShort(args, i, owned, problem)
		}
	}
	return out
}

// values is how many of the arguments after i an option that takes n of
// them consumes (fewer when the list ends: the runner's own arguments
// follow, which is the user's error to see in the program's output).
func values(args []string, i, n int) int {
	return min(n, len(args)-1-i)
}

// maybeValue is what an option the table does not know consumes: perhaps
// the next argument, when that is no option. A newer program version may
// know it and take a value; counting that value as a word in the program's
// place would refuse a good plan.
func maybeValue(args []string, i int) int {
	if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
		return 1
	}
	return 0
}

// checkLong reads the long option at args[i] (--name or --name=value; in
// Open MPI 5 also -name) as getopt_long does and returns how many of the
// following arguments it consumed.
func (t *optionTable) checkLong(args []string, i int, owned []ownedFlag, problem func(int, string, ...any)) int {
	a := args[i]
	name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
	written := a
	if hasValue {
		written = a[:strings.IndexByte(a, '=')]
	}
	opt, candidates := t.resolve(name)
	switch {
	case opt != nil && opt.name == name:
		if own := ownedBy(owned, name); own != nil {
			problem(i, "%s is set by the runner: %s", written, own.why)
		}
	default:
		// An abbreviation. If it could stand for an owned option it is
		// refused, resolved or ambiguous: a build without the other
		// candidates (perftest's #ifdef options, another Open MPI) takes
		// it for the owned one.
		for _, c := range candidates {
			if own := ownedBy(owned, c.name); own != nil {
				verb := "abbreviates"
				if opt == nil {
					verb = "can abbreviate"
				}
				problem(i, "%s %s --%s, which is set by the runner: %s", written, verb, c.name, own.why)
				break
			}
		}
	}
	if opt == nil {
		if hasValue {
			return 0
		}
		return maybeValue(args, i)
	}
	n := 0
	if opt.hasArg == 1 && !hasValue {
		n = 1
	}
	if t.parser == openMPI5 && strings.HasSuffix(opt.name, "mca") {
		// pmix_cmd_line_parse reads an MCA option's name and value.
		n++
	}
	return values(args, i, n)
}

// resolve finds the option name stands for, as glibc's getopt_long does:
// an exact name, else the one option it is a prefix of, or the first of
// several that getopt takes for one (same hasArg and val). candidates are
// all the options name is a prefix of; opt is nil when it is ambiguous or
// unknown.
func (t *optionTable) resolve(name string) (opt *longOption, candidates []longOption) {
	for k := range t.long {
		if t.long[k].name == name {
			return &t.long[k], []longOption{t.long[k]}
		}
	}
	for _, o := range t.long {
		if strings.HasPrefix(o.name, name) {
			candidates = append(candidates, o)
		}
	}
	if len(candidates) == 0 {
		return nil, nil
	}
	for _, c := range candidates[1:] {
		if c.hasArg != candidates[0].hasArg || c.val != candidates[0].val {
			return nil, candidates
		}
	}
	return &candidates[0], candidates
}

// shortArg is how a getopt optstring says the letter c takes its argument:
// -1 when c is no option, else 0 (none), 1 (required) or 2 (optional, only
// attached).
func shortArg(optstring string, c byte) int {
	i := strings.IndexByte(optstring, c)
	if c == ':' || i < 0 {
		return -1
	}
	switch {
	case strings.HasPrefix(optstring[i+1:], "::"):
		return 2
	case strings.HasPrefix(optstring[i+1:], ":"):
		return 1
	}
	return 0
}

// checkShort reads a getopt short option cluster (-F, -dmlx5_0, -Fd mlx5_0)
// and returns how many of the following arguments it consumed.
func (t *optionTable) checkShort(args []string, i int, owned []ownedFlag, problem func(int, string, ...any)) int {
	a := args[i]
	for k := 1; k < len(a); k++ {
		c := a[k]
		if own := ownedBy(owned, string(c)); own != nil {
			problem(i, "-%c is set by the runner: %s", c, own.why)
		}
		switch shortArg(t.short, c) {
		case 1:
			if k+1 < len(a) {
				return 0 // the rest of the word is its value
			}
			return values(args, i, 1)
		case 2:
			return 0
		case -1:
			// getopt refuses it; a newer version might know it, and then
			// whether the rest is its value cannot be told, so the rest is
			// still read for owned letters.
		}
	}
	return 0
}

// checkOpenMPI4 reads an option as Open MPI 4's opal_cmd_line does and
// returns how many of the following arguments it consumed.
func (t *optionTable) checkOpenMPI4(args []string, i int, owned []ownedFlag, problem func(int, string, ...any)) int {
	a := args[i]
	name := strings.TrimLeft(a, "-")
	if n, ok := t.words[name]; ok {
		if own := ownedBy(owned, name); own != nil {
			problem(i, "%s is set by the runner: %s", a, own.why)
		}
		return values(args, i, n)
	}
	if strings.HasPrefix(a, "--") {
		// Unknown, "--np=4" included: Open MPI 4 refuses it (Open MPI 5's
		// table reads it).
		return maybeValue(args, i)
	}
	// One-letter options run together (-qn 4): each takes its arguments
	// from the words after the cluster, in order.
	n := 0
	for k := 1; k < len(a); k++ {
		c := string(a[k])
		if own := ownedBy(owned, c); own != nil {
			problem(i, "-%s is set by the runner: %s", c, own.why)
		}
		if m, ok := t.words[c]; ok {
			n += m
		}
	}
	return values(args, i, n)
}
