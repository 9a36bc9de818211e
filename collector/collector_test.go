package collector

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/pipeline"
)

func TestHungReadHitsTimeoutAndOthersStillReport(t *testing.T) {
	root := writeNode(t, sysfixture.HealthyCX7(2))
	ffs := newFaultFS()
	release := ffs.setHang("mlx5_0/ports/1/hw_counters/out_of_buffer")
	cfg := testConfig(root, "rdma", "netdev", "pcie", "health")
	cfg.ro.FS = ffs
	cfg.ro.Timeout = 300 * time.Millisecond
	e, logs := newTestExporter(t, cfg)

	begin := time.Now()
	out := scrape(t, e)
	if took := time.Since(begin); took > 2*time.Second {
		t.Fatalf("scrape took %v with a hung file; the timeout is 300ms", took)
	}
	if v := value(t, mustSeries(t, out, "roce_scrape_collector_success", `collector="rdma"`)); v != "0" {
		t.Errorf("hung collector success = %s", v)
	}
	for _, c := range []string{"netdev", "pcie"} {
		if v := value(t, mustSeries(t, out, "roce_scrape_collector_success", `collector="`+c+`"`)); v != "1" {
			t.Errorf("%s success = %s while rdma hangs", c, v)
		}
	}
	// The device whose read hangs is left out; the other still reports.
	if len(series(out, "roce_device_info", `device="mlx5_0"`)) != 0 {
		t.Error("the stuck device's partial series were exported")
	}
	mustSeries(t, out, "roce_device_info", `device="mlx5_1"`)
	if !strings.Contains(logs.String(), "did not return in time") {
		t.Error("stuck read not logged")
	}
	// The stuck device is not taken for healthy, nor for absent.
	if v := value(t, mustSeries(t, out, "roce_health_check_ok", `check="rdma_devices_readable"`, `subject="mlx5_0"`)); v != "0" {
		t.Errorf("rdma_devices_readable mlx5_0 = %s while its reads hang", v)
	}

	// While the read is still stuck, the device is skipped instead of
	// piling up another blocked goroutine, and the rest is read at once.
	begin = time.Now()
	out = scrape(t, e)
	if took := time.Since(begin); took > 200*time.Millisecond {
		t.Errorf("second scrape waited %v on the stuck device", took)
	}
	mustSeries(t, out, "roce_device_info", `device="mlx5_1"`)
	if v := value(t, mustSeries(t, out, "roce_scrape_collector_success", `collector="rdma"`)); v != "0" {
		t.Errorf("success = %s while a device is stuck: the data is partial", v)
	}

	close(release)
	deadline := time.Now().Add(2 * time.Second)
	for {
		out = scrape(t, e)
		if v := value(t, mustSeries(t, out, "roce_scrape_collector_success", `collector="rdma"`)); v == "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("collector did not recover after the read returned")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(series(out, "roce_device_info")); n != 2 {
		t.Errorf("after recovery: %d devices", n)
	}
}

func TestConcurrentScrapesShareOneCollection(t *testing.T) {
	root := writeNode(t, sysfixture.HealthyCX7(1))
	ffs := newFaultFS()
	release := ffs.setHang("mlx5_0/ports/1/state")
	cfg := testConfig(root, "rdma")
	cfg.ro.FS = ffs
	e, _ := newTestExporter(t, cfg)

	const scrapers = 20
	var wg sync.WaitGroup
	outs := make([]string, scrapers)
	for i := 0; i < scrapers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			outs[i] = scrape(t, e)
		}(i)
	}
	time.Sleep(100 * time.Millisecond)
	close(release)
	wg.Wait()
	// Each scrape that ran its own collection would have read the state
	// file once more (the hang only delays, it does not stop reads).
	reads := 0
	for _, p := range ffs.touchedMatching("mlx5_0/ports/1/state") {
		ffs.mu.Lock()
		reads += ffs.touched[p]
		ffs.mu.Unlock()
	}
	// open + pread of the first collection, plus at most one more
	// collection started by a scraper that arrived after it finished.
	if reads > 4 {
		t.Errorf("state file read %d times by %d concurrent scrapes; they should share a collection", reads, scrapers)
	}
	for i, o := range outs {
		if len(series(o, "roce_port_up")) != 1 {
			t.Errorf("scraper %d got no data", i)
		}
	}
}

func TestPanickingCollectorDoesNotKillExporter(t *testing.T) {
	registry["test_panic"] = registration{name: "test_panic", defaultEnabled: true,
		factory: func(*Options, *slog.Logger) Collector { return panicker{} }}
	defer delete(registry, "test_panic")
	e, logs := newTestExporter(t, fixtureConfig("mlx5-8x400g-healthy", "rdma", "test_panic"))
	out := scrape(t, e)
	if v := value(t, mustSeries(t, out, "roce_scrape_collector_success", `collector="test_panic"`)); v != "0" {
		t.Errorf("panicking collector success = %s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_scrape_collector_success", `collector="rdma"`)); v != "1" {
		t.Errorf("rdma success = %s", v)
	}
	if !strings.Contains(logs.String(), "panic in collector") {
		t.Error("panic not logged")
	}
	if len(series(out, "roce_port_up", `device="half"`)) != 0 {
		t.Error("the series the collector emitted before it panicked were exported")
	}
}

type panicker struct{}

func (panicker) Update(_ *pipeline.Collection, out *Sink) error {
	out.emit(portUpDesc, 1, "half", "written")
	panic("parser bug")
}

func TestNetdevFixture(t *testing.T) {
	e, _ := newTestExporter(t, fixtureConfig("mlx5-degraded", "netdev"))
	out := scrape(t, e)
	if n := len(series(out, "roce_interface_info")); n != 8 {
		t.Fatalf("want 8 interfaces, got %d", n)
	}
	if v := value(t, mustSeries(t, out, "roce_interface_mtu_bytes", `interface="ens4f0np0"`)); v != "1500" {
		t.Errorf("mtu = %s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_interface_mtu_bytes", `interface="ens1f0np0"`)); v != "9000" {
		t.Errorf("mtu = %s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_interface_up", `interface="ens2f0np0"`)); v != "0" {
		t.Errorf("down interface up = %s", v)
	}
	if len(series(out, "roce_interface_speed_bytes_per_second", `interface="ens2f0np0"`)) != 0 {
		t.Error("speed -1 of a down link must not be exported")
	}
	if v := value(t, mustSeries(t, out, "roce_interface_speed_bytes_per_second", `interface="ens1f0np0"`)); v != "5e+10" {
		t.Errorf("speed = %s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_interface_carrier_changes_total", `interface="ens2f0np0"`)); v != "7" {
		t.Errorf("carrier changes = %s", v)
	}
	mustSeries(t, out, "roce_interface_info", `interface="ens1f0np0"`, `device="mlx5_0"`, `port="1"`, `driver="mlx5_core"`, `bus_info="0000:18:00.0"`)
}

func TestNetdevIncludeAddsInterfaces(t *testing.T) {
	root := writeNode(t, sysfixture.HealthyCX7(1))
	cfg := testConfig(root, "netdev")
	cfg.ro.NetdevInclude = mustRegexp(t, ".*")
	cfg.ro.DeviceExclude = mustRegexp(t, ".*")
	e, _ := newTestExporter(t, cfg)
	out := scrape(t, e)
	mustSeries(t, out, "roce_interface_info", `interface="ens1f0np0"`, `device=""`)
}

func TestPCIeFixture(t *testing.T) {
	e, _ := newTestExporter(t, fixtureConfig("mlx5-degraded", "pcie"))
	out := scrape(t, e)
	if v := value(t, mustSeries(t, out, "roce_pcie_link_width_lanes", `device="mlx5_2"`, `kind="current"`)); v != "8" {
		t.Errorf("x8 link reports %s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_pcie_link_width_lanes", `device="mlx5_2"`, `kind="max"`)); v != "16" {
		t.Errorf("max width %s", v)
	}
	// Gen5 x8 = 252 Gb/s usable: below a 400G port.
	if v := value(t, mustSeries(t, out, "roce_pcie_bandwidth_bytes_per_second", `device="mlx5_2"`, `kind="available"`)); v != "3.1507e+10" {
		t.Errorf("available bandwidth = %s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_pcie_link_speed_transfers_per_second", `device="mlx5_0"`, `kind="current"`)); v != "3.2e+10" {
		t.Errorf("speed = %s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_pcie_aer_errors_total", `device="mlx5_2"`, `severity="correctable"`, `end="function"`)); v != "1734" {
		t.Errorf("AER = %s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_pcie_aer_errors_total", `device="mlx5_2"`, `severity="correctable"`, `end="upstream"`)); v != "0" {
		t.Errorf("AER of the root port = %s", v)
	}
}

// The port above the NIC is the other end of its link: a Gen5 card in a
// Gen4 slot shows the slot's 16 GT/s as upstream_max, and the errors the
// root port counted on the link come with end="upstream".
func TestPCIeUpstreamPort(t *testing.T) {
	n := sysfixture.HealthyCX7(2)
	n.Devices[0].PCIeCurSpeed, n.Devices[0].RootSpeed = "16.0 GT/s PCIe", "16.0 GT/s PCIe"
	n.Devices[0].RootAERCorrectable = 57
	n.Devices[1].RootPort = "" // on the root bus: no port above it
	root := writeNode(t, n)
	e, _ := newTestExporter(t, testConfig(root, "pcie"))
	out := scrape(t, e)
	if v := value(t, mustSeries(t, out, "roce_pcie_link_speed_transfers_per_second", `device="mlx5_0"`, `kind="upstream_max"`)); v != "1.6e+10" {
		t.Errorf("upstream max speed = %s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_pcie_link_speed_transfers_per_second", `device="mlx5_0"`, `kind="max"`)); v != "3.2e+10" {
		t.Errorf("card max speed = %s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_pcie_link_width_lanes", `device="mlx5_0"`, `kind="upstream_max"`)); v != "16" {
		t.Errorf("upstream max width = %s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_pcie_aer_errors_total", `device="mlx5_0"`, `severity="correctable"`, `end="upstream"`)); v != "57" {
		t.Errorf("root port AER = %s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_pcie_aer_errors_total", `device="mlx5_0"`, `severity="correctable"`, `end="function"`)); v != "0" {
		t.Errorf("function AER = %s", v)
	}
	for _, name := range []string{"roce_pcie_link_speed_transfers_per_second", "roce_pcie_link_width_lanes"} {
		if got := series(out, name, `device="mlx5_1"`, `kind="upstream_max"`); len(got) != 0 {
			t.Errorf("a function on the root bus has no upstream port: %v", got)
		}
	}
	if got := series(out, "roce_pcie_aer_errors_total", `device="mlx5_1"`, `end="upstream"`); len(got) != 0 {
		t.Errorf("upstream AER without an upstream port: %v", got)
	}
}

// A VF's link is its PF's: the port above it is the PF's other end, exported
// once, on the PF.
func TestPCIeVFHasNoUpstreamEnd(t *testing.T) {
	e, _ := newTestExporter(t, fixtureConfig("mlx5-sriov-vf", "pcie"))
	out := scrape(t, e)
	mustSeries(t, out, "roce_pcie_link_width_lanes", `device="mlx5_0"`, `kind="upstream_max"`)
	mustSeries(t, out, "roce_pcie_aer_errors_total", `device="mlx5_0"`, `end="upstream"`, `severity="fatal"`)
	if got := series(out, "roce_pcie_aer_errors_total", `device="mlx5_1"`, `end="upstream"`); len(got) != 0 {
		t.Errorf("the VF exports the PF's upstream port: %v", got)
	}
	if got := series(out, "roce_pcie_link_width_lanes", `device="mlx5_1"`, `kind="upstream_max"`); len(got) != 0 {
		t.Errorf("the VF exports the PF's upstream port: %v", got)
	}
}

func TestPCIeChainLimitsAvailableBandwidth(t *testing.T) {
	n := sysfixture.HealthyCX7(1)
	n.Devices[0].RootSpeed, n.Devices[0].RootWidth = "16.0 GT/s PCIe", 8
	root := writeNode(t, n)
	e, _ := newTestExporter(t, testConfig(root, "pcie"))
	f := snapshot(e).PCI["0000:18:00.0"]
	if f == nil {
		t.Fatal("no PCI function in snapshot")
	}
	if f.LimitedBy != "0000:17:01.0" || f.AvailableBandwidth != node.PCIeBandwidth(16, 8) {
		t.Errorf("available %v limited by %q; want the Gen4 x8 root port", f.AvailableBandwidth, f.LimitedBy)
	}
}
