package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
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
// first two failures whole, the first warning without its fix, two passing
// checks and the summary; "…" stands for what is left out.
func readmeExcerpt(out string) []string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	var excerpt []string
	i := 0
	for ; i < len(lines) && lines[i] != ""; i++ {
		excerpt = append(excerpt, lines[i])
	}
	excerpt = append(excerpt, "")
	i++
	fails, warns, oks := 0, 0, 0
	// keep says what of the current finding is shown: all of it, its row
	// and message only, or nothing; inDetail is set on its at:/fix: lines.
	keep, inDetail, elided := "none", false, false
	show := func(line string) {
		if elided {
			excerpt = append(excerpt, "…")
			elided = false
		}
		excerpt = append(excerpt, line)
	}
	for ; i < len(lines)-1; i++ {
		line := lines[i]
		indented := strings.HasPrefix(line, " ")
		switch {
		case !indented && strings.HasPrefix(line, "FAIL"):
			fails++
			keep = map[bool]string{true: "all", false: "none"}[fails <= 2]
		case !indented && strings.HasPrefix(line, "WARN"):
			warns++
			keep = map[bool]string{true: "message", false: "none"}[warns == 1]
		case !indented && strings.HasPrefix(line, "ok "):
			oks++
			keep = map[bool]string{true: "message", false: "none"}[oks <= 2]
		case !indented:
			keep = "none"
		}
		if !indented {
			inDetail = false
		} else if trimmed := strings.TrimLeft(line, " "); strings.HasPrefix(trimmed, "fix: ") || strings.HasPrefix(trimmed, "at:  ") {
			inDetail = true
		} else if !strings.HasPrefix(line, "              ") {
			inDetail = false
		}
		if keep == "all" || keep == "message" && !inDetail {
			show(line)
		} else {
			elided = true
		}
	}
	if elided {
		excerpt = append(excerpt, "…")
	}
	return append(excerpt, "", lines[len(lines)-1])
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
	// The README shows the report as a 100-column terminal gets it.
	cmd.Env = append(os.Environ(), "COLUMNS=100")
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
