package connguard

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// serve runs handler behind a guard of max connections on loopback.
func serve(t *testing.T, max int, handler http.Handler) (addr string, g *Guard) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	g = New(max, nil)
	g.Install(srv)
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String(), g
}

// keepAlive sends one request on a new connection, reads the answer and
// leaves the connection open and idle, as a keep-alive client does.
func keepAlive(t *testing.T, addr, path string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return c
}

// closedByServer reports whether the server closed c within wait.
func closedByServer(c net.Conn, wait time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(wait))
	_, err := c.Read(make([]byte, 1))
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })

// newClient makes one connection per request: a shared transport could
// offer a connection to an earlier test's server on a reused port.
func newClient() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
}

// fetch sends one request on a new connection and reads the answer.
func fetch(addr string) (time.Duration, error) {
	begin := time.Now()
	resp, err := newClient().Get("http://" + addr + "/")
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return time.Since(begin), err
}

func get(t *testing.T, addr string) time.Duration {
	t.Helper()
	took, err := fetch(addr)
	if err != nil {
		t.Fatalf("request with the connections at the cap: %v", err)
	}
	return took
}

func TestNewConnectionEvictsTheLongestIdle(t *testing.T) {
	addr, g := serve(t, 3, ok)
	var idle []net.Conn
	for i := 0; i < 3; i++ {
		idle = append(idle, keepAlive(t, addr, "/"))
		time.Sleep(10 * time.Millisecond) // distinct idle times
	}
	if took := get(t, addr); took > 2*time.Second {
		t.Errorf("request at the cap took %v", took)
	}
	if !closedByServer(idle[0], 2*time.Second) {
		t.Error("the longest-idle connection is still open")
	}
	for i, c := range idle[1:] {
		if closedByServer(c, 50*time.Millisecond) {
			t.Errorf("idle connection %d closed, only the oldest had to go", i+1)
		}
	}
	if n := g.Open(); n > 3 {
		t.Errorf("%d connections held, cap 3", n)
	}
}

func TestConnectionsNeverSendingARequestAreEvictable(t *testing.T) {
	addr, _ := serve(t, 2, ok)
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	time.Sleep(50 * time.Millisecond)
	get(t, addr)
}

// serveSlowRequest serves max connections and holds one request to /slow in
// its handler; release lets it finish and returns how the client fared.
func serveSlowRequest(t *testing.T, max int) (addr string, release func() error) {
	t.Helper()
	proceed := make(chan struct{})
	entered := make(chan struct{}, 1)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			entered <- struct{}{}
			<-proceed
		}
		io.WriteString(w, "ok\n")
	})
	addr, _ = serve(t, max, handler)
	slow := make(chan error, 1)
	go func() {
		resp, err := newClient().Get("http://" + addr + "/slow")
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		slow <- err
	}()
	<-entered
	return addr, func() error { close(proceed); return <-slow }
}

func TestConnectionInAHandlerIsNotEvicted(t *testing.T) {
	addr, release := serveSlowRequest(t, 2)
	idle := keepAlive(t, addr, "/")
	// At the cap with one connection in a handler: the idle one goes.
	get(t, addr)
	if !closedByServer(idle, 2*time.Second) {
		t.Error("the idle connection was kept and the busy one evicted")
	}
	if err := release(); err != nil {
		t.Errorf("the request in a handler was cut: %v", err)
	}
}

// With every connection in a handler, a new one waits for a free slot, as
// behind a listener limit, instead of cutting a request short.
func TestAllBusyWaitsForAFreeSlot(t *testing.T) {
	addr, release := serveSlowRequest(t, 1)
	done := make(chan error, 1)
	go func() {
		_, err := fetch(addr)
		done <- err
	}()
	select {
	case <-done:
		t.Fatal("a connection beyond the cap was served while every slot was in a handler")
	case <-time.After(300 * time.Millisecond):
	}
	if err := release(); err != nil {
		t.Errorf("the request in a handler was cut: %v", err)
	}
	if err := <-done; err != nil {
		t.Errorf("the waiting request failed: %v", err)
	}
}
