package main

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
	"github.com/roce-exporter/roce_exporter/tools/idleflood"
)

// TestIdleClientFloodDoesNotStopScrapes replays issue 12: 1,530 clients
// that each make one request and then sit on their keep-alive connection,
// against an exporter limited to 2,048 file descriptors (of which the
// collectors' cached sysfs files take about 500). Before the connection cap
// the descriptors ran out, accept failed with EMFILE and every scrape timed
// out. The figures are logged for the record (go test -v -run
// TestIdleClientFlood ./cmd/roce_exporter); `go run ./tools/benchtool
// -idle-clients 1530 -nofile 2048` measures the same on the scale fixture.
func TestIdleClientFloodDoesNotStopScrapes(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 1,530 connections")
	}
	prlimit := testenv.LookPath(t, "util-linux", "prlimit")
	const clients, fdLimit = 1530, 2048
	for _, tc := range []struct {
		name string
		tls  bool
	}{{"plain", false}, {"tls-failed-basic-auth", true}} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(scenarioArgs("mlx5-8x400g-healthy"), "--log.level=warn")
			opts := idleflood.Options{Clients: clients, Path: "/metrics", Scrapes: 20, Timeout: 15 * time.Second}
			if tc.tls {
				webConfig, pool := tlsBasicAuthConfig(t)
				args = append(args, "--web.config.file="+webConfig)
				opts.TLS = &tls.Config{RootCAs: pool}
				opts.FloodAuth = idleflood.BasicAuth("prometheus", "wrong")
				opts.ScrapeAuth = idleflood.BasicAuth("prometheus", "s3cret")
			}
			addr := testenv.FreeAddr(t)
			cmd := exec.Command(prlimit, append([]string{fmt.Sprintf("--nofile=%d:%d", fdLimit, fdLimit), binary, "--web.listen-address=" + addr}, args...)...)
			p := runExporter(t, addr, cmd)
			testenv.WaitListening(t, addr, 10*time.Second)
			opts.Addr, opts.PID = addr, p.cmd.Process.Pid
			res := idleflood.Run(opts)
			t.Logf("%s: %s", tc.name, res)
			if res.Answered != clients {
				t.Errorf("only %d of %d flood clients got an answer, first failure: %s", res.Answered, clients, res.FloodError)
			}
			if res.FDLimit != fdLimit {
				t.Fatalf("the exporter runs with %d fds, not under prlimit's %d", res.FDLimit, fdLimit)
			}
			if res.ScrapeErrors > 0 {
				t.Errorf("%d of %d scrapes failed during the flood, first: %s", res.ScrapeErrors, res.Scrapes, res.ScrapeError)
			}
			// Generous for a loaded 2-core CI machine: the failure this
			// guards against is a scrape that never gets an answer.
			if res.Max > 5*time.Second {
				t.Errorf("slowest scrape during the flood took %s", res.Max)
			}
			if res.PeakFDs >= fdLimit-64 {
				t.Errorf("the exporter used %d of its %d fds", res.PeakFDs, fdLimit)
			}
			if res.PeakHeld > 256+floodSlack {
				t.Errorf("the exporter held %d connections, above --web.max-connections (256)", res.PeakHeld)
			}
			if tc.tls && strings.Contains(p.logs.String(), "roce_port_up") {
				t.Error("metrics in the log")
			}
		})
	}
}

// floodSlack: an evicted connection's descriptor is released only when the
// goroutine reading from it wakes up and drops its reference, so under a
// flood on two busy cores a few dozen closed connections still hold a
// socket for a moment (measured: up to 24 above the cap).
const floodSlack = 128

// TestIdleTimeoutClosesKeepAliveConnections: a client that made a request
// and then says nothing is disconnected after --web.idle-timeout, also when
// the connection limit is off.
func TestIdleTimeoutClosesKeepAliveConnections(t *testing.T) {
	p := startExporter(t, append(scenarioArgs("mlx5-8x400g-healthy"), "--web.idle-timeout=1s", "--web.max-connections=0")...)
	var conns []net.Conn
	for i := 0; i < 5; i++ {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		conns = append(conns, c)
	}
	begin := time.Now()
	for i, c := range conns {
		c.SetReadDeadline(begin.Add(5 * time.Second))
		_, err := c.Read(make([]byte, 1))
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("idle connection %d still open after %s with --web.idle-timeout=1s", i, time.Since(begin))
		}
	}
	t.Logf("5 idle connections closed %s after their answers", time.Since(begin).Round(10*time.Millisecond))
}

// TestOnlyGetAndHeadAreServed: nothing the exporter serves changes state;
// other methods get 405 with the methods that work.
func TestOnlyGetAndHeadAreServed(t *testing.T) {
	p := startExporter(t, scenarioArgs("mlx5-8x400g-healthy")...)
	for _, path := range []string{"/metrics", "/"} {
		for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions, "PROPFIND"} {
			req, _ := http.NewRequest(method, "http://"+p.addr+path, strings.NewReader(""))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch method {
			case http.MethodGet, http.MethodHead:
				if resp.StatusCode != http.StatusOK {
					t.Errorf("%s %s: HTTP %d", method, path, resp.StatusCode)
				}
			default:
				if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
					t.Errorf("%s %s: HTTP %d, Allow %q; want 405 with Allow: GET, HEAD", method, path, resp.StatusCode, resp.Header.Get("Allow"))
				}
				if strings.Contains(string(body), "roce_port_up") {
					t.Errorf("%s %s returned metrics", method, path)
				}
			}
		}
	}
}

func TestBadWebTimeoutsAreRefusedAtStart(t *testing.T) {
	for _, flags := range [][]string{
		{"--web.write-timeout=5s"}, // below --web.timeout's 10s
		{"--web.idle-timeout=0s"},
		{"--web.max-connections=-1"},
	} {
		cmd := exec.Command(binary, append(append(scenarioArgs("mlx5-8x400g-healthy"), "--web.listen-address="+testenv.FreeAddr(t)), flags...)...)
		out, err := runWithTimeout(cmd, 10*time.Second)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(out, strings.SplitN(flags[0], "=", 2)[0]) {
			t.Errorf("%v: %v, want exit 2 naming the flag:\n%s", flags, err, out)
		}
	}
}

// runWithTimeout runs cmd and returns its output; a process still running
// after timeout is killed.
func runWithTimeout(cmd *exec.Cmd, timeout time.Duration) (string, error) {
	out := &testenv.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(timeout):
		cmd.Process.Kill()
		<-done
		return out.String(), fmt.Errorf("still running after %s", timeout)
	}
}
