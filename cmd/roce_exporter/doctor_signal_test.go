package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// Ctrl-C while the doctor waits between its samples must still remove the
// rdma_cm configfs groups it made. The doctor makes them only as root on
// the live /sys, so it runs in a private mount namespace whose
// /sys/kernel and /sys/class are this test's directories: a configfs with
// rdma_cm loaded and one RDMA device. The doctor gets SIGINT (and, in the
// second run, SIGTERM) once the group exists.
func TestDoctorInterruptedRemovesConfigfsGroups(t *testing.T) {
	testenv.RequireRoot(t)
	unshare := testenv.LookPath(t, "util-linux", "unshare")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			root := t.TempDir()
			kernel, class := filepath.Join(root, "kernel"), filepath.Join(root, "class")
			for _, d := range []string{filepath.Join(kernel, "config", "rdma_cm"), filepath.Join(class, "infiniband", "mlx5_0"), filepath.Join(class, "net")} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			group := filepath.Join(kernel, "config", "rdma_cm", "mlx5_0")
			cmd := exec.Command(unshare, "-m", "--propagation", "private", "sh", "-c",
				`mount --bind "$0" /sys/kernel && mount --bind "$1" /sys/class && exec "$2" doctor --interval=1h --color=never`,
				kernel, class, binary)
			logs := &testenv.SyncBuffer{}
			cmd.Stdout, cmd.Stderr = logs, logs
			if err := testenv.StartSession(t, cmd); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if _, err := os.Stat(group); err == nil {
					break
				}
				select {
				case err := <-exited:
					t.Fatalf("the doctor ended (%v) before making the configfs group:\n%s", err, logs)
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("no configfs group after 15s:\n%s", logs)
				}
			}
			// Past the first sample, into the wait (a signal during the
			// first read must clean up too, but this is the long window).
			time.Sleep(500 * time.Millisecond)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-exited:
			case <-time.After(10 * time.Second):
				t.Fatalf("the doctor did not stop within 10s of %v:\n%s", sig, logs)
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 128+int(sig) {
				t.Errorf("exit %v, want status %d (128+%d)", err, 128+int(sig), int(sig))
			}
			if _, err := os.Stat(group); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the configfs group %s is left behind after %v (%v)", group, sig, err)
			}
			if !strings.Contains(logs.String(), "stopped before the findings") {
				t.Errorf("the doctor does not say it was stopped:\n%s", logs)
			}
		})
	}
}
