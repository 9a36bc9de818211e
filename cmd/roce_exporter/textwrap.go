package main

import (
	"os"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/sys/unix"
	"golang.org/x/text/width"
)

// defaultTextWidth is the doctor's line width when neither COLUMNS nor the
// terminal says one: a file, a pipe, a CI log.
const defaultTextWidth = 100

// minTextWidth keeps the layout readable when a terminal claims less.
const minTextWidth = 40

// textWidth is the width the doctor wraps to: COLUMNS, else the width of
// the terminal f is, else defaultTextWidth.
func textWidth(f *os.File) int {
	if n, err := strconv.Atoi(strings.TrimSpace(os.Getenv("COLUMNS"))); err == nil && n > 0 {
		return max(n, minTextWidth)
	}
	if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
		return max(int(ws.Col), minTextWidth)
	}
	return defaultTextWidth
}

// runeWidth is the columns a rune takes in a terminal: 2 for East Asian
// wide and fullwidth characters (CJK), 0 for combining marks and format
// characters, 1 otherwise.
func runeWidth(r rune) int {
	switch {
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

// displayWidth is the columns s takes.
func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// padRight pads s with spaces to w columns.
func padRight(s string, w int) string {
	if d := w - displayWidth(s); d > 0 {
		return s + strings.Repeat(" ", d)
	}
	return s
}

// wrap breaks text into lines of at most w columns: the first after first
// (a prefix already printed, such as "fix: "), the others after rest.
// Words are kept whole, and so is a `command` span that fits on a line, so
// that a command can be copied from one line; only a word longer than a
// whole line is cut.
func wrap(text string, first, rest string, w int) []string {
	// A span wider than any line is cut at its own spaces, not mid-word.
	var units []wrapUnit
	for _, u := range wrapUnits(text) {
		if displayWidth(u.s) > w-displayWidth(rest) && strings.Contains(u.s, " ") {
			for i, f := range strings.Fields(u.s) {
				units = append(units, wrapUnit{f, i > 0 || u.space})
			}
		} else {
			units = append(units, u)
		}
	}
	var lines []string
	prefix := first
	line := ""
	flush := func() {
		lines = append(lines, prefix+line)
		prefix, line = rest, ""
	}
	roomAfter := func(prefix string) int { return max(w-displayWidth(prefix), minTextWidth/4) }
	for _, unit := range units {
		u := unit.s
		sep := ""
		if unit.space {
			sep = " "
		}
		room := roomAfter(prefix)
		switch {
		case line == "" && displayWidth(u) <= room:
			line = u
		case line != "" && displayWidth(line)+len(sep)+displayWidth(u) <= room:
			line += sep + u
		default:
			if line != "" {
				flush()
				room = roomAfter(prefix)
			}
			for displayWidth(u) > room {
				head, tail := cutWidth(u, room)
				line = head
				flush()
				u = tail
				room = roomAfter(prefix)
			}
			line = u
		}
	}
	if line != "" || len(lines) == 0 {
		lines = append(lines, prefix+line)
	}
	return lines
}

// wrapUnit is a piece wrap keeps whole; space says a space separates it
// from the piece before (Chinese has none between its characters).
type wrapUnit struct {
	s     string
	space bool
}

// wrapUnits splits text at spaces into the pieces wrap keeps whole: words,
// and backtick spans with what is attached to them. A span is split at its
// own spaces only when it has no closing backtick. Outside a span, a line
// may also break before each CJK character (splitCJK).
func wrapUnits(text string) []wrapUnit {
	var units []wrapUnit
	add := func(s string) {
		for i, piece := range splitCJK(s) {
			units = append(units, wrapUnit{piece, i == 0 && len(units) > 0})
		}
	}
	var cur strings.Builder
	inCode := false
	for _, f := range strings.Fields(text) {
		if cur.Len() > 0 {
			cur.WriteByte(' ')
		}
		cur.WriteString(f)
		if strings.Count(f, "`")%2 == 1 {
			inCode = !inCode
		}
		if !inCode {
			add(cur.String())
			cur.Reset()
		}
	}
	if cur.Len() > 0 {
		// An unclosed backtick: its span is ordinary words.
		for _, f := range strings.Fields(cur.String()) {
			add(f)
		}
	}
	return units
}

// splitCJK splits a word at the places a line may break in Chinese: before
// each wide character, except before closing punctuation (，。）：；、 and
// the like, which stay on the line of what they close) and after opening
// punctuation (（“ stay with what they open). A `command` span in it is
// never split. A word without wide characters is one piece.
func splitCJK(word string) []string {
	var pieces []string
	start := 0
	prevOpen, prevWide := false, false
	inCode := false
	// A backtick without its pair opens nothing.
	codeOK := strings.Count(word, "`") >= 2
	for i, r := range word {
		wide := runeWidth(r) == 2
		if i > 0 && !inCode && (wide || prevWide) && !prevOpen && !strings.ContainsRune(cjkClosing, r) {
			pieces = append(pieces, word[start:i])
			start = i
		}
		if r == '`' && codeOK {
			inCode = !inCode
		}
		prevOpen = strings.ContainsRune(cjkOpening, r)
		prevWide = wide && !prevOpen
	}
	return append(pieces, word[start:])
}

const (
	cjkClosing = "，。、；：！？）》」』】”’"
	cjkOpening = "（《「『【“‘"
)

// cutWidth splits s after at most w columns (at least one rune): after
// its last comma there, when that keeps at least half the line (a list such
// as NCCL_SOCKET_IFNAME=a,b,c stays readable), else at the width.
func cutWidth(s string, w int) (string, string) {
	n, comma := 0, -1
	for i, r := range s {
		rw := runeWidth(r)
		if n+rw > w && i > 0 {
			if comma > 0 && comma >= w/2 {
				return s[:comma], s[comma:]
			}
			return s[:i], s[i:]
		}
		n += rw
		if r == ',' {
			comma = i + 1
		}
	}
	return s, ""
}
