package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The rail-switch query, evaluated by the real PromQL engine (promtool) on
// what two exporters export: each node's rail maps to its interface's LLDP
// chassis; a rail without a neighbour is left out.
func TestRailSwitchQueryWithPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian package prometheus)")
	}
	dir := t.TempDir()
	indent := func(s string, n int) string {
		pad := strings.Repeat(" ", n)
		return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
	}
	rules := "groups:\n  - name: q\n    rules:\n      - record: rail_switch\n        expr: |\n" + indent(railSwitchQuery, 10) + "\n"
	test := `rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'roce_probe_peers_failed{job="roce",instance="a:14791",probe="ib_write_bw",device="mlx5_0",rail="0",node="gpu01"}'
        values: '0 0'
      - series: 'roce_probe_peers_failed{job="roce",instance="a:14791",probe="ib_write_lat",device="mlx5_0",rail="0",node="gpu01"}'
        values: '0 0'
      - series: 'roce_probe_peers_failed{job="roce",instance="a:14791",probe="ib_write_bw",device="mlx5_1",rail="1",node="gpu01"}'
        values: '1 1'
      - series: 'roce_probe_peers_failed{job="roce",instance="b:14791",probe="ib_write_bw",device="mlx5_0",rail="0",node="gpu02"}'
        values: '0 0'
      - series: 'roce_port_info{job="roce",instance="a:14791",device="mlx5_0",port="1",link_layer="Ethernet",interface="ens1f0np0"}'
        values: '1 1'
      - series: 'roce_port_info{job="roce",instance="a:14791",device="mlx5_1",port="1",link_layer="Ethernet",interface="ens2f0np0"}'
        values: '1 1'
      - series: 'roce_port_info{job="roce",instance="b:14791",device="mlx5_0",port="1",link_layer="Ethernet",interface="ens1f0np0"}'
        values: '1 1'
      - series: 'roce_lldp_neighbor_info{job="roce",instance="a:14791",interface="ens1f0np0",chassis_id="c8:01",chassis_name="leaf-1",port_id="Ethernet0"}'
        values: '1 1'
      - series: 'roce_lldp_neighbor_info{job="roce",instance="b:14791",interface="ens1f0np0",chassis_id="c8:02",chassis_name="leaf-2",port_id="Ethernet0"}'
        values: '1 1'
    promql_expr_test:
      - expr: rail_switch
        eval_time: 1m
        exp_samples:
          - labels: 'rail_switch{node="gpu01",rail="0",chassis_id="c8:01"}'
            value: 1
          - labels: 'rail_switch{node="gpu02",rail="0",chassis_id="c8:02"}'
            value: 1
`
	for name, body := range map[string]string{"rules.yml": rules, "test.yml": test} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, promtool, "test", "rules", "test.yml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool: %v\n%s", err, out)
	}
}

// The witnesses' topology: filled from the fleet's Prometheus, unknown
// before its first answer and kept when a later one fails.
func TestFleetTopologyRefresh(t *testing.T) {
	answer := `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"node":"gpu01","rail":"3","chassis_id":"c8:07"},"value":[1,"1"]}]}}`
	var fail atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		io.WriteString(w, answer)
	}))
	defer srv.Close()
	topo := &fleetTopology{}
	if _, ok := topo.switchOf("gpu01", 3); ok {
		t.Fatal("a switch known before any answer")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { topo.refresh(ctx, srv.URL, 20*time.Millisecond, slog.New(slog.DiscardHandler)); close(done) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c, ok := topo.switchOf("gpu01", 3); ok {
			if c != "c8:07" {
				t.Fatalf("switch %q", c)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never filled")
		}
	}
	fail.Store(true)
	time.Sleep(100 * time.Millisecond)
	if c, ok := topo.switchOf("gpu01", 3); !ok || c != "c8:07" {
		t.Errorf("a failed refresh lost the last answer: %q %v", c, ok)
	}
	if _, ok := topo.switchOf("gpu01", 2); ok {
		t.Error("a rail without a neighbour has a switch")
	}
}
