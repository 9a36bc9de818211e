package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// StartSession starts cmd as the leader of a new session and, when the test
// ends, kills every process of that session and waits for cmd.
//
// Killing cmd alone is not enough for the exporter: its probes run perftest
// and mpirun in process groups of their own (so that a probe's timeout can
// kill a whole group), and those children outlive a killed exporter, keep
// writing into the test's directories and make TempDir's cleanup fail. A
// child may leave its parent's process group but not its session, so the
// session is what reaches all of them.
func StartSession(t testing.TB, cmd *exec.Cmd) error {
	t.Helper()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
	// A grandchild that survived would otherwise keep Wait blocked on the
	// output pipes.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return err
	}
	t.Cleanup(func() {
		if err := KillSession(cmd.Process.Pid, 10*time.Second); err != nil {
			t.Error(err)
		}
		cmd.Wait()
	})
	return nil
}

// KillSession sends SIGKILL to every live process of session sid (the pid
// of its leader) until none is left, and fails after timeout.
func KillSession(sid int, timeout time.Duration) error {
	end := time.Now().Add(timeout)
	for {
		pids, err := sessionMembers(sid)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if time.Now().After(end) {
			return fmt.Errorf("processes %v of session %d still alive after %s", pids, sid, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sessionMembers lists the processes of session sid that are not zombies
// (a zombie is dead already; its parent reaps it).
func sessionMembers(sid int) ([]int, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue // exited since the glob
		}
		pid, state, session, ok := parseStat(raw)
		if ok && session == sid && state != 'Z' && state != 'X' {
			out = append(out, pid)
		}
	}
	return out, nil
}

// parseStat reads pid, state and session from /proc/<pid>/stat:
// "pid (comm) state ppid pgrp session ...", where comm may itself contain
// spaces and parentheses, so the fields are counted from its last ')'.
func parseStat(raw []byte) (pid int, state byte, session int, ok bool) {
	open, closing := bytes.IndexByte(raw, '('), bytes.LastIndexByte(raw, ')')
	if open < 1 || closing < open {
		return 0, 0, 0, false
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(raw[:open])))
	if err != nil {
		return 0, 0, 0, false
	}
	f := bytes.Fields(raw[closing+1:])
	if len(f) < 4 || len(f[0]) != 1 {
		return 0, 0, 0, false
	}
	session, err = strconv.Atoi(string(f[3]))
	if err != nil {
		return 0, 0, 0, false
	}
	return pid, f[0][0], session, true
}
