package collector

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
)

// A switch that edits its port descriptions (SONiC writes the peer's name
// there, an operator fixes a typo) must not start a new neighbour series
// per port and edit: the labels identify the port, the free text is left
// out. Another cable or a renamed switch is a new series, as it should be.
func TestLLDPNeighborSeriesFollowIdentityNotFreeText(t *testing.T) {
	dir := t.TempDir()
	write := func(chassisName, portID, descr string) {
		t.Helper()
		doc := fmt.Sprintf(`{"lldp":[{"interface":[{"name":"ens1f0np0","chassis":[{"id":[{"type":"mac","value":"b8:ce:f6:11:00:00"}],"name":[{"value":%q}]}],
			"port":[{"id":[{"type":"local","value":%q}],"descr":[{"value":%q}]}]}]}]}`, chassisName, portID, descr)
		p := filepath.Join(dir, "lldpcli-neighbors.json")
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		// The replay cache keys on size and mtime: make every edit visible.
		later := time.Now().Add(time.Duration(len(doc)+len(descr)) * time.Second)
		if err := os.Chtimes(p, later, later); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testConfig(writeNode(t, sysfixture.HealthyCX7(1)), "rdma", "lldp")
	cfg.ro.ReplayDir = dir
	e, _ := newTestExporter(t, cfg)

	seen := map[string]bool{}
	for _, descr := range []string{"etp1", "gpu-07 rail 0", "gpu-07 rail 0 (moved from gpu-06)", ""} {
		write("leaf-1", "Ethernet0", descr)
		line := mustSeries(t, scrape(t, e), "roce_lldp_neighbor_info", `interface="ens1f0np0"`)
		if strings.Contains(line, descr) && descr != "" {
			t.Errorf("the port description is a label: %s", line)
		}
		seen[line] = true
	}
	if len(seen) != 1 {
		t.Errorf("a port description edit made %d series, want 1:\n%s", len(seen), strings.Join(keys(seen), "\n"))
	}
	write("leaf-1", "Ethernet8", "etp2")
	moved := mustSeries(t, scrape(t, e), "roce_lldp_neighbor_info", `interface="ens1f0np0"`)
	want := `roce_lldp_neighbor_info{chassis_id="b8:ce:f6:11:00:00",chassis_name="leaf-1",interface="ens1f0np0",port_id="Ethernet8"} 1`
	if moved != want {
		t.Errorf("after the move:\n got %s\nwant %s", moved, want)
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
