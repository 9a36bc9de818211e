package probes

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// TestChildrenDieWithTheExporter: after kill -9 of the process that started
// a probe child, the child must not live on (issue 12: orphaned perftest
// responders). The helper process starts its children from goroutines that
// lock their thread and exit, so Go ends those threads: a child whose
// parent-death signal were tied to such a thread would die at that moment,
// long before its parent.
func TestChildrenDieWithTheExporter(t *testing.T) {
	if os.Getenv("ROCE_SPAWN_HELPER") == "1" {
		spawnHelper()
		return
	}
	helper := exec.Command(os.Args[0], "-test.run=^TestChildrenDieWithTheExporter$")
	helper.Env = append(os.Environ(), "ROCE_SPAWN_HELPER=1")
	helper.Stderr = os.Stderr
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer helper.Process.Kill()
	lines := bufio.NewScanner(out)
	var children []int
	for lines.Scan() && lines.Text() != "done" {
		var pid int
		if _, err := fmt.Sscanf(lines.Text(), "child %d", &pid); err == nil {
			children = append(children, pid)
			defer syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if len(children) != helperChildren {
		t.Fatalf("the helper reported %d children", len(children))
	}
	for _, pid := range children {
		if !testenv.ProcessAlive(pid) {
			t.Fatalf("child %d died with the thread that asked for it, not with its parent process", pid)
		}
	}
	helper.Process.Signal(syscall.SIGKILL)
	helper.Wait()
	end := time.Now().Add(5 * time.Second)
	for _, pid := range children {
		for testenv.ProcessAlive(pid) {
			if time.Now().After(end) {
				t.Fatalf("child %d still runs 5 s after its parent was killed with SIGKILL", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// helperChildren: children are started from this many goroutines at once, so
// that they sit on as many threads and most of them are not the main
// thread, which Go never ends.
const helperChildren = 8

func spawnHelper() {
	started := make(chan *process, helperChildren)
	release := make(chan struct{})
	for range helperChildren {
		go func() {
			// Exits locked: the runtime ends this goroutine's thread.
			runtime.LockOSThread()
			p, err := startCommand(context.Background(), []string{"/bin/sleep", "300"}, nil, nil)
			if err != nil {
				fmt.Println("error", err)
				os.Exit(1)
			}
			started <- p
			<-release
		}()
	}
	var children []*process
	for range helperChildren {
		children = append(children, <-started)
	}
	close(release)
	time.Sleep(300 * time.Millisecond) // the locked goroutines and their threads are gone
	for _, p := range children {
		fmt.Printf("child %d\n", p.cmd.Process.Pid)
	}
	fmt.Println("done")
	select {} // until killed
}
