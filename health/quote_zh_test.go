package health_test

import (
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/health"
	"github.com/roce-exporter/roce_exporter/i18n"
	"github.com/roce-exporter/roce_exporter/node"
)

// TestChineseFixesQuoteNames: the central shell quoting of the node's names
// (TestFixesQuoteNames) reaches the fix in Chinese too: its Text carries the
// quoted names, so the translated fix names a hostile interface only
// quoted, and what the doctor prints of it (node.Printable) holds no
// control character.
func TestChineseFixesQuoteNames(t *testing.T) {
	zh := i18n.New(i18n.Chinese)
	for _, tc := range []struct{ name, quoted string }{
		{"x;reboot", `'x;reboot'`},
		{"e\x1b]0;pwned\x07x", `$'e\x1b]0;pwned\x07x'`},
	} {
		s := health.BuildSnapForTest()
		health.RenameInterfaceForTest(s, tc.name)
		s.DCB[tc.name].PFCEnabled[3] = false
		s.Devices[0].Ports[0].State = 1
		fixes := 0
		for _, f := range health.Run(s, nil, "node01") {
			if f.FixText.Empty() {
				continue
			}
			// The Text is the English fix, quoting and all.
			if got := node.ValidUTF8(node.Printable(f.FixText.String())); got != f.Fix {
				t.Errorf("%s: the Text's English %q differs from the fix %q", f.ID, got, f.Fix)
			}
			fix := node.ValidUTF8(node.Printable(zh.Text(f.FixText)))
			if strings.ContainsAny(fix, "\x1b\x07") {
				t.Errorf("%s: a control character reaches the terminal: %q", f.ID, fix)
			}
			if n := strings.Count(fix, "x;reboot") + strings.Count(fix, "pwned"); n > 0 {
				fixes++
				if q := strings.Count(fix, tc.quoted); q != n {
					t.Errorf("%s: %d mention(s) of %q in the Chinese fix, %d quoted as %s: %s", f.ID, n, tc.name, q, tc.quoted, fix)
				}
			}
			if f.ID == "port_active" && strings.Contains(f.Fix, tc.quoted) && !strings.Contains(fix, "ip link set dev "+tc.quoted+" up") {
				t.Errorf("port_active's Chinese fix %q, want ip link set dev %s up", fix, tc.quoted)
			}
		}
		if fixes == 0 {
			t.Errorf("%q: no Chinese fix names the interface", tc.name)
		}
	}
}
