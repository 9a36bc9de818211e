package node

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Names, LLDP strings and the stderr of probes come from outside: an escape
// sequence in a switch's system name or an interface's name would recolour,
// retitle or clear the operator's terminal when the doctor prints it. The
// printers pass such text through Printable (free text) or PrintableName
// (a name that identifies something).

// Printable removes what would act on a terminal instead of being read:
// ANSI escape sequences (CSI, OSC and the two-byte ones) and every other C0
// or C1 control character and DEL. Tabs and newlines become spaces: a
// message and a fix are one line.
func Printable(s string) string { return printable(s, false) }

// PrintableLines is Printable that keeps the newlines of multi-line text
// (a probe's stderr).
func PrintableLines(s string) string { return printable(s, true) }

func printable(s string, lines bool) string {
	clean := true
	for _, r := range s {
		if isControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x1b:
			i += escapeLen(s[i:])
			continue
		case r == '\n' && lines:
			b.WriteByte('\n')
		case r == '\t' || r == '\n' || r == '\r':
			b.WriteByte(' ')
		case isControl(r):
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) }

// escapeLen is the length of the escape sequence at the start of s (which
// starts with ESC): ECMA-48's CSI (ESC [ parameters, intermediates, a final
// byte), OSC, DCS, SOS, PM and APC strings (up to BEL or ESC \), or ESC and
// one byte.
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[':
		for i := 2; i < len(s); i++ {
			if s[i] >= 0x40 && s[i] <= 0x7e {
				return i + 1
			}
			if s[i] < 0x20 || s[i] > 0x3f {
				return i // not a CSI byte: the sequence ends malformed
			}
		}
		return len(s)
	case ']', 'P', 'X', '^', '_':
		for i := 2; i < len(s); i++ {
			if s[i] == 0x07 {
				return i + 1
			}
			if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
		}
		return len(s)
	}
	return 2
}

// PrintableName is LabelUTF8 of a name that also holds control characters
// as `\xNN` (each byte of a C1 control's UTF-8, too), so that it prints as
// text. Like LabelUTF8 it is one to one: a name it escapes has every
// backslash doubled, so each `\x` in the result is an escape.
func PrintableName(s string) string {
	l := LabelUTF8(s)
	hasControl := false
	for _, r := range l {
		if isControl(r) {
			hasControl = true
			break
		}
	}
	if !hasControl {
		return l
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1, isControl(r):
			for j := i; j < i+size; j++ {
				fmt.Fprintf(&b, `\x%02x`, s[j])
			}
		case r == '\\':
			b.WriteString(`\\`)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
