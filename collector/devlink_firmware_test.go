package collector

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
)

// One roce_devlink_firmware_info per mlx5 function, from devlink dev info:
// stored equals running on a settled NIC, differs where an update waits for
// a reset, and is empty where mlx5 could not read its pending image (a real
// capture, internal/devlinknl/testdata/info-text-mlx5-stored-unreadable.txt).
func TestDevlinkFirmwareInfo(t *testing.T) {
	nic := sysfixture.DefaultNIC(1)
	nic.PendingFirmware = "28.43.1014"
	root := filepath.Join(t.TempDir(), "node")
	sc := sysfixture.Scenario{Node: sysfixture.HealthyCX7(2), Replay: map[string]sysfixture.NIC{"mlx5_1": nic}}
	if err := sc.Write(root); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(root, "rdma", "devlink")
	cfg.ro.ReplayDir = filepath.Join(root, "replay")
	e, _ := newTestExporter(t, cfg)
	out := scrape(t, e)
	for dev, stored := range map[string]string{"mlx5_0": "28.39.1002", "mlx5_1": "28.43.1014"} {
		mustSeries(t, out, "roce_devlink_firmware_info", `device="`+dev+`"`, `component="fw"`, `running="28.39.1002"`, `stored="`+stored+`"`)
	}
	if got := series(out, "roce_devlink_firmware_info"); len(got) != 2 {
		t.Errorf("%d firmware series, want one per function: %v", len(got), got)
	}

	root = writeNode(t, sysfixture.HealthyCX7(1))
	dir := t.TempDir()
	b, err := os.ReadFile("../internal/devlinknl/testdata/info-text-mlx5-stored-unreadable.txt")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "devlink-info.txt"), b, 0o644)
	cfg = testConfig(root, "devlink")
	cfg.ro.ReplayDir = dir
	e, _ = newTestExporter(t, cfg)
	out = scrape(t, e)
	mustSeries(t, out, "roce_devlink_firmware_info", `devlink="pci/0000:00:06.0"`, `device=""`, `running="22.41.0188"`, `stored=""`)
}
