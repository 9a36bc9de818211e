// Package connguard caps the connections an http.Server holds. At the cap, a
// new connection closes the one that has waited longest without a request in
// a handler (an idle keep-alive connection, one that never sent a request, or
// one that failed basic auth and stayed open) instead of waiting behind it:
// with a plain listener limit (netutil.LimitListener) a few hundred idle
// clients would keep the real scrape in the accept queue until their idle
// timeout, and without a limit they use up the file descriptors the
// collectors need (issue 12: 1,530 idle clients under `ulimit -n 2048` made
// every scrape time out).
//
// It works through the server's ConnState and ConnContext hooks and a
// handler wrapper, not through the listener, so exporter-toolkit keeps
// creating the listeners (systemd sockets, vsock, TLS and basic auth from
// --web.config.file).
package connguard

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Guard tracks the connections of one http.Server.
type Guard struct {
	max    int
	logger *slog.Logger

	mu    sync.Mutex
	freed *sync.Cond // a connection closed or went idle
	conns map[net.Conn]*entry
	// evicted counts closed connections since the last log line, which is
	// written at most once per logEvery so an attack does not flood the log.
	evicted  int
	lastLog  time.Time
	logEvery time.Duration
}

type entry struct {
	conn net.Conn // the accepted connection, under any TLS layer
	// since is when the connection last changed state (accepted, started
	// or finished a request); the smallest one is evicted first, so a
	// client that has just sent a request is the last candidate.
	since time.Time
	// busy is set when a request reaches the handler and cleared when
	// net/http reports the connection idle again, after the response is
	// flushed: a connection is never evicted with a response in flight.
	busy bool
}

// New returns a guard that keeps at most max connections open; max <= 0
// tracks them without a limit.
func New(max int, logger *slog.Logger) *Guard {
	g := &Guard{max: max, logger: logger, conns: map[net.Conn]*entry{}, logEvery: time.Minute}
	g.freed = sync.NewCond(&g.mu)
	return g
}

// Install hooks the guard into srv. Call it before srv serves, and before
// anything wraps srv.Handler in authentication (exporter-toolkit does in
// web.Serve), so that a request that fails authentication leaves its
// connection evictable.
func (g *Guard) Install(srv *http.Server) {
	next := srv.Handler
	if next == nil {
		next = http.DefaultServeMux
	}
	srv.Handler = g.handler(next)
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, underlying(c))
	}
	srv.ConnState = g.connState
}

type connKey struct{}

// underlying is the TCP (or vsock, or unix) connection under a TLS layer:
// ConnState and ConnContext see the *tls.Conn, closing the raw connection
// ends it at once without a close_notify that could block on a full send
// buffer.
func underlying(c net.Conn) net.Conn {
	for {
		inner, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return c
		}
		c = inner.NetConn()
	}
}

// Open is the number of connections held.
func (g *Guard) Open() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.conns)
}

func (g *Guard) connState(c net.Conn, state http.ConnState) {
	key := underlying(c)
	now := time.Now()
	g.mu.Lock()
	var report int
	switch state {
	case http.StateNew:
		// net/http calls this hook from its accept loop, so waiting here
		// (when every connection is in a handler) holds back accepting
		// like a listener limit would.
		for g.max > 0 && len(g.conns) >= g.max {
			victim := g.oldestEvictableLocked()
			if victim == nil {
				g.freed.Wait()
				continue
			}
			delete(g.conns, victim.conn)
			victim.conn.Close()
			g.evicted++
		}
		g.conns[key] = &entry{conn: key, since: now}
		if g.evicted > 0 && now.Sub(g.lastLog) >= g.logEvery {
			report, g.evicted, g.lastLog = g.evicted, 0, now
		}
	case http.StateActive:
		if e := g.conns[key]; e != nil {
			e.since = now
		}
	case http.StateIdle:
		if e := g.conns[key]; e != nil {
			e.since, e.busy = now, false
			g.freed.Broadcast()
		}
	case http.StateClosed, http.StateHijacked:
		delete(g.conns, key)
		g.freed.Broadcast()
	}
	g.mu.Unlock()
	if report > 0 && g.logger != nil {
		g.logger.Warn("HTTP connection limit reached: closed the longest-idle connections to accept new ones (an idle-client flood, or raise --web.max-connections)",
			"closed", report, "limit", g.max)
	}
}

func (g *Guard) oldestEvictableLocked() *entry {
	var oldest *entry
	for _, e := range g.conns {
		if !e.busy && (oldest == nil || e.since.Before(oldest.since)) {
			oldest = e
		}
	}
	return oldest
}

func (g *Guard) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, _ := r.Context().Value(connKey{}).(net.Conn)
		g.mu.Lock()
		if e := g.conns[key]; e != nil {
			e.busy = true
		}
		g.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}
