package health

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/roce-exporter/roce_exporter/node"
)

// Names on a node are whatever was given to the kernel: `ip link set dev
// ens1f0np0 name 'x;reboot'` and `rdma dev set mlx5_0 name …` accept shell
// metacharacters, spaces and escape sequences. A fix is pasted into a
// shell, so every such name in it is quoted; names that need no quoting
// (all of them in practice) are left as they are.

// shellSafe reports whether s reads as itself in a POSIX shell, unquoted.
func shellSafe(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("_@%+=:,./-", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// shellQuote quotes s for a POSIX shell: unchanged when safe, in single
// quotes when printable, else in $'…' (bash, zsh, ksh, POSIX.1-2024) with
// every byte that is not printable ASCII as \xNN, so that a name holding an
// escape sequence or bytes that are not UTF-8 is still named exactly and
// never reaches the terminal raw.
func shellQuote(s string) string {
	if shellSafe(s) {
		return s
	}
	printable := true
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			printable = false
			break
		}
	}
	if printable {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// nameQuoter quotes, in a fix, every name of the node and its plan that a
// shell would not read as itself; nil when every name is safe.
func nameQuoter(snap *node.Snapshot, planNames []string) *strings.Replacer {
	var names []string
	add := func(n string) {
		if n != "" && !shellSafe(n) {
			names = append(names, n)
		}
	}
	if snap != nil {
		for n := range snap.Interfaces {
			add(n)
		}
		for _, d := range snap.Devices {
			add(d.Name)
			for _, p := range d.Ports {
				add(p.Interface)
				for _, s := range p.BondSlaves {
					add(s)
				}
				for _, g := range p.GIDs {
					add(g.Interface)
				}
			}
		}
	}
	for _, n := range planNames {
		add(n)
	}
	if len(names) == 0 {
		return nil
	}
	// Longest first: at each position the replacer takes the first name
	// that matches, so a name that contains another is quoted whole.
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b)) })
	names = slices.Compact(names)
	pairs := make([]string, 0, 2*len(names))
	for _, n := range names {
		pairs = append(pairs, n, shellQuote(n))
	}
	return strings.NewReplacer(pairs...)
}
