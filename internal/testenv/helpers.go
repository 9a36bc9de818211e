package testenv

// Helpers shared by the tests that run real processes (cmd/roce_exporter,
// e2e): loopback addresses, waiting for a listener, small files.

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// FreeAddr returns a loopback address (127.0.0.1:port) nothing listens on.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// WaitListening waits up to timeout for something to accept connections on
// addr, and fails t otherwise.
func WaitListening(t testing.TB, addr string, timeout time.Duration) {
	t.Helper()
	for end := time.Now().Add(timeout); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			c.Close()
			return
		}
		if time.Now().After(end) {
			t.Fatalf("nothing listens on %s after %s", addr, timeout)
		}
	}
}

// WriteFile writes content to dir/name and returns the path.
func WriteFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// SyncBuffer collects output written by another goroutine (a child's
// copying goroutine in os/exec, a logger) while the test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// ProcessAlive reports whether pid runs. A zombie counts as ended: an orphan
// in a container whose PID 1 is no init is never reaped.
func ProcessAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may
	// itself hold spaces or parentheses.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] != 'Z' && s[i+2] != 'X'
}

// Children lists the processes whose parent is pid.
func Children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var children []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		var state string
		var ppid int
		if i < 0 {
			continue
		}
		if _, err := fmt.Sscanf(s[i+1:], " %s %d", &state, &ppid); err == nil && ppid == pid {
			children = append(children, child)
		}
	}
	return children
}
