package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// makeIn runs make in the repository root with args.
func makeIn(t *testing.T, args ...string) string {
	t.Helper()
	mk := testenv.LookPath(t, "make", "make")
	cmd := exec.Command(mk, append([]string{"-C", "../..", "--no-print-directory"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// Issue 27: the README's `roce_exporter …` was "command not found". make
// install puts it under PREFIX (DESTDIR staged), where the systemd unit runs
// it from. GO=true skips the build: the test installs the binary it built.
func TestMakeInstall(t *testing.T) {
	dest := t.TempDir()
	makeIn(t, "install", "GO=true", "BIN="+binary, "DESTDIR="+dest, "PREFIX=/usr")
	installed := filepath.Join(dest, "usr", "bin", "roce_exporter")
	st, err := os.Stat(installed)
	if err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("installed binary: %v %v", st, err)
	}
	if out, err := exec.Command(installed, "--version").CombinedOutput(); err != nil || !strings.Contains(string(out), "roce_exporter") {
		t.Errorf("the installed binary does not run: %v\n%s", err, out)
	}
	// The default PREFIX is the systemd unit's.
	unit, err := os.ReadFile("../../deploy/systemd/roce_exporter.service")
	if err != nil {
		t.Fatal(err)
	}
	if out := makeIn(t, "-n", "install", "GO=true"); !strings.Contains(out, "/usr/local/bin/roce_exporter") || !strings.Contains(string(unit), "ExecStart=/usr/local/bin/roce_exporter") {
		t.Errorf("make install's default place is not the unit's:\n%s", out)
	}
}

// make demo runs the sample node by name, the way the README runs the doctor
// on it, so both read the same trees (the DGX node's /proc included).
func TestMakeDemoUsesTheScenario(t *testing.T) {
	out := makeIn(t, "-n", "demo", "GO=true", "SCENARIO=dgx-h100-degraded")
	if !strings.Contains(out, "./roce_exporter --scenario=dgx-h100-degraded") {
		t.Errorf("make demo:\n%s", out)
	}
}
