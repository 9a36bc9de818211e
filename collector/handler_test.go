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

// TestConcurrentScrapesShareOneOutput holds a collection in flight while
// plain and gzip requests pile up: all of them get the same text, with the
// self-metrics gathered once for the collection, not once per request.
func TestConcurrentScrapesShareOneOutput(t *testing.T) {
	root := writeNode(t, sysfixture.HealthyCX7(2))
	ffs := newFaultFS()
	release := ffs.setHang("mlx5_0/ports/1/state")
	cfg := testConfig(root, "rdma", "netdev")
	cfg.ro.FS = ffs
	e, _ := newTestExporter(t, cfg)
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
