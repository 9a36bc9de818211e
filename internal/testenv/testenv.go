// Package testenv decides what a test does when the machine lacks something
// it needs (root, iproute2, promtool, ...): on a developer's machine it
// skips; where ROCE_TEST_STRICT=1 (.ci/run sets it) it fails, so CI cannot
// pass by skipping the tests that need root or the Debian tools. It also
// holds the helpers the process-level tests share (helpers.go).
package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// StrictEnv names the variable that turns skips into failures.
const StrictEnv = "ROCE_TEST_STRICT"

// Missing skips t, or fails it in strict mode, for want of what the
// message names.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv(StrictEnv) == "1" {
		t.Fatalf(StrictEnv+"=1 and this test "+format, args...)
	}
	t.Skipf(format, args...)
}

// RequireRoot stops t unless it runs as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Missing(t, "needs root (network namespaces, veth pairs)")
	}
}

// LookPath returns the first of names found on PATH; hint says which
// Debian package provides it.
func LookPath(t testing.TB, hint string, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	Missing(t, "needs %s (Debian package %s)", strings.Join(names, " or "), hint)
	return ""
}
