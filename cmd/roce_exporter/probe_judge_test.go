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

// fakePrometheus answers the switch-suspect query with the chassis IDs given
// (nil: an error status).
func fakePrometheus(t *testing.T, chassis []string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" || r.URL.Query().Get("query") != switchSuspectQuery {
			http.Error(w, "unexpected "+r.URL.String(), http.StatusBadRequest)
			return
		}
		if chassis == nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"status":"error","errorType":"unavailable","error":"TSDB not ready"}`)
			return
		}
		var results []string
		for _, c := range chassis {
			results = append(results, `{"metric":{"__name__":"ALERTS","alertname":"RoCEProbeSuspectSwitch","alertstate":"firing","chassis_id":"`+c+`","chassis_name":"leaf-7","probe":"ib_write_bw"},"value":[1800000000,"1"]}`)
		}
		io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[`+strings.Join(results, ",")+`]}}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// probe judge names the switch of each rail (from the exporter's LLDP and
// port series) and, with --prometheus.url, says when the failing rails sit
// under a switch the fleet's rules name: the node is then its victim.
func TestProbeJudgeSwitchVictim(t *testing.T) {
	metrics := `# TYPE roce_probe_peers_failed gauge
roce_probe_peers_failed{device="mlx5_0",node="gpu01",probe="ib_write_bw",rail="0"} 0
roce_probe_peers_failed{device="mlx5_3",node="gpu01",probe="ib_write_bw",rail="3"} 3
# TYPE roce_probe_peers_passed gauge
roce_probe_peers_passed{device="mlx5_0",node="gpu01",probe="ib_write_bw",rail="0"} 2
roce_probe_peers_passed{device="mlx5_3",node="gpu01",probe="ib_write_bw",rail="3"} 0
# TYPE roce_port_info gauge
roce_port_info{device="mlx5_0",interface="ens1f0np0",link_layer="Ethernet",port="1"} 1
roce_port_info{device="mlx5_3",interface="ens4f0np0",link_layer="Ethernet",port="1"} 1
# TYPE roce_lldp_neighbor_info gauge
roce_lldp_neighbor_info{chassis_id="c8:00:00:00:00:01",chassis_name="leaf-1",interface="ens1f0np0",port_descr="",port_id="Ethernet0"} 1
roce_lldp_neighbor_info{chassis_id="c8:00:00:00:00:07",chassis_name="leaf-7",interface="ens4f0np0",port_descr="",port_id="Ethernet24"} 1
`
	exporter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, metrics) }))
	defer exporter.Close()
	judge := func(prom string) string {
		t.Helper()
		url := exporter.URL
		p := &probeCommand{judgeURL: &url, judgePrometheus: &prom}
		var out strings.Builder
		if code := p.judge(&out); code != 1 {
			t.Errorf("exit %d with a failing rail", code)
		}
		return out.String()
	}
	out := judge(fakePrometheus(t, []string{"c8:00:00:00:00:07"}).URL)
	for _, want := range []string{"leaf-7 (chassis_id c8:00:00:00:00:07)", "mlx5_3 (rail 3) under switch leaf-7", "RoCEProbeSuspectSwitch: this node is a victim of that switch"} {
		if !strings.Contains(out, want) {
			t.Errorf("switch suspect firing: output lacks %q:\n%s", want, out)
		}
	}
	out = judge(fakePrometheus(t, []string{"c8:00:00:00:00:01"}).URL)
	if strings.Contains(out, "victim of that switch") || !strings.Contains(out, "do not name as a switch suspect") {
		t.Errorf("another switch firing:\n%s", out)
	}
	out = judge("")
	if strings.Contains(out, "victim") || !strings.Contains(out, "mlx5_3 (rail 3) under switch leaf-7 (chassis_id c8:00:00:00:00:07): cannot tell from this node") {
		t.Errorf("without Prometheus:\n%s", out)
	}
	out = judge(fakePrometheus(t, nil).URL)
	if strings.Contains(out, "victim") || !strings.Contains(out, "could not be read") || !strings.Contains(out, "TSDB not ready") {
		t.Errorf("Prometheus failing:\n%s", out)
	}
}

// The node page shows each rail's switch and the victim verdict.
func TestLandingPageSwitchVictim(t *testing.T) {
	store := probes.NewStore()
	now := time.Now()
	for _, peer := range []string{"gpu02", "gpu03"} {
		store.Add(&probes.Result{Probe: probes.KindIBWriteBW, Peer: peer, Device: "mlx5_3", Rail: 3, Start: now, Reason: probes.ReasonTimeout})
	}
	leaf := probes.RailSwitch{ChassisID: "c8:00:00:00:00:07", Name: "leaf-7"}
	for _, tc := range []struct {
		view probes.SwitchView
		want []string
		not  string
	}{
		{probes.SwitchView{Rails: map[string]probes.RailSwitch{"mlx5_3": leaf}, Asked: true, Suspects: map[string]bool{leaf.ChassisID: true}},
			[]string{"<td>leaf-7 (chassis_id c8:00:00:00:00:07)</td>", "this node is a victim of that switch"}, ""},
		{probes.SwitchView{Rails: map[string]probes.RailSwitch{"mlx5_3": leaf}},
			[]string{"cannot tell from this node whether the switch is at fault"}, "victim of that switch"},
	} {
		page, err := renderPage(pageConfig{Switches: func() probes.SwitchView { return tc.view }}, collector.Status{}, nil, store, now)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range tc.want {
			if !strings.Contains(string(page), want) {
				t.Errorf("page lacks %q", want)
			}
		}
		if tc.not != "" && strings.Contains(string(page), tc.not) {
			t.Errorf("page says %q", tc.not)
		}
	}
}
