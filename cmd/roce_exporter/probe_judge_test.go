package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/collector"
	"github.com/roce-exporter/roce_exporter/probes"
)

func TestProbeJudgementOnLandingPage(t *testing.T) {
	render := func(store *probes.Store) string {
		t.Helper()
		page, err := renderPage(pageConfig{}, collector.Status{}, nil, store, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return string(page)
	}
	store := probes.NewStore()
	if strings.Contains(render(store), "Probe judgement") {
		t.Error("a judgement without results")
	}
	now := time.Now()
	for _, peer := range []string{"gpu02", "gpu03"} {
		store.Add(&probes.Result{Probe: probes.KindIBWriteBW, Peer: peer, Device: "mlx5_3", Rail: 3, Start: now, Reason: probes.ReasonTimeout})
		store.Add(&probes.Result{Probe: probes.KindIBWriteBW, Peer: peer, Device: "mlx5_0", Start: now, Success: true})
	}
	page := render(store)
	for _, want := range []string{"<td>mlx5_3</td><td>3</td><td>2</td><td>0</td><td>gpu02, gpu03</td>", "suspect this NIC", "RoCEProbeSuspectNICPort"} {
		if !strings.Contains(page, want) {
			t.Errorf("landing page lacks %q:\n%s", want, page)
		}
	}
}

// probe judge reads the running exporter's metrics and names the rail.
func TestProbeJudgeCommand(t *testing.T) {
	metrics := `# TYPE roce_probe_peers_failed gauge
roce_probe_peers_failed{device="mlx5_0",node="gpu01",probe="ib_write_bw",rail="0"} 0
roce_probe_peers_failed{device="mlx5_3",node="gpu01",probe="ib_write_bw",rail="3"} 2
# TYPE roce_probe_peers_passed gauge
roce_probe_peers_passed{device="mlx5_0",node="gpu01",probe="ib_write_bw",rail="0"} 2
roce_probe_peers_passed{device="mlx5_3",node="gpu01",probe="ib_write_bw",rail="3"} 0
# TYPE roce_probe_success gauge
roce_probe_success{device="mlx5_0",peer="gpu02",probe="ib_write_bw"} 1
roce_probe_success{device="mlx5_3",peer="gpu02",probe="ib_write_bw"} 0
roce_probe_success{device="mlx5_3",peer="gpu03",probe="ib_write_bw"} 0
`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, metrics) }))
	defer srv.Close()
	url := srv.URL
	p := &probeCommand{judgeURL: &url}
	var out strings.Builder
	if code := p.judge(&out); code != 1 {
		t.Errorf("exit %d with a failing rail, want 1", code)
	}
	for _, want := range []string{"mlx5_3  3     2", "gpu02, gpu03", "suspect this NIC"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	metrics = "# TYPE roce_probe_peers_failed gauge\nroce_probe_peers_failed{device=\"mlx5_0\",node=\"gpu01\",probe=\"ib_write_bw\",rail=\"0\"} 0\n"
	out.Reset()
	if code := p.judge(&out); code != 0 || !strings.Contains(out.String(), "every rail passes") {
		t.Errorf("healthy: exit %d\n%s", code, out.String())
	}
}
