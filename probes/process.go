package probes

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/safefile"
	"github.com/roce-exporter/roce_exporter/probes/parse"
)

// stderrTail is how much of stderr a result keeps for the landing page.
const stderrTail = 2048

// execResult is the outcome of one child process.
type execResult struct {
	Stdout   []byte
	Stderr   string // tail
	ExitCode int    // -1 when the process did not exit normally
	TimedOut bool
	Err      error // start failure or wait error other than a non-zero exit
	Duration time.Duration
}

// tailBuffer keeps the last n bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	n   int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.n {
		b.buf = append(b.buf[:0:0], b.buf[len(b.buf)-b.n:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// errTimeout is the context cause when a probe's own timeout ended it.
var errTimeout = errors.New("probe timeout")

// process is a child running in its own process group: mpirun and
// perftest fork helpers that must not outlive the probe, so the context's
// cancellation (and the reaping after exit) targets the whole group.
type process struct {
	cmd    *exec.Cmd
	stop   context.CancelFunc
	stdout *safefile.LimitedBuffer
	stderr *tailBuffer
	begin  time.Time
	done   chan struct{}
	err    error
	// endedBy is the cause of the context that killed the process; nil
	// when it exited on its own. Set before done is closed.
	endedBy error
}

// startCommand starts argv (never through a shell); ending ctx kills its
// process group. onStdout, when set, sees every chunk of output as it
// arrives.
func startCommand(ctx context.Context, argv []string, env []string, onStdout func([]byte)) (*process, error) {
	if len(argv) == 0 {
		return nil, errors.New("empty command")
	}
	ctx, stop := context.WithCancel(ctx)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.SysProcAttr = childAttr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Grandchildren holding the pipes open must not keep Wait blocked.
	cmd.WaitDelay = 2 * time.Second
	p := &process{cmd: cmd, stop: stop, stdout: &safefile.LimitedBuffer{Limit: parse.MaxOutputBytes}, stderr: &tailBuffer{n: stderrTail}, done: make(chan struct{})}
	if onStdout != nil {
		cmd.Stdout = &notifyWriter{w: p.stdout, fn: onStdout}
	} else {
		cmd.Stdout = p.stdout
	}
	cmd.Stderr = p.stderr
	p.begin = time.Now()
	if err := startOnSpawnThread(cmd); err != nil {
		stop()
		return nil, fmt.Errorf("%s: %w", argv[0], err)
	}
	go func() {
		p.err = cmd.Wait()
		p.endedBy = context.Cause(ctx)
		stop()
		// Reap anything left in the group even after a normal exit.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		close(p.done)
	}()
	return p, nil
}

// The parent-death signal is sent when the *thread* that forked the child
// ends, not the process (prctl(2), PR_SET_PDEATHSIG), and Go ends a thread
// whenever a goroutine locked to it exits without unlocking (the netlink
// and network-namespace code in this process do that). A child forked from
// such a thread would be killed at a random moment. So every child is
// forked by one goroutine that locks its thread and never exits: the
// signal then comes only when the process dies. (The kernel also clears
// the signal when the child execs a set-user-ID binary or one with file
// capabilities; those rely on the process-group kill alone.)
var spawnThread struct {
	once     sync.Once
	requests chan spawnRequest
}

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

func startOnSpawnThread(cmd *exec.Cmd) error {
	spawnThread.once.Do(func() {
		spawnThread.requests = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread() // never unlocked
			for r := range spawnThread.requests {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawnThread.requests <- spawnRequest{cmd, done}
	return <-done
}

// kill ends the whole process group.
func (p *process) kill() { p.stop() }

// result waits for the process and reports it.
func (p *process) result() execResult {
	<-p.done
	res := execResult{Stderr: p.stderr.String(), ExitCode: -1, Duration: time.Since(p.begin),
		TimedOut: errors.Is(p.endedBy, errTimeout)}
	if p.cmd.ProcessState != nil {
		res.ExitCode = p.cmd.ProcessState.ExitCode()
	}
	if p.err != nil && !errors.As(p.err, new(*exec.ExitError)) && p.endedBy == nil {
		res.Err = p.err
	}
	// Output cut at the limit would parse as a run that stopped early; say
	// what happened instead.
	out, err := p.stdout.Bytes()
	res.Stdout = out
	if err != nil && res.Err == nil {
		res.Err = fmt.Errorf("standard output: %w", err)
	}
	return res
}

// runCommand runs argv to completion, killing its process group when ctx
// ends or timeout passes.
func runCommand(ctx context.Context, timeout time.Duration, argv []string, env []string, onStdout func([]byte)) execResult {
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errTimeout)
	defer cancel()
	p, err := startCommand(ctx, argv, env, onStdout)
	if err != nil {
		return execResult{ExitCode: -1, Err: err}
	}
	return p.result()
}

// notifyWriter passes output through and reports each chunk, so a
// responder can tell when a client connected.
type notifyWriter struct {
	w  *safefile.LimitedBuffer
	fn func([]byte)
}

func (n *notifyWriter) Write(p []byte) (int, error) {
	n.fn(p)
	return n.w.Write(p)
}

// restartBackoff spaces the restarts of a supervised child that keeps
// ending without doing its job: 1 s, doubling up to a minute, and back to
// 1 s after a run that went well.
type restartBackoff struct{ next time.Duration }

const (
	minRestartDelay = time.Second
	maxRestartDelay = time.Minute
)

// failed returns how long to wait before the next start.
func (b *restartBackoff) failed() time.Duration {
	d := max(b.next, minRestartDelay)
	b.next = min(2*d, maxRestartDelay)
	return d
}

func (b *restartBackoff) reset() { b.next = 0 }

// combined joins stdout and stderr: perftest prints results on stdout and
// most errors on stderr, and the parsers classify line by line.
func (out execResult) combined() []byte {
	b := make([]byte, 0, len(out.Stdout)+len(out.Stderr)+1)
	b = append(b, out.Stdout...)
	b = append(b, '\n')
	return append(b, out.Stderr...)
}

// sleepCtx waits d unless ctx ends first; false when it did.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// lastLine is the last line of a child's stderr, for a log line.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
