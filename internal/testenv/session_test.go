package testenv

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestMain lets the test binary play a parent that starts a child in a
// process group of its own, like the exporter's probe runner.
func TestMain(m *testing.M) {
	if os.Getenv("TESTENV_SPAWN_GROUP") == "1" {
		child := exec.Command("sleep", "300")
		child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := child.Start(); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println(child.Process.Pid)
		child.Wait()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A child that moved to a process group of its own (as the exporter's
// probes do) must not outlive the test that started its parent.
func TestStartSessionKillsChildrenInOtherGroups(t *testing.T) {
	LookPath(t, "coreutils", "sleep")
	var child int
	t.Run("run", func(t *testing.T) {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "TESTENV_SPAWN_GROUP=1")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := StartSession(t, cmd); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if child, err = strconv.Atoi(strings.TrimSpace(line)); err != nil {
			t.Fatal(err)
		}
		pgid, err := syscall.Getpgid(child)
		if err != nil {
			t.Fatal(err)
		}
		if pgid == cmd.Process.Pid {
			t.Fatalf("the child stayed in its parent's process group %d: the test does not test what it claims", pgid)
		}
	})
	if alive(child) {
		syscall.Kill(child, syscall.SIGKILL)
		t.Fatalf("process %d (in its own process group) outlived the test that started its parent", child)
	}
}

func alive(pid int) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, state, _, ok := parseStat(raw)
	return ok && state != 'Z' && state != 'X'
}

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		in           string
		pid, session int
		state        byte
		ok           bool
	}{
		{"4242 (roce_exporter) S 1 4242 4242 0 -1 4194560", 4242, 4242, 'S', true},
		{"77 (a (b) c) R 5 77 70 0", 77, 70, 'R', true},
		{"77 (no fields)", 0, 0, 0, false},
		{"garbage", 0, 0, 0, false},
	} {
		pid, state, session, ok := parseStat([]byte(tc.in))
		if ok != tc.ok || pid != tc.pid || state != tc.state || session != tc.session {
			t.Errorf("parseStat(%q) = %d %c %d %v, want %d %c %d %v", tc.in, pid, state, session, ok, tc.pid, tc.state, tc.session, tc.ok)
		}
	}
}
