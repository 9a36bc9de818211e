package collector

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
)

// countingGatherer stands in for the exporter's self-metrics: every Gather
// returns the number of calls so far, so a response shows which call it got.
type countingGatherer struct{ calls atomic.Int64 }

func (g *countingGatherer) Gather() ([]*dto.MetricFamily, error) {
	n := float64(g.calls.Add(1))
	name, help := "self_gathers", "Gather calls."
	typ := dto.MetricType_COUNTER
	return []*dto.MetricFamily{{Name: &name, Help: &help, Type: &typ,
		Metric: []*dto.Metric{{Counter: &dto.Counter{Value: &n}}}}}, nil
}

var _ prometheus.Gatherer = (*countingGatherer)(nil)

func get(t *testing.T, url string, gz bool) string {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	// A bare transport: the default one would decompress behind our back.
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Error(err)
		return ""
	}
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Error(err)
			return ""
		}
		r = zr
	} else if gz {
		t.Error("asked for gzip, got plain text")
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Error(err)
	}
	if resp.ContentLength >= 0 && resp.Header.Get("Content-Encoding") == "" && int(resp.ContentLength) != len(b) {
		t.Errorf("Content-Length %d, body %d bytes", resp.ContentLength, len(b))
	}
	return string(b)
}

// stuckExporter is a 2-port exporter whose collections block in a sysfs
// read until release is closed, or the reader gives up after readTimeout.
func stuckExporter(t *testing.T, readTimeout time.Duration) (e *Exporter, release chan struct{}) {
	root := writeNode(t, sysfixture.HealthyCX7(2))
	ffs := newFaultFS()
	release = ffs.setHang("mlx5_0/ports/1/state")
	cfg := testConfig(root, "rdma", "netdev")
	cfg.ro.FS = ffs
	cfg.ro.Timeout = readTimeout
	e, _ = newTestExporter(t, cfg)
	return e, release
}

// TestConcurrentScrapesShareOneOutput holds a collection in flight while
// plain and gzip requests pile up: all of them get the same text, with the
// self-metrics gathered once for the collection, not once per request.
func TestConcurrentScrapesShareOneOutput(t *testing.T) {
	e, release := stuckExporter(t, 2*time.Second)
	self := &countingGatherer{}
	srv := httptest.NewServer(NewHandler(e, HandlerOpts{Self: self, Timeout: 10 * time.Second}))
	defer srv.Close()

	bodies := make([]string, 8)
	var wg sync.WaitGroup
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bodies[i] = get(t, srv.URL, i%2 == 0)
		}()
	}
	time.Sleep(200 * time.Millisecond) // every request joins the blocked collection
	close(release)
	wg.Wait()

	if !strings.Contains(bodies[0], "self_gathers 1\n") || !strings.Contains(bodies[0], "roce_port_up{") {
		t.Fatalf("first body lacks self-metrics or port series:\n%.400s", bodies[0])
	}
	for i, b := range bodies {
		if b != bodies[0] {
			t.Errorf("request %d got a different body than request 0", i)
		}
	}
	if n := self.calls.Load(); n != 1 {
		t.Errorf("self-metrics gathered %d times for one collection", n)
	}

	// The next scrape is a new collection with fresh self-metrics.
	if b := get(t, srv.URL, true); !strings.Contains(b, "self_gathers 2\n") {
		t.Errorf("second collection did not gather self-metrics again:\n%.200s", b)
	}
}

// The deadline a scrape waits for its collection: Prometheus' scrape
// timeout header minus the offset, never above --web.timeout, garbage
// ignored.
func TestScrapeTimeout(t *testing.T) {
	for _, c := range []struct {
		configured time.Duration
		header     string // "" = no header
		want       time.Duration
	}{
		{10 * time.Second, "", 10 * time.Second},
		{10 * time.Second, "5", 4500 * time.Millisecond},
		{10 * time.Second, "2.5", 2 * time.Second},
		{10 * time.Second, " 5 ", 4500 * time.Millisecond},
		{10 * time.Second, "10", 9500 * time.Millisecond},
		// Above --web.timeout: the configured bound stays.
		{10 * time.Second, "10.5", 10 * time.Second},
		{10 * time.Second, "30", 10 * time.Second},
		{10 * time.Second, "1e300", 10 * time.Second},
		// Nothing left after the offset: as blackbox_exporter, the configured one.
		{10 * time.Second, "0.5", 10 * time.Second},
		{10 * time.Second, "0.2", 10 * time.Second},
		// Garbage.
		{10 * time.Second, "ten", 10 * time.Second},
		{10 * time.Second, "5s", 10 * time.Second},
		{10 * time.Second, "0", 10 * time.Second},
		{10 * time.Second, "-3", 10 * time.Second},
		{10 * time.Second, "NaN", 10 * time.Second},
		{10 * time.Second, "+Inf", 10 * time.Second},
		// No configured limit: the header alone bounds the scrape.
		{0, "5", 4500 * time.Millisecond},
		{0, "ten", 0},
		{0, "", 0},
	} {
		h := &handler{opts: HandlerOpts{Timeout: c.configured}}
		r := httptest.NewRequest("GET", "/metrics", nil)
		if c.header != "" {
			r.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", c.header)
		}
		if got := h.scrapeTimeout(r); got != c.want {
			t.Errorf("--web.timeout %s, header %q: %s, want %s", c.configured, c.header, got, c.want)
		}
	}
}

// TestScrapeTimeoutHeaderBoundsASlowCollection holds a collection stuck in
// a sysfs read: a short scrape timeout header ends the wait early, one
// above --web.timeout does not lengthen it, garbage leaves it as
// configured, and once the read returns the header changes nothing.
func TestScrapeTimeoutHeaderBoundsASlowCollection(t *testing.T) {
	e, release := stuckExporter(t, time.Minute) // the read stays stuck until released
	long := httptest.NewServer(NewHandler(e, HandlerOpts{Timeout: 30 * time.Second}))
	defer long.Close()
	short := httptest.NewServer(NewHandler(e, HandlerOpts{Timeout: time.Second}))
	defer short.Close()

	scrape := func(t *testing.T, url, header string) (int, string, time.Duration) {
		req, _ := http.NewRequest("GET", url, nil)
		if header != "" {
			req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", header)
		}
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0, "", 0
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), time.Since(start)
	}
	// The three wait on the same stuck collection at once; the group ends
	// when all have answered.
	t.Run("stuck", func(t *testing.T) {
		for _, c := range []struct {
			name, url, header, want string
		}{
			{"short header, long --web.timeout", long.URL, "1.5", "scrape timed out after 1s"},
			{"header above --web.timeout", short.URL, "20", "scrape timed out after 1s"},
			{"garbage header", short.URL, "soon", "scrape timed out after 1s"},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				code, body, took := scrape(t, c.url, c.header)
				if code != http.StatusServiceUnavailable || !strings.Contains(body, c.want) {
					t.Errorf("got %d %q, want 503 %q", code, strings.TrimSpace(body), c.want)
				}
				// Far below the 30 s and 20 s that would apply otherwise.
				if took > 10*time.Second {
					t.Errorf("answered after %s", took)
				}
			})
		}
	})
	close(release)
	code, body, _ := scrape(t, long.URL, "10")
	if code != http.StatusOK || !strings.Contains(body, "roce_port_up{") {
		t.Errorf("after the read returned: %d %.200q", code, body)
	}
}
