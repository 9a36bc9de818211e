package collector

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
)

const fixtures = "testdata"

func fixtureConfig(scenario string, collectors ...string) *setup {
	return testConfig(filepath.Join(fixtures, scenario), collectors...)
}

func TestRDMAHealthyFixture(t *testing.T) {
	e, _ := newTestExporter(t, fixtureConfig("mlx5-8x400g-healthy", "rdma"))
	out := scrape(t, e)
	if n := len(series(out, "roce_device_info")); n != 8 {
		t.Fatalf("want 8 devices, got %d", n)
	}
	for i := 0; i < 8; i++ {
		dev := `device="mlx5_` + string(rune('0'+i)) + `"`
		if v := value(t, mustSeries(t, out, "roce_port_up", dev)); v != "1" {
			t.Errorf("%s port_up = %s", dev, v)
		}
		mustSeries(t, out, "roce_gid_info", dev, `index="3"`, `type="RoCE v2"`)
		if v := value(t, mustSeries(t, out, "roce_port_active_mtu_bytes", dev)); v != "4096" {
			t.Errorf("%s active mtu = %s", dev, v)
		}
	}
	// port_rcv_data counts 4-byte words.
	if v := value(t, mustSeries(t, out, "roce_port_rcv_data_bytes_total", `device="mlx5_0"`)); v != "3.63084933764e+12" {
		t.Errorf("rcv_data bytes = %s, want 907712334410*4", v)
	}
	if v := value(t, mustSeries(t, out, "roce_hw_np_ecn_marked_roce_packets_total", `device="mlx5_1"`)); v != "123754" {
		t.Errorf("np_ecn_marked = %s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_port_rate_bytes_per_second", `device="mlx5_0"`)); v != "5e+10" {
		t.Errorf("rate = %s, want 400 Gb/s in bytes", v)
	}
	if v := value(t, mustSeries(t, out, "roce_hw_counters_lifespan_seconds", `device="mlx5_0"`)); v != "0.01" {
		t.Errorf("lifespan = %s, want 0.01 s", v)
	}
	if len(series(out, "roce_hw_lifespan_total")) != 0 {
		t.Error("lifespan must not be exported as a counter")
	}
	mustSeries(t, out, "roce_default_roce_mode_info", `device="mlx5_0"`, `mode="RoCE v2"`)
	mustSeries(t, out, "roce_device_info", `device="mlx5_0"`, `firmware_version="28.39.1002"`, `hca_type="MT4129"`,
		`pci_address="0000:18:00.0"`, `driver="mlx5_core"`, `board_id="MT_0000000838"`)
	mustSeries(t, out, "roce_port_info", `device="mlx5_7"`, `interface="ens8f0np0"`, `link_layer="Ethernet"`)
	// Empty GID slots (4..15 in the fixture) are not exported.
	if n := len(series(out, "roce_gid_info", `device="mlx5_0"`)); n != 4 {
		t.Errorf("mlx5_0 has %d GIDs, want 4", n)
	}
	if v := value(t, mustSeries(t, out, "roce_scrape_read_errors_total", `collector="rdma"`)); v != "0" {
		t.Errorf("healthy fixture had %s read errors", v)
	}
}

func TestRDMADegradedFixtureShowsEachFault(t *testing.T) {
	e, logs := newTestExporter(t, fixtureConfig("mlx5-degraded", "rdma"))
	out := scrape(t, e)
	if n := len(series(out, "roce_device_info")); n != 8 {
		t.Fatalf("every device must still report, got %d", n)
	}
	if v := value(t, mustSeries(t, out, "roce_port_up", `device="mlx5_1"`)); v != "0" {
		t.Errorf("down port reports up=%s", v)
	}
	if v := value(t, mustSeries(t, out, "roce_port_state_id", `device="mlx5_1"`)); v != "1" {
		t.Errorf("down port state = %s", v)
	}
	if len(series(out, "roce_port_rate_bytes_per_second", `device="mlx5_1"`)) != 0 {
		t.Error("the placeholder 40G rate of a down RoCE port must not be exported")
	}
	if v := value(t, mustSeries(t, out, "roce_port_active_mtu_bytes", `device="mlx5_3"`)); v != "1024" {
		t.Errorf("MTU 1500 port active mtu = %s, want 1024", v)
	}
	mustSeries(t, out, "roce_device_info", `device="mlx5_4"`, `firmware_version="28.37.1014"`)
	// The garbage file is skipped, its siblings still report.
	if len(series(out, "roce_hw_out_of_sequence_total", `device="mlx5_5"`)) != 0 {
		t.Error("garbage counter must be skipped")
	}
	mustSeries(t, out, "roce_hw_packet_seq_err_total", `device="mlx5_5"`)
	// counters/ unreadable: no PMA series, hw_counters still there.
	if len(series(out, "roce_port_rcv_data_bytes_total", `device="mlx5_6"`)) != 0 {
		t.Error("unreadable counters dir produced series")
	}
	mustSeries(t, out, "roce_hw_np_cnp_sent_total", `device="mlx5_6"`)
	if v := value(t, mustSeries(t, out, "roce_scrape_read_errors_total", `collector="rdma"`)); v != "2" {
		t.Errorf("read errors = %s, want 2 (garbage file + unreadable dir)", v)
	}
	if v := value(t, mustSeries(t, out, "roce_scrape_collector_success", `collector="rdma"`)); v != "1" {
		t.Errorf("bad files must not fail the collector: success=%s", v)
	}
	if !strings.Contains(logs.String(), "out_of_sequence") {
		t.Error("skipped garbage file was not logged")
	}
}

func TestRDMAInfiniBandFixture(t *testing.T) {
	e, _ := newTestExporter(t, fixtureConfig("ib-hdr", "rdma"))
	out := scrape(t, e)
	mustSeries(t, out, "roce_port_info", `device="mlx5_0"`, `link_layer="InfiniBand"`, `interface="ibp65s0"`)
	if len(series(out, "roce_port_active_mtu_bytes")) != 0 {
		t.Error("active MTU is a RoCE derivation; IB ports must not get one")
	}
	if v := value(t, mustSeries(t, out, "roce_port_rate_bytes_per_second", `device="mlx5_1"`)); v != "2.5e+10" {
		t.Errorf("HDR rate = %s", v)
	}
	mustSeries(t, out, "roce_port_symbol_error_total", `device="mlx5_0"`)
}

func TestRDMABroadcomNamesMapToMlx5(t *testing.T) {
	e, _ := newTestExporter(t, fixtureConfig("bnxt-no-counters", "rdma"))
	out := scrape(t, e)
	wantValues(t, out, map[string]string{
		"roce_hw_local_ack_timeout_err_total":          "4",  // to_retransmits
		"roce_hw_packet_seq_err_total":                 "9",  // seq_err_naks_rcvd
		"roce_hw_out_of_sequence_total":                "17", // oos_drop_count
		"roce_hw_np_ecn_marked_roce_packets_total":     "2301",
		"roce_hw_np_cnp_sent_total":                    "2210",
		"roce_hw_rp_cnp_handled_total":                 "1983",
		"roce_hw_req_transport_retries_exceeded_total": "0",
		"roce_hw_rx_bytes_total":                       "3.734529101824e+12",
	}, `device="bnxt_re0"`)
	// active_qps is a level, not a count.
	if !strings.Contains(out, "# TYPE roce_hw_active_qps gauge") {
		t.Error("active_qps must be a gauge")
	}
	if len(series(out, "roce_port_rcv_data_bytes_total")) != 0 {
		t.Error("bnxt_re has no counters/ directory")
	}
	if v := value(t, mustSeries(t, out, "roce_scrape_collector_success", `collector="rdma"`)); v != "1" {
		t.Errorf("missing counters/ must not fail the collector")
	}
}

func TestRDMAAbsentSourceIsQuiet(t *testing.T) {
	e, logs := newTestExporter(t, fixtureConfig("no-rdma-driver", "rdma", "netdev", "pcie"))
	out := scrape(t, e)
	for _, c := range []string{"rdma", "netdev", "pcie"} {
		if v := value(t, mustSeries(t, out, "roce_scrape_collector_success", `collector="`+c+`"`)); v != "0" {
			t.Errorf("%s success = %s, want 0 without RDMA devices", c, v)
		}
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=ERROR") || strings.Contains(line, "level=WARN") {
			t.Errorf("absent source must log at debug only: %s", line)
		}
	}
	snap := snapshot(e)
	if len(snap.NICs) != 1 || snap.NICs[0].VendorID != "0x15b3" || snap.NICs[0].Driver != "" {
		t.Errorf("NIC scan = %+v, want the unbound ConnectX-7 only", snap.NICs)
	}
	if snap.Modules["mlx5_ib"] {
		t.Error("modules: mlx5_ib reported loaded")
	}
}

func TestRDMACounterWrapsAcrossScrapes(t *testing.T) {
	root := writeNode(t, sysfixture.HealthyCX7(1))
	path := filepath.Join(root, "sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence")
	cong := filepath.Join(root, "sys/class/infiniband/mlx5_0/ports/1/hw_counters/rp_cnp_handled")
	set := func(p, v string) {
		t.Helper()
		os.Chmod(p, 0o644)
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e, _ := newTestExporter(t, testConfig(root, "rdma"))
	set(path, "4294967290")
	set(cong, "4294967290")
	out := scrape(t, e)
	if v := value(t, mustSeries(t, out, "roce_hw_out_of_sequence_total")); v != "4.29496729e+09" {
		t.Fatalf("first scrape = %s", v)
	}
	set(path, "5")
	set(cong, "5")
	out = scrape(t, e)
	if v := value(t, mustSeries(t, out, "roce_hw_out_of_sequence_total")); v != "4.294967301e+09" {
		t.Errorf("after wrap = %s, want 4294967301 (2^32 + 5)", v)
	}
	// rp_cnp_handled is a 64-bit congestion counter: a drop is a reset.
	if v := value(t, mustSeries(t, out, "roce_hw_rp_cnp_handled_total")); v != "5" {
		t.Errorf("64-bit counter extended: %s", v)
	}
}

func TestRDMAEmptyGIDSlotEINVALIsNotAnError(t *testing.T) {
	root := writeNode(t, sysfixture.HealthyCX7(1))
	ffs := newFaultFS()
	ffs.setErr("gid_attrs/types/2", syscall.EINVAL)
	ffs.setErr("gid_attrs/types/1", syscall.EIO)
	cfg := testConfig(root, "rdma")
	cfg.ro.FS = ffs
	e, _ := newTestExporter(t, cfg)
	out := scrape(t, e)
	gids := series(out, "roce_gid_info")
	if len(gids) != 2 {
		t.Fatalf("want slots 0 and 3, got %v", gids)
	}
	if v := value(t, mustSeries(t, out, "roce_scrape_read_errors_total")); v != "1" {
		t.Errorf("read errors = %s: EIO counts, EINVAL (empty slot) does not", v)
	}
}

func TestRDMACounterErrorsAreSkippedAndCounted(t *testing.T) {
	root := writeNode(t, sysfixture.HealthyCX7(2))
	os.Chmod(filepath.Join(root, "sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error"), 0o644)
	os.WriteFile(filepath.Join(root, "sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error"), []byte("12abc\n"), 0o644)
	ffs := newFaultFS()
	ffs.setErr("mlx5_0/ports/1/hw_counters/out_of_buffer", syscall.EOPNOTSUPP)
	ffs.setErr("mlx5_0/ports/1/counters/link_downed", syscall.EIO)
	cfg := testConfig(root, "rdma")
	cfg.ro.FS = ffs
	e, _ := newTestExporter(t, cfg)
	out := scrape(t, e)
	for _, m := range []string{"roce_port_symbol_error_total", "roce_hw_out_of_buffer_total", "roce_port_link_downed_total"} {
		if len(series(out, m, `device="mlx5_0"`)) != 0 {
			t.Errorf("%s: unreadable value exported (never turn an error into 0)", m)
		}
		mustSeries(t, out, m, `device="mlx5_1"`)
	}
	if v := value(t, mustSeries(t, out, "roce_scrape_read_errors_total")); v != "3" {
		t.Errorf("read errors = %s, want 3", v)
	}
}

func TestRDMADeviceFilterAppliesBeforeAnyRead(t *testing.T) {
	root := writeNode(t, sysfixture.HealthyCX7(4))
	ffs := newFaultFS()
	cfg := testConfig(root, "rdma", "netdev", "pcie")
	cfg.ro.FS = ffs
	cfg.ro.DeviceExclude = mustRegexp(t, "^mlx5_[23]$")
	e, _ := newTestExporter(t, cfg)
	out := scrape(t, e)
	if n := len(series(out, "roce_device_info")); n != 2 {
		t.Fatalf("want 2 devices after exclude, got %d", n)
	}
	for _, dev := range []string{"mlx5_2", "mlx5_3", "0000:3a:00.0", "0000:5d:00.0", "ens3f0np0", "ens4f0np0"} {
		if touched := ffs.touchedMatching(dev); len(touched) != 0 {
			t.Errorf("excluded %s was read: %v", dev, touched)
		}
	}
	cfg2 := testConfig(root, "rdma")
	cfg2.ro.DeviceInclude = mustRegexp(t, "^mlx5_1$")
	e2, _ := newTestExporter(t, cfg2)
	if n := len(series(scrape(t, e2), "roce_device_info")); n != 1 {
		t.Errorf("include kept %d devices, want 1", n)
	}
}

func TestRDMAVanishedDeviceDropsItsSeries(t *testing.T) {
	root := writeNode(t, sysfixture.HealthyCX7(3))
	e, _ := newTestExporter(t, testConfig(root, "rdma", "netdev", "pcie"))
	if n := len(series(scrape(t, e), "roce_device_info")); n != 3 {
		t.Fatalf("got %d devices", n)
	}
	link := filepath.Join(root, "sys/class/infiniband/mlx5_1")
	target, _ := os.Readlink(link)
	os.Remove(link)
	out := scrape(t, e)
	if len(series(out, "roce_device_info", `device="mlx5_1"`)) != 0 || len(series(out, "roce_port_up", `device="mlx5_1"`)) != 0 {
		t.Error("series of a removed device remain")
	}
	if n := len(series(out, "roce_device_info")); n != 2 {
		t.Errorf("other devices: got %d", n)
	}
	if len(series(out, "roce_interface_mtu_bytes", `interface="ens2f0np0"`)) != 0 {
		t.Error("netdev of the removed device still reported")
	}
	os.Symlink(target, link)
	if n := len(series(scrape(t, e), "roce_device_info")); n != 3 {
		t.Errorf("re-added device not picked up: %d", n)
	}
}

// On a node without RDMA devices the PCI bus scan that tells a missing NIC
// from a missing driver is layout: read once per refresh interval, not
// every scrape.
func TestNICScanFollowsTheRefreshInterval(t *testing.T) {
	ffs := newFaultFS()
	cfg := fixtureConfig("no-rdma-driver", "pcie")
	cfg.ro.FS = ffs
	cfg.ro.Refresh = time.Hour
	e, _ := newTestExporter(t, cfg)
	for i := 0; i < 3; i++ {
		if nics := snapshot(e).NICs; len(nics) != 1 || nics[0].VendorID != "0x15b3" {
			t.Fatalf("scrape %d: NIC scan = %+v, want the unbound ConnectX-7", i, nics)
		}
	}
	touched := ffs.touchedMatching("0000:18:00.0/class")
	if len(touched) != 1 {
		t.Fatalf("class file of the NIC touched as %v", touched)
	}
	for _, p := range touched {
		ffs.mu.Lock()
		n := ffs.touched[p]
		ffs.mu.Unlock()
		if n != 2 { // open and pread
			t.Errorf("%s touched %d times in 3 scrapes, want one read", p, n)
		}
	}
}

// Two counter files that map to one metric name (a driver's old and new
// name side by side, or a stray file) must not give Prometheus two samples
// of one series, which makes it reject the whole scrape: the first is kept
// and the second counted as a read error.
func TestRDMACounterFilesThatNameOneSeriesAreExportedOnce(t *testing.T) {
	root := writeNode(t, sysfixture.HealthyCX7(1))
	counters := filepath.Join(root, "sys/class/infiniband/mlx5_0/ports/1/counters")
	os.WriteFile(filepath.Join(counters, "port_symbol_error"), []byte("999\n"), 0o444)
	os.WriteFile(filepath.Join(counters, "rcv_data_bytes"), []byte("7\n"), 0o444)
	e, logs := newTestExporter(t, testConfig(root, "rdma"))
	out := scrape(t, e)
	seen := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		key := line[:strings.LastIndexByte(line, ' ')]
		if seen[key] {
			t.Errorf("series twice: %s", key)
		}
		seen[key] = true
	}
	rcv := value(t, mustSeries(t, out, "roce_port_rcv_data_bytes_total", `device="mlx5_0"`))
	if rcv == "28" {
		t.Errorf("port_rcv_data lost to the stray rcv_data_bytes file")
	}
	mustSeries(t, out, "roce_port_symbol_error_total", `device="mlx5_0"`)
	if v := value(t, mustSeries(t, out, "roce_scrape_read_errors_total", `collector="rdma"`)); v != "2" {
		t.Errorf("read errors = %s, want the 2 refused series", v)
	}
	if !strings.Contains(logs.String(), "two sources feed one series") {
		t.Error("collision not logged")
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	if _, err := parser.TextToMetricFamilies(strings.NewReader(out)); err != nil {
		t.Errorf("output does not parse: %v", err)
	}
}

// A device whose directory cannot be read (mode 000 for a non-root
// exporter) used to export roce_device_info with empty labels and pass
// every health check; one whose reads hang used to vanish from the checks.
// Both are now their own state, counted and reported.
func TestUnreadableDeviceIsItsOwnState(t *testing.T) {
	root := writeNode(t, sysfixture.HealthyCX7(2))
	ffs := newFaultFS()
	ffs.setErr("infiniband/mlx5_1/ports", syscall.EACCES)
	cfg := testConfig(root, "rdma", "netdev", "health")
	cfg.ro.FS = ffs
	e, _ := newTestExporter(t, cfg)
	out := scrape(t, e)
	if got := series(out, "roce_device_info", `device="mlx5_1"`); len(got) != 0 {
		t.Errorf("unreadable device exported: %v", got)
	}
	mustSeries(t, out, "roce_device_info", `device="mlx5_0"`)
	if v := value(t, mustSeries(t, out, "roce_scrape_collector_success", `collector="rdma"`)); v != "0" {
		t.Errorf("rdma success = %s with a device unreadable", v)
	}
	if v := value(t, mustSeries(t, out, "roce_scrape_read_errors_total", `collector="rdma"`)); v == "0" {
		t.Error("the unreadable device was not counted")
	}
	if v := value(t, mustSeries(t, out, "roce_health_check_ok", `check="rdma_devices_readable"`, `subject="mlx5_1"`)); v != "0" {
		t.Errorf("rdma_devices_readable mlx5_1 = %s", v)
	}
	mustSeries(t, out, "roce_health_check_info", `check="rdma_devices_readable"`, `subject="mlx5_1"`, `severity="critical"`)
}
