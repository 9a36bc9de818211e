package collector

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// HandlerOpts configures the /metrics handler.
type HandlerOpts struct {
	// MaxRequests bounds the scrapes served at once; more get 503. 0 means
	// no limit. Concurrent scrapes share one collection anyway, so this
	// only bounds memory and sockets.
	MaxRequests int
	// Timeout bounds a scrape; the collectors have their own, shorter one.
	// Prometheus' X-Prometheus-Scrape-Timeout-Seconds shortens it per
	// request (scrapeTimeout), never lengthens it.
	Timeout time.Duration
	// Self holds the exporter's own metrics (build info, Go runtime,
	// process); nil leaves them out.
	Self   prometheus.Gatherer
	Logger *slog.Logger
}

type handler struct {
	e     *Exporter
	opts  HandlerOpts
	slots chan struct{}
	gz    sync.Pool

	mu  sync.Mutex
	cur *output // of the latest collection served
}

// NewHandler serves the exporter in the Prometheus text format to GET and
// HEAD requests.
func NewHandler(e *Exporter, opts HandlerOpts) http.Handler {
	h := &handler{e: e, opts: opts}
	if opts.MaxRequests > 0 {
		h.slots = make(chan struct{}, opts.MaxRequests)
	}
	return ReadOnly(h)
}

// ReadOnly answers GET and HEAD with h and refuses every other method with
// 405 and an Allow header: nothing the exporter serves changes state, so a
// POST or DELETE that got metrics back would only hide a client's mistake.
func ReadOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method "+r.Method+" not allowed: use GET", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}

const textContentType = "text/plain; version=0.0.4; charset=utf-8"

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The body depends on Accept-Encoding: a cache must not hand a gzip
	// answer to a client that did not ask for one.
	w.Header().Set("Vary", "Accept-Encoding")
	coding, acceptable := negotiateEncoding(r.Header)
	if !acceptable {
		http.Error(w, "no acceptable content coding: /metrics is sent as gzip or identity", http.StatusNotAcceptable)
		return
	}
	if h.slots != nil {
		select {
		case h.slots <- struct{}{}:
			defer func() { <-h.slots }()
		default:
			http.Error(w, fmt.Sprintf("Limit of concurrent requests reached (%d), try again later.", h.opts.MaxRequests), http.StatusServiceUnavailable)
			return
		}
	}
	done := make(chan *collection, 1)
	go func() { done <- h.e.collect() }()
	var c *collection
	if timeout := h.scrapeTimeout(r); timeout > 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		select {
		case c = <-done:
		case <-timer.C:
			// The collection goes on; drop our reference when it ends.
			go func() { h.e.release(<-done) }()
			http.Error(w, fmt.Sprintf("scrape timed out after %s", timeout), http.StatusServiceUnavailable)
			return
		}
	} else {
		c = <-done
	}
	defer h.e.release(c)
	out := h.outputFor(c)

	w.Header().Set("Content-Type", textContentType)
	if coding == codingGzip {
		gz := out.gzipped(h, c.text)
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", strconv.Itoa(len(gz)))
		w.Write(gz)
		return
	}
	// With the length known, net/http sends the body in one write instead
	// of chunking it through its 4 KiB buffer.
	w.Header().Set("Content-Length", strconv.Itoa(len(out.self)+len(c.text)))
	w.Write(out.self)
	w.Write(c.text)
}

// scrapeTimeoutHeader is the scrape timeout Prometheus (and vmagent) send
// with every scrape, in seconds ("10", "2.5").
const scrapeTimeoutHeader = "X-Prometheus-Scrape-Timeout-Seconds"

// scrapeTimeoutOffset is the part of Prometheus' scrape timeout left for
// the answer to reach it, so that a slow scrape ends in our 503, which says
// why, rather than in Prometheus' "context deadline exceeded"
// (blackbox_exporter's --timeout-offset default).
const scrapeTimeoutOffset = 500 * time.Millisecond

// scrapeTimeout is how long a request waits for its collection, as
// blackbox_exporter's getTimeout decides it: the scrape timeout Prometheus
// sends minus scrapeTimeoutOffset, capped by the configured timeout. A
// header that is not a positive number of seconds, or that leaves nothing
// once the offset is taken, keeps the configured timeout (0: no limit).
func (h *handler) scrapeTimeout(r *http.Request) time.Duration {
	configured := h.opts.Timeout
	v := r.Header.Get(scrapeTimeoutHeader)
	if v == "" {
		return configured
	}
	seconds, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	// The upper bound keeps the conversion to a Duration from overflowing.
	if err != nil || !(seconds > 0 && seconds < 1e6) {
		if h.opts.Logger != nil {
			h.opts.Logger.Debug("ignoring an invalid scrape timeout header", "header", scrapeTimeoutHeader, "value", v, "timeout", configured)
		}
		return configured
	}
	t := time.Duration(seconds*float64(time.Second)) - scrapeTimeoutOffset
	if t <= 0 || (configured > 0 && t > configured) {
		return configured
	}
	return t
}

// output is what every request served from one collection sends: the
// exporter's self-metrics are gathered once per collection and the body is
// compressed once, so a scrape storm sharing a collection costs one gzip
// instead of one per client (Prometheus always asks for gzip).
type output struct {
	c      *collection
	self   []byte
	gzOnce sync.Once
	gz     []byte
}

func (h *handler) outputFor(c *collection) *output {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur != nil && h.cur.c == c {
		return h.cur
	}
	o := &output{c: c}
	if h.opts.Self != nil {
		o.self = h.selfMetrics()
	}
	h.cur = o
	return o
}

// gzipped compresses self-metrics and body on first use. body must be the
// text of o.c, read while the caller holds a reference to it.
func (o *output) gzipped(h *handler, body []byte) []byte {
	o.gzOnce.Do(func() {
		var b bytes.Buffer
		b.Grow((len(o.self) + len(body)) / 6)
		zw, _ := h.gz.Get().(*gzip.Writer)
		if zw == nil {
			zw, _ = gzip.NewWriterLevel(&b, gzip.BestSpeed)
		} else {
			zw.Reset(&b)
		}
		zw.Write(o.self)
		zw.Write(body)
		zw.Close()
		h.gz.Put(zw)
		o.gz = b.Bytes()
	})
	return o.gz
}

func (h *handler) selfMetrics() []byte {
	mfs, err := h.opts.Self.Gather()
	if err != nil && h.opts.Logger != nil {
		h.opts.Logger.Warn("gathering exporter self-metrics", "err", err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		expfmt.MetricFamilyToText(&b, mf)
	}
	return b.Bytes()
}
