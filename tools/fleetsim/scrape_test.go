package fleetsim

import (
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/probes"
)

// What Prometheus holds of a simulated node is what its exporter exports,
// scrape by scrape: a result while it is fresh, nothing once it ages out
// (a stale marker, not five minutes of lookback), and up 0 with every
// series gone when the node is down.
func TestScrapesFollowTheExporter(t *testing.T) {
	cfg := DefaultConfig(4)
	sim := NewSim(cfg, loadShippedRules(t))
	c, _ := ClassNamed("noise only")
	tr, _, err := sim.newTrial(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	prom, err := newServer(sim.rules, tr.promStart, cfg.Scrape, false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer prom.close()
	count := func(q string) int {
		t.Helper()
		qq, err := prom.engine.NewInstantQuery(prom.ctx, prom.db, nil, q, tr.now)
		if err != nil {
			t.Fatal(err)
		}
		defer qq.Close()
		vec, err := qq.Exec(prom.ctx).Vector()
		if err != nil {
			t.Fatal(err)
		}
		return len(vec)
	}
	scrapeAt := func(at time.Time) {
		t.Helper()
		tr.now = at
		if err := tr.scrapeAll(prom); err != nil {
			t.Fatal(err)
		}
	}
	m := tr.machines[0]
	start := tr.promStart
	tr.now = start
	m.store.Add(&probes.Result{Probe: probes.KindIBWriteBW, Peer: tr.fleet.names[1], Device: device(2), Rail: 2, Start: start, Success: true})
	m.scrape.dirty = true
	scrapeAt(start.Add(30 * time.Second))
	if n := count(`roce_probe_success{instance="gpu0001:14791",peer="gpu0002",device="mlx5_2"}`); n != 1 {
		t.Fatalf("a fresh result: %d series", n)
	}
	// The families the evaluated rules read are stored, the others not.
	for name, q := range map[string]string{
		"roce_lldp_neighbor_info":     `roce_lldp_neighbor_info{instance="gpu0001:14791",interface="ens3f0np0",chassis_name="leaf-p001-r2"}`,
		"roce_port_info":              `roce_port_info{instance="gpu0001:14791",device="mlx5_2",interface="ens3f0np0"}`,
		"roce_port_link_downed_total": `roce_port_link_downed_total{instance="gpu0001:14791",device="mlx5_2"}`,
		"roce_probe_duration_seconds": `roce_probe_duration_seconds{instance="gpu0001:14791",device="mlx5_2"}`,
	} {
		want := 0
		if sim.rules.Stores(name) {
			want = 1
		}
		if n := count(q); n != want {
			t.Errorf("%s: %d series, want %d (read by the rules: %v)", q, n, want, sim.rules.Stores(name))
		}
	}
	if sim.rules.Stores("roce_probe_duration_seconds") || !sim.rules.Stores("roce_probe_success") {
		t.Errorf("the rules read roce_probe_duration_seconds (%v) or not roce_probe_success (%v)",
			sim.rules.Stores("roce_probe_duration_seconds"), sim.rules.Stores("roce_probe_success"))
	}
	// Past the freshness bound the exporter drops it; the next scrape
	// marks it stale at once.
	expired := start.Add(tr.fleet.bound + time.Second)
	for at := start.Add(time.Minute); at.Before(expired.Add(30 * time.Second)); at = at.Add(cfg.Scrape) {
		scrapeAt(at)
	}
	if n := count(`roce_probe_success{instance="gpu0001:14791"}`); n != 0 {
		t.Errorf("an expired result is still read: %d series", n)
	}
	m.up = false
	scrapeAt(tr.now.Add(cfg.Scrape))
	if n := count(`up{instance="gpu0001:14791"} == 0`); n != 1 {
		t.Errorf("a node down is not up 0")
	}
	if n := count(`roce_probe_peers_passed{instance="gpu0001:14791"} or roce_port_info{instance="gpu0001:14791"}`); n != 0 {
		t.Errorf("a node down still has %d series", n)
	}
}
