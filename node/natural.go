package node

import (
	"cmp"
	"strings"
)

// NaturalCompare orders names so that mlx5_2 comes before mlx5_10 and ens2f0 before
// ens10f0: operators read the output in rail order, and plain string order scrambles
// it once a node has ten or more NICs.
func NaturalCompare(a, b string) int {
	for a != "" && b != "" {
		ca, cb := a[0], b[0]
		if isDigit(ca) && isDigit(cb) {
			na, ra := leadingDigits(a)
			nb, rb := leadingDigits(b)
			// Compare numerically by length first (after stripping zeros), then text.
			ta, tb := trimZeros(na), trimZeros(nb)
			if c := cmp.Or(cmp.Compare(len(ta), len(tb)), strings.Compare(ta, tb), cmp.Compare(len(na), len(nb))); c != 0 {
				return c
			}
			a, b = ra, rb
			continue
		}
		if ca != cb {
			return cmp.Compare(ca, cb)
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func leadingDigits(s string) (string, string) {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return s[:i], s[i:]
}

func trimZeros(s string) string {
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	return s
}
