package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/roce-exporter/roce_exporter/health"
	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// doctorIn runs the doctor with env added to the test's environment and
// returns stdout and stderr apart.
func doctorIn(t *testing.T, env []string, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"doctor", "--color=never"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	return out.String(), errOut.String()
}

// Issue 27: doctor lines ran to 633 characters. Under COLUMNS=100 every line
// of the degraded node's report fits in 100 columns, and what belongs to a
// finding (its message when it does not fit on the row, at:, fix: and their
// continuations) is indented under the check.
func TestDoctorWrapsToTheTerminal(t *testing.T) {
	args := append(scenarioArgs("mlx5-degraded"), "--interval=0", "--config.file="+healthyPlan, "--node.name=node01")
	out, wide := doctorWrappedTo100(t, args...)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	indent := strings.Repeat(" ", len("skipped  "))
	inFinding, inIncast, fixes := false, false, 0
	for i, line := range lines {
		if w := displayWidth(line); w > 100 {
			t.Errorf("line %d is %d columns: %q", i+1, w, line)
		}
		switch {
		case strings.HasPrefix(line, "FAIL ") || strings.HasPrefix(line, "WARN ") || strings.HasPrefix(line, "ok ") || strings.HasPrefix(line, "skipped "):
			inFinding = true
		case line == "" || strings.HasPrefix(line, "cabling ") || strings.HasPrefix(line, "  mlx5_"):
			inFinding = false
		case strings.HasPrefix(line, "The switch under incast"):
			inFinding, inIncast = false, true
		case inIncast && strings.HasPrefix(line, "  "):
			// the incast section's own lines
		case inFinding && strings.HasPrefix(line, indent+"fix: "):
			fixes++
		case inFinding && strings.HasPrefix(line, indent+"     "), inFinding && strings.HasPrefix(line, indent+"at:  "):
		case inFinding && strings.HasPrefix(line, indent) && line[len(indent)] != ' ':
			// a message under its check
		case i < 2 && (strings.HasPrefix(line, "roce_exporter doctor") || strings.HasPrefix(line, "  ")):
		case i == len(lines)-1 && strings.Contains(line, " failed, "):
		default:
			t.Errorf("line %d is not under a check: %q", i+1, line)
		}
	}
	if fixes < 12 {
		t.Errorf("%d fix lines, want one per failure at least:\n%s", fixes, out)
	}
	// Nothing is lost to the wrapping: the same text, only the spaces and
	// line ends differ (a word wider than a line is cut).
	if strings.Join(strings.Fields(out), "") != strings.Join(strings.Fields(wide), "") {
		t.Error("the wrapped report does not hold the same text as the unwrapped one")
	}
}

// Logs go to stderr at warn by default, the report alone to stdout; and
// nothing about sampling is written when stderr is not a terminal.
func TestDoctorKeepsLogsOutOfTheReport(t *testing.T) {
	args := append(scenarioArgs("ib-hdr"), "--interval=1s")
	out, errOut := doctorIn(t, nil, args...)
	if strings.Contains(out, "level=") || strings.Contains(errOut, "level=INFO") || strings.Contains(errOut, "sampling") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out, errOut)
	}
	// The start-up note of a copied sysfs tree is an info line: there with
	// --log.level=info, on stderr.
	out, errOut = doctorIn(t, nil, append(args, "--log.level=info")...)
	if strings.Contains(out, "level=") || !strings.Contains(errOut, "level=INFO") {
		t.Errorf("--log.level=info: stdout:\n%s\nstderr:\n%s", out, errOut)
	}
}

// At a terminal, the wait for the second sample counts down on one line of
// stderr and is cleared before the report.
func TestShowSamplingCountsDownAndClears(t *testing.T) {
	b := &testenv.SyncBuffer{}
	stop := showSampling(context.Background(), b, true, 1500*time.Millisecond, nil)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(b.String(), "in 0s") && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	stop() // idempotent
	got := b.String()
	if !strings.Contains(got, "sampling, second reading in 1s") || !strings.Contains(got, "second reading in 0s") {
		t.Errorf("countdown %q", got)
	}
	if !strings.HasSuffix(got, "\r\x1b[K") {
		t.Errorf("the line is not cleared at the end: %q", got)
	}
	var none bytes.Buffer
	showSampling(context.Background(), &none, false, time.Second, nil)()
	if none.Len() != 0 {
		t.Errorf("not a terminal, yet %q", none.String())
	}
}

func TestWrapKeepsCommandsAndCountsWideRunes(t *testing.T) {
	text := "bring the interface up: `ip link set dev ens2f0np0 up`; then check `ethtool ens2f0np0`"
	lines := wrap(text, "fix: ", "     ", 40)
	for _, l := range lines {
		if displayWidth(l) > 40 {
			t.Errorf("%q is %d columns", l, displayWidth(l))
		}
		if strings.Count(l, "`")%2 != 0 {
			t.Errorf("a command was split: %q", l)
		}
	}
	if !strings.HasPrefix(lines[0], "fix: ") || !strings.HasPrefix(lines[1], "     ") {
		t.Errorf("prefixes: %q", lines)
	}
	// CJK runes take two columns each (a Chinese catalog will need it).
	if w := displayWidth("端口 down"); w != 9 {
		t.Errorf("width of 端口 down = %d, want 9", w)
	}
	zh := strings.Repeat("优先级流控未开启 ", 10)
	for _, l := range wrap(zh, "", "  ", 30) {
		if displayWidth(l) > 30 {
			t.Errorf("%q is %d columns", l, displayWidth(l))
		}
	}
	// A word longer than a line is cut, never dropped.
	long := strings.Repeat("x", 95)
	if got := strings.Join(wrap(long, "", "", 40), ""); got != long {
		t.Errorf("long word: %q", got)
	}
}

// Issue 27: the text said "skip" where the JSON and the page say "skipped".
// The text's English status words are the JSON's, FAIL and WARN only
// shouted.
func TestDoctorTextStatusWordsAreTheJSONs(t *testing.T) {
	for _, st := range health.StatusesWorstFirst() {
		if label := statusStyle[st].label; !strings.EqualFold(label, string(st)) {
			t.Errorf("status %q is %q in the text", st, label)
		}
	}
	out, _ := doctorIn(t, []string{"COLUMNS=100"}, append(scenarioArgs("mlx5-degraded"), "--interval=0")...)
	if !strings.Contains(out, "\nskipped  ") || strings.Contains(out, "\nskip  ") {
		t.Errorf("no skipped row:\n%s", out)
	}
}

// TestDoctorWrapsInChinese: the Chinese report keeps to COLUMNS=100 too,
// measured in display columns (a CJK character takes two), Chinese text
// broken between characters, where it has no spaces, and never before its
// closing punctuation; fixes stay under their check.
func TestDoctorWrapsInChinese(t *testing.T) {
	args := append(scenarioArgs("mlx5-degraded"), "--interval=0", "--config.file="+healthyPlan, "--node.name=node01", "--lang=zh-CN")
	out, wide := doctorWrappedTo100(t, args...)
	if strings.Join(strings.Fields(out), "") != strings.Join(strings.Fields(wide), "") {
		t.Error("the wrapped Chinese report does not hold the same text as the unwrapped one")
	}
	if !strings.Contains(out, "修复：") {
		t.Fatalf("not in Chinese:\n%s", out)
	}
	indent := strings.Repeat(" ", displayWidth("跳过")+2)
	fixes, short := 0, 0
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for i, line := range lines {
		w := displayWidth(line)
		if w > 100 {
			t.Errorf("line %d is %d columns: %q", i+1, w, line)
		}
		body := strings.TrimLeft(line, " ")
		if body != "" && strings.ContainsRune(cjkClosing, []rune(body)[0]) {
			t.Errorf("line %d starts with closing punctuation: %q", i+1, line)
		}
		if strings.HasPrefix(line, indent+"修复：") {
			fixes++
		}
		// A line is broken between Chinese characters where the width
		// ends: a line of Chinese continued on the next does not stop short
		// of a piece that fitted.
		if i+1 < len(lines) && strings.HasPrefix(line, indent) && strings.HasPrefix(lines[i+1], indent+" ") {
			last := []rune(line)
			// The first character of the next line with the closing
			// punctuation that must stay with it.
			nextRunes := []rune(strings.Fields(lines[i+1])[0])
			n := 1
			for n < len(nextRunes) && strings.ContainsRune(cjkClosing, nextRunes[n]) {
				n++
			}
			piece := string(nextRunes[:n])
			gap := 1 // a space between them, unless both are Chinese
			if runeWidth(last[len(last)-1]) == 2 && runeWidth([]rune(piece)[0]) == 2 {
				gap = 0
			}
			if unicode.Is(unicode.Han, nextRunes[0]) &&
				w+gap+displayWidth(piece) <= 100 && !strings.ContainsRune(cjkOpening, last[len(last)-1]) {
				short++
				t.Errorf("line %d ends at %d columns, but %q fitted: %q", i+1, w, piece, line)
			}
		}
	}
	if fixes < 12 {
		t.Errorf("%d fix lines in Chinese, want one per failure at least:\n%s", fixes, out)
	}
	if short > 0 {
		t.Logf("%s", out)
	}
}

func TestSplitCJK(t *testing.T) {
	for in, want := range map[string]string{
		"ens1f0np0": "ens1f0np0",
		"网段（每条轨道一个网段）：": "网|段|（每|条|轨|道|一|个|网|段）：",
		"开启PFC": "开|启|PFC",
	} {
		if got := strings.Join(splitCJK(in), "|"); got != want {
			t.Errorf("splitCJK(%q) = %q, want %q", in, got, want)
		}
	}
}

// doctorWrappedTo100 is the doctor's text under COLUMNS=100, after making
// sure that unwrapped it has lines wider than that (else a wrapping test
// would pass without wrapping).
func doctorWrappedTo100(t *testing.T, args ...string) (out, wide string) {
	t.Helper()
	wide, _ = doctorIn(t, []string{"COLUMNS=100000"}, args...)
	longest := 0
	for _, line := range strings.Split(wide, "\n") {
		longest = max(longest, displayWidth(line))
	}
	if longest <= 100 {
		t.Fatalf("unwrapped, the longest line is %d columns: the test would pass without wrapping", longest)
	}
	out, _ = doctorIn(t, []string{"COLUMNS=100"}, args...)
	return out, wide
}
