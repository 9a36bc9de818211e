// Package idleflood attacks an exporter with idle keep-alive clients (issue
// 12: 1,530 of them under `ulimit -n 2048` made /metrics time out) and
// measures what it costs: the connections and file descriptors the exporter
// holds, and the latency of real scrapes during the attack. The Go test of
// the exporter and `tools/benchtool -idle-clients` both run it.
package idleflood

import (
	"bufio"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/procfs"
)

// Options describe one attack.
type Options struct {
	// Addr is the exporter's host:port; PID its process, for the /proc
	// figures.
	Addr string
	PID  int
	// Clients connect, send one request for Path each and then keep their
	// connection open without another request.
	Clients int
	Path    string
	// FloodAuth is the Authorization of the flood's requests ("" for
	// none): a wrong password leaves a connection that failed basic auth.
	FloodAuth string
	// TLS, when set, makes every connection HTTPS.
	TLS *tls.Config
	// Scrapes are then made one after the other, each on a new connection
	// as a Prometheus whose connection was closed makes it.
	Scrapes    int
	ScrapeAuth string
	// Timeout bounds each connection attempt and each scrape.
	Timeout time.Duration
}

// BasicAuth is the Authorization header value for user and password.
func BasicAuth(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

// Result is what the attack measured.
type Result struct {
	Clients int
	// Answered is how many flood connections got their answer; the rest
	// failed to connect or were not answered within the timeout.
	Answered   int
	FloodError string // the first failure
	// ClosedByServer is how many flood connections the exporter had closed
	// when the scrapes ended.
	ClosedByServer int
	// Peaks over the attack, sampled every 50 ms from /proc: TCP
	// connections the exporter held (its listeners not counted) and its
	// open file descriptors, against its RLIMIT_NOFILE.
	PeakHeld, PeakFDs, FDLimit int
	// Scrapes made during the attack, those that failed and their latency.
	Scrapes, ScrapeErrors int
	ScrapeError           string // the first failure
	P50, Max              time.Duration
	FloodTime             time.Duration
}

func (r Result) String() string {
	s := fmt.Sprintf("%d idle clients (%d answered, %d closed by the exporter, flood took %s): exporter held at most %d connections and %d of %d fds; %d scrapes during the attack: %d failed, latency p50 %s max %s",
		r.Clients, r.Answered, r.ClosedByServer, r.FloodTime.Round(time.Millisecond), r.PeakHeld, r.PeakFDs, r.FDLimit,
		r.Scrapes, r.ScrapeErrors, r.P50.Round(100*time.Microsecond), r.Max.Round(100*time.Microsecond))
	if r.FloodError != "" {
		s += "; first flood failure: " + r.FloodError
	}
	if r.ScrapeError != "" {
		s += "; first scrape failure: " + r.ScrapeError
	}
	return s
}

// floodWorkers open the flood's connections in parallel, as many clients
// would, without a thousand simultaneous TLS handshakes on a small machine.
const floodWorkers = 32

// Run attacks, scrapes, then closes every connection it opened.
func Run(o Options) Result {
	if o.Timeout == 0 {
		o.Timeout = 15 * time.Second
	}
	res := Result{Clients: o.Clients}
	sampler := startSampler(o.PID)

	var (
		mu       sync.Mutex
		conns    []net.Conn
		answered atomic.Int64
		closed   atomic.Int64
		ending   atomic.Bool
		next     atomic.Int64
		wg       sync.WaitGroup
	)
	begin := time.Now()
	for w := 0; w < floodWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(o.Clients) {
				c, br, err := o.idleClient()
				if c != nil {
					mu.Lock()
					conns = append(conns, c)
					mu.Unlock()
				}
				if err != nil {
					mu.Lock()
					if res.FloodError == "" {
						res.FloodError = err.Error()
					}
					mu.Unlock()
					continue
				}
				answered.Add(1)
				// The client sends nothing more; a read ends only when the
				// exporter closes the connection (or we do, at the end).
				go func() {
					c.SetReadDeadline(time.Time{})
					if _, err := br.ReadByte(); err != nil && !ending.Load() {
						closed.Add(1)
					}
				}()
			}
		}()
	}
	wg.Wait()
	res.FloodTime = time.Since(begin)
	res.Answered = int(answered.Load())

	var lat []time.Duration
	for i := 0; i < o.Scrapes; i++ {
		took, err := o.scrape()
		if err != nil {
			res.ScrapeErrors++
			if res.ScrapeError == "" {
				res.ScrapeError = err.Error()
			}
			continue
		}
		lat = append(lat, took)
	}
	res.Scrapes = o.Scrapes
	if len(lat) > 0 {
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		res.P50, res.Max = lat[len(lat)/2], lat[len(lat)-1]
	}
	res.PeakHeld, res.PeakFDs, res.FDLimit = sampler.stop()
	res.ClosedByServer = int(closed.Load())
	ending.Store(true)
	for _, c := range conns {
		c.Close()
	}
	return res
}

func (o Options) dial() (net.Conn, error) {
	c, err := net.DialTimeout("tcp", o.Addr, o.Timeout)
	if err != nil || o.TLS == nil {
		return c, err
	}
	config := o.TLS
	if config.ServerName == "" && !config.InsecureSkipVerify {
		config = config.Clone()
		config.ServerName, _, _ = net.SplitHostPort(o.Addr)
	}
	tc := tls.Client(c, config)
	tc.SetDeadline(time.Now().Add(o.Timeout))
	if err := tc.Handshake(); err != nil {
		c.Close()
		return nil, err
	}
	return tc, nil
}

// idleClient sends one keep-alive request and reads the whole answer.
func (o Options) idleClient() (net.Conn, *bufio.Reader, error) {
	c, err := o.dial()
	if err != nil {
		return nil, nil, err
	}
	c.SetDeadline(time.Now().Add(o.Timeout))
	req := "GET " + o.Path + " HTTP/1.1\r\nHost: " + o.Addr + "\r\nAccept-Encoding: gzip\r\n"
	if o.FloodAuth != "" {
		req += "Authorization: " + o.FloodAuth + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		return c, nil, err
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return c, nil, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return c, br, err
}

func (o Options) scrape() (time.Duration, error) {
	client := &http.Client{Timeout: o.Timeout, Transport: &http.Transport{
		DisableKeepAlives: true, TLSClientConfig: o.TLS,
		DialContext: (&net.Dialer{Timeout: o.Timeout}).DialContext,
	}}
	scheme := "http"
	if o.TLS != nil {
		scheme = "https"
	}
	req, err := http.NewRequest(http.MethodGet, scheme+"://"+o.Addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	if o.ScrapeAuth != "" {
		req.Header.Set("Authorization", o.ScrapeAuth)
	}
	begin := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(begin)
	switch {
	case err != nil:
		return 0, err
	case resp.StatusCode != http.StatusOK:
		return 0, fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	case len(body) == 0:
		return 0, fmt.Errorf("empty body")
	}
	return took, nil
}

// sampler follows the exporter's connections and descriptors from /proc.
type sampler struct {
	done                   chan struct{}
	wg                     sync.WaitGroup
	peakHeld, peakFDs, lim int
	proc                   procfs.Proc
	netfs                  procfs.FS
	ok                     bool
}

func startSampler(pid int) *sampler {
	s := &sampler{done: make(chan struct{})}
	if pid <= 0 {
		return s
	}
	var err error
	if s.proc, err = procfs.NewProc(pid); err != nil {
		return s
	}
	// The process's own view of the network namespace.
	if s.netfs, err = procfs.NewFS(fmt.Sprintf("/proc/%d", pid)); err != nil {
		return s
	}
	if limits, err := s.proc.Limits(); err == nil {
		s.lim = int(limits.OpenFiles)
	}
	s.ok = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			s.sample()
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *sampler) sample() {
	targets, err := s.proc.FileDescriptorTargets()
	if err != nil {
		return
	}
	s.peakFDs = max(s.peakFDs, len(targets))
	sockets := map[uint64]bool{}
	for _, t := range targets {
		var inode uint64
		if _, err := fmt.Sscanf(t, "socket:[%d]", &inode); err == nil {
			sockets[inode] = true
		}
	}
	held := 0
	for _, read := range []func() (procfs.NetTCP, error){s.netfs.NetTCP, s.netfs.NetTCP6} {
		lines, err := read()
		if err != nil {
			continue
		}
		for _, l := range lines {
			const listen = 0x0a
			if sockets[l.Inode] && l.St != listen {
				held++
			}
		}
	}
	s.peakHeld = max(s.peakHeld, held)
}

func (s *sampler) stop() (peakHeld, peakFDs, limit int) {
	if s.ok {
		close(s.done)
		s.wg.Wait()
		s.sample()
	}
	return s.peakHeld, s.peakFDs, s.lim
}
