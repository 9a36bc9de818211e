package collector

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
)

// A real bnxt_en `ethtool -S` with non-zero port and ring discards
// (internal/nicstats/testdata/bnxt_en-ethq-discards-ethtool-S.txt.source)
// replayed for a bnxt_re node: the port's discards reach
// roce_phy_discards_total, which RoCEPortBufferDrops reads, and the empty
// host rings roce_rx_queue_discards_total, each once.
func TestBnxtRealCaptureShowsDrops(t *testing.T) {
	n := sysfixture.BnxtNoCounters()
	root := writeNode(t, n)
	dir := t.TempDir()
	capture, err := os.ReadFile("../internal/nicstats/testdata/bnxt_en-ethq-discards-ethtool-S.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, n.Devices[0].Netdev+".txt"), capture, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(root, "ethtool")
	cfg.ro.ReplayDir = dir
	e, _ := newTestExporter(t, cfg)
	out := scrape(t, e)
	iface := `interface="` + n.Devices[0].Netdev + `"`
	wantValues(t, out, map[string]string{
		"roce_rx_queue_discards_total": "6.55430134e+08",
	}, iface)
	if v := value(t, mustSeries(t, out, "roce_phy_discards_total", iface, `direction="rx"`)); v != "49337" {
		t.Errorf("rx port discards = %s, want 49337 (rx_stat_discard)", v)
	}
	if v := value(t, mustSeries(t, out, "roce_phy_discards_total", iface, `direction="tx"`)); v != "0" {
		t.Errorf("tx port discards = %s, want 0 (tx_stat_discard)", v)
	}
	if got := series(out, "roce_rx_queue_discards_total"); len(got) != 1 {
		t.Errorf("ring discards exported %d times: %v", len(got), got)
	}
	if v := value(t, mustSeries(t, out, "roce_scrape_collector_success", `collector="ethtool"`)); v != "1" {
		t.Errorf("ethtool collector success = %s", v)
	}
}
