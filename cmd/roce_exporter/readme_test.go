package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"
)

// readmeDoctorExample returns the command and the output lines of the
// README's doctor example: the first ```console block whose command is a
// doctor run.
func readmeDoctorExample(t *testing.T) (readme string, args []string, excerpt []string) {
	t.Helper()
	raw, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(raw), "```console\n")
	for _, block := range blocks[1:] {
		body, _, _ := strings.Cut(block, "```")
		lines := strings.Split(strings.TrimRight(body, "\n"), "\n")
		cmdline, ok := strings.CutPrefix(lines[0], "$ ")
		if !ok || !strings.Contains(cmdline, " doctor ") {
			continue
		}
		return string(raw), strings.Fields(cmdline), lines[1:]
	}
	t.Fatal("README has no ```console block with a doctor run")
	return "", nil, nil
}

const readmePath = "../../README.md"

// readmeExcerpt shortens a doctor report for the README: the header, the
// first three failures with their fixes, the first warning, two passing
// checks and the summary. Long lines end in " …".
func readmeExcerpt(out string) []string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	shorten := func(s string) string {
		const width = 160
		if utf8.RuneCountInString(s) <= width {
			return s
		}
		r := []rune(s)
		cut := strings.LastIndex(string(r[:width]), " ")
		return string(r[:width])[:cut] + " …"
	}
	var excerpt []string
	fails, warns, oks := 0, 0, 0
	keepFix := false
	for i, line := range lines {
		switch {
		case i <= 1 || i == len(lines)-1 || (line == "" && i == len(lines)-2):
			excerpt = append(excerpt, line)
		case strings.HasPrefix(line, "FAIL"):
			fails++
			keepFix = fails <= 3
			if keepFix {
				excerpt = append(excerpt, shorten(line))
			}
		case strings.HasPrefix(line, "WARN"):
			warns++
			keepFix = false
			if warns == 1 {
				excerpt = append(excerpt, "…", shorten(line))
			}
		case strings.HasPrefix(line, "ok "):
			oks++
			keepFix = false
			if oks == 1 {
				excerpt = append(excerpt, "…")
			}
			if oks <= 2 {
				excerpt = append(excerpt, shorten(line))
			}
		case strings.HasPrefix(line, " ") && keepFix:
			excerpt = append(excerpt, shorten(line))
		default:
			keepFix = false
		}
	}
	return excerpt
}

// TestReadmeDoctorExampleIsRealOutput runs the README's doctor command
// from the repository root and requires every line it shows, in order, in
// the real output. A line ending in " …" was shortened and matches as a
// prefix; a line that is only "…" stands for the lines left out.
func TestReadmeDoctorExampleIsRealOutput(t *testing.T) {
	readme, args, excerpt := readmeDoctorExample(t)
	if args[0] != "./roce_exporter" || len(args) < 2 || args[1] != "doctor" {
		t.Fatalf("the README's doctor example must run ./roce_exporter doctor from the repository root, got %q", args)
	}
	cmd := exec.Command(binary, append([]string{"doctor", "--color=never"}, args[2:]...)...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if _, isExit := err.(*exec.ExitError); err != nil && !isExit {
		t.Fatal(err)
	}
	if *update {
		old := strings.Join(excerpt, "\n")
		if !strings.Contains(readme, old) {
			t.Fatal("cannot find the excerpt in the README")
		}
		readme = strings.Replace(readme, old, strings.Join(readmeExcerpt(string(out)), "\n"), 1)
		if err := os.WriteFile(readmePath, []byte(readme), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	real := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	next := 0
	for _, want := range excerpt {
		if want == "…" {
			continue
		}
		prefix, shortened := strings.CutSuffix(want, " …")
		found := false
		for ; next < len(real); next++ {
			got := real[next]
			if got == want || (shortened && strings.HasPrefix(got, prefix)) {
				found = true
				next++
				break
			}
		}
		if !found {
			t.Errorf("README line not in the real output (or out of order):\n  %s\nreal output:\n%s", want, out)
			return
		}
	}
}
