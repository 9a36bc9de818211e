package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// The strict mode is checked in a child process: a failing t cannot be
// observed from inside the same test.
func TestMissingFailsOnlyInStrictMode(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") == "1" {
		LookPath(t, "none", "no-such-tool-roce-exporter")
		return
	}
	for _, c := range []struct {
		strict string
		fails  bool
	}{{"", false}, {"1", true}} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestMissingFailsOnlyInStrictMode$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTENV_CHILD=1", StrictEnv+"="+c.strict)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != c.fails {
			t.Errorf("%s=%q: failed=%v, want %v\n%s", StrictEnv, c.strict, failed, c.fails, out)
		}
	}
}
