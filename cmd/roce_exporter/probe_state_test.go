package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// With probes on and a state directory that cannot be made, the exporter
// must still serve /metrics (it exited 2, and a DaemonSet with a read-only
// root and no state volume crash-looped on every node of the plan), and say
// loudly what is lost: a metric, an error in the log, the node page.
func TestProbeStateDirNotWritableStillServes(t *testing.T) {
	perftest := absPath(t, "../../probes/testdata/standin/perftest")
	cases := map[string]func(t *testing.T, dir string) (state string, wrap []string){
		// A file stands where the directory should be made.
		"not a directory": func(t *testing.T, dir string) (string, []string) {
			testenv.WriteFile(t, dir, "var", "")
			return filepath.Join(dir, "var", "lib", "roce_exporter"), nil
		},
		// The DaemonSet's case: the directory would be made on a read-only
		// file system (a private mount namespace, so the mount is gone with
		// the process).
		"read-only file system": func(t *testing.T, dir string) (string, []string) {
			testenv.RequireRoot(t)
			unshare := testenv.LookPath(t, "util-linux", "unshare")
			ro := filepath.Join(dir, "ro")
			if err := os.Mkdir(ro, 0o755); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(unshare, "-m", "--propagation", "private", "mount", "-t", "tmpfs", "-o", "ro", "tmpfs", ro).CombinedOutput(); err != nil {
				t.Skipf("cannot mount in a mount namespace here: %v\n%s", err, out)
			}
			return filepath.Join(ro, "roce_exporter"), []string{unshare, "-m", "--propagation", "private", "sh", "-c",
				`mount -t tmpfs -o ro tmpfs "$0" && exec "$@"`, ro}
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			state, wrap := setup(t, dir)
			plan := probePlan(t, dir, fmt.Sprintf("  ib_write_bw:\n    command: %s\n  ping:\n    enabled: false\n", perftest))
			addr := testenv.FreeAddr(t)
			args := append([]string{binary, "--web.listen-address=" + addr, "--config.file=" + plan, "--node.name=node01",
				"--probes.state-dir=" + state}, scenarioArgs("mlx5-8x400g-healthy")...)
			if wrap != nil {
				args = append(wrap, args...)
			}
			t.Setenv("STANDIN_DIR", dir)
			t.Setenv("STANDIN_SERVER", "idle")
			p := runExporter(t, addr, exec.Command(args[0], args[1:]...))
			testenv.WaitListening(t, addr, 15*time.Second)
			_, body := p.get(t, "/metrics")
			if v, ok := metricValue(body, "roce_probe_state_dir_writable"); !ok || v != "0" {
				t.Errorf("roce_probe_state_dir_writable = %q (present %v), want 0", v, ok)
			}
			if _, ok := metricValue(body, "roce_scrape_collector_success", `collector="probe"`); !ok {
				t.Error("the probe collector did not run")
			}
			_, page := p.get(t, "/")
			if !strings.Contains(page, "cannot be written") || !strings.Contains(page, state) {
				t.Errorf("the node page does not say the state directory cannot be written:\n%s", grepLines(page, "state"))
			}
			if logs := p.logs.String(); !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "probe state directory cannot be written") || !strings.Contains(logs, name) {
				t.Errorf("no error in the log:\n%s", logs)
			}
		})
	}
}
