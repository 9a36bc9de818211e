package collector

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
)

// Accept-Encoding as RFC 9110 §12.5.3 reads it, each case a header a real
// client sends or a refusal one can send.
func TestNegotiateEncoding(t *testing.T) {
	for _, tc := range []struct {
		header []string // nil: no Accept-Encoding at all
		want   string   // "" = 406
	}{
		{nil, codingIdentity},
		{[]string{""}, codingIdentity},
		// Prometheus' own scrape header.
		{[]string{"gzip"}, codingGzip},
		{[]string{"GZIP"}, codingGzip},
		{[]string{"x-gzip"}, codingGzip},
		{[]string{"gzip, deflate, br"}, codingGzip},
		{[]string{"br;q=1.0, gzip;q=0.8, *;q=0.1"}, codingGzip},
		{[]string{"gzip;q=0"}, codingIdentity},
		{[]string{"gzip; q=0.000"}, codingIdentity},
		{[]string{"Gzip;Q=0"}, codingIdentity},
		{[]string{"identity;q=1, gzip;q=0.5"}, codingIdentity},
		{[]string{"gzip;q=0.5, identity;q=0.5"}, codingGzip},
		{[]string{"*"}, codingGzip},
		{[]string{"*;q=0"}, ""},
		{[]string{"*;q=0, identity"}, codingIdentity},
		{[]string{"identity;q=0"}, ""},
		{[]string{"gzip;q=0, identity;q=0"}, ""},
		{[]string{"gzip;q=0.5, identity;q=0"}, codingGzip},
		{[]string{"deflate", "gzip"}, codingGzip},
		{[]string{"br"}, codingIdentity},
		// Malformed weights are ignored, not taken for 1.
		{[]string{"gzip;q=2"}, codingIdentity},
		{[]string{"gzip;q=1e0"}, codingIdentity},
		{[]string{"gzip;q=0.0001"}, codingIdentity},
		{[]string{"gzip;q=-0"}, codingIdentity},
		{[]string{"gzip;level=9"}, codingIdentity},
		{[]string{"gzip;q=0.", "identity;q=0"}, ""},
		{[]string{"gzip;q=1."}, codingGzip},
		{[]string{" , gzip ; q=0.9 ,"}, codingGzip},
	} {
		h := http.Header{}
		for _, v := range tc.header {
			h.Add("Accept-Encoding", v)
		}
		got, ok := negotiateEncoding(h)
		if !ok {
			got = ""
		}
		if got != tc.want {
			t.Errorf("Accept-Encoding %q: %q, want %q", tc.header, got, tc.want)
		}
	}
}

// The handler answers each Accept-Encoding with the coding negotiated,
// always says it varies with it, and refuses with 406 when nothing it can
// send is acceptable.
func TestHandlerContentEncoding(t *testing.T) {
	e, _ := newTestExporter(t, testConfig(writeNode(t, sysfixture.HealthyCX7(1)), "rdma"))
	srv := httptest.NewServer(NewHandler(e, HandlerOpts{Timeout: 10 * time.Second}))
	defer srv.Close()
	for _, tc := range []struct {
		header, wantEncoding string
		wantStatus           int
	}{
		{"gzip", "gzip", 200},
		{"GZIP", "gzip", 200},
		{"gzip;q=0", "", 200},
		{"", "", 200},
		{"identity;q=0, *;q=0", "", http.StatusNotAcceptable},
	} {
		req, _ := http.NewRequest("GET", srv.URL, nil)
		if tc.header != "" {
			req.Header.Set("Accept-Encoding", tc.header)
		}
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.wantStatus || resp.Header.Get("Content-Encoding") != tc.wantEncoding {
			t.Errorf("Accept-Encoding %q: status %d, Content-Encoding %q; want %d, %q", tc.header, resp.StatusCode, resp.Header.Get("Content-Encoding"), tc.wantStatus, tc.wantEncoding)
		}
		if v := resp.Header.Values("Vary"); len(v) != 1 || v[0] != "Accept-Encoding" {
			t.Errorf("Accept-Encoding %q: Vary %q", tc.header, v)
		}
		if tc.wantStatus != 200 {
			continue
		}
		if tc.wantEncoding == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("Accept-Encoding %q: not gzip: %v", tc.header, err)
			}
			body, _ = io.ReadAll(zr)
		}
		if len(series(string(body), "roce_port_up")) == 0 {
			t.Errorf("Accept-Encoding %q: no metrics in the body", tc.header)
		}
	}
}

// BenchmarkNegotiateEncoding is the per-request cost of reading
// Prometheus' Accept-Encoding (go test -bench NegotiateEncoding ./collector).
func BenchmarkNegotiateEncoding(b *testing.B) {
	h := http.Header{"Accept-Encoding": {"gzip"}}
	for b.Loop() {
		if c, _ := negotiateEncoding(h); c != codingGzip {
			b.Fatal(c)
		}
	}
}
