package collector

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
	"github.com/roce-exporter/roce_exporter/node"
)

// Layouts of real sysfs trees that other projects' fixtures and users'
// reports show (issue 18), each read through the exporter.

// setFile rewrites a fixture file (the generator makes them read-only).
func setFile(t testing.TB, path, content string) {
	t.Helper()
	os.Chmod(path, 0o644)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Every counters/ file of an i40iw port reads "N/A (no PMA)" (node_exporter's
// fixture; node_exporter#966 shows the same on an mlx4 VF): the device cannot
// count, which is not a read error, and the files are not read again until
// the port is listed again.
func TestRDMANoPMACountersAreNotReadErrors(t *testing.T) {
	root := writeNode(t, sysfixture.HealthyCX7(2))
	counters := filepath.Join(root, "sys/class/infiniband/mlx5_0/ports/1/counters")
	names, err := os.ReadDir(counters)
	if err != nil || len(names) < 17 {
		t.Fatalf("fixture counters: %v %d", err, len(names))
	}
	for _, n := range names {
		setFile(t, filepath.Join(counters, n.Name()), "N/A (no PMA)\n")
	}
	ffs := newFaultFS()
	cfg := testConfig(root, "rdma")
	cfg.ro.FS = ffs
	cfg.ro.Refresh = time.Hour // the port is listed once
	e, _ := newTestExporter(t, cfg)
	var out string
	for i := 0; i < 3; i++ {
		out = scrape(t, e)
	}
	if v := value(t, mustSeries(t, out, "roce_scrape_read_errors_total", `collector="rdma"`)); v != "0" {
		t.Errorf("read errors = %s after 3 scrapes, want 0: N/A is not supported, not unreadable", v)
	}
	for _, m := range []string{"roce_port_rcv_data_bytes_total", "roce_port_symbol_error_total", "roce_port_link_downed_total"} {
		if got := series(out, m, `device="mlx5_0"`); len(got) != 0 {
			t.Errorf("%s exported for a device without a PMA: %v", m, got)
		}
		mustSeries(t, out, m, `device="mlx5_1"`)
	}
	mustSeries(t, out, "roce_hw_np_cnp_sent_total", `device="mlx5_0"`)
	if v := value(t, mustSeries(t, out, "roce_port_up", `device="mlx5_0"`)); v != "1" {
		t.Errorf("port_up = %s", v)
	}
	// Read once when listed, not on every scrape.
	before := ffs.touches("mlx5_0/ports/1/counters/")
	scrape(t, e)
	scrape(t, e)
	if after := ffs.touches("mlx5_0/ports/1/counters/"); after != before {
		t.Errorf("N/A counter files read %d more times in 2 scrapes; they are not supported until the port is listed again", after-before)
	}
	if ffs.touches("mlx5_1/ports/1/counters/port_rcv_data") < 5 {
		t.Error("the other device's counters were not read every scrape")
	}
}

// MLNX_OFED 3.x answers a PMA counter of a device without process_mad with
// ENOSYS: the same "not supported" as the text, while garbage and EIO stay
// read errors.
func TestRDMACounterENOSYSIsNotSupportedGarbageIsAnError(t *testing.T) {
	root := writeNode(t, sysfixture.HealthyCX7(1))
	setFile(t, filepath.Join(root, "sys/class/infiniband/mlx5_0/ports/1/counters/link_downed"), "N/A\n")
	ffs := newFaultFS()
	ffs.setErr("mlx5_0/ports/1/counters/port_xmit_data", syscall.ENOSYS)
	ffs.setErr("mlx5_0/ports/1/counters/symbol_error", syscall.EIO)
	cfg := testConfig(root, "rdma")
	cfg.ro.FS = ffs
	e, _ := newTestExporter(t, cfg)
	scrape(t, e)
	out := scrape(t, e)
	if v := value(t, mustSeries(t, out, "roce_scrape_read_errors_total", `collector="rdma"`)); v != "4" {
		t.Errorf("read errors = %s, want 4 (garbage and EIO, twice each; ENOSYS is not an error)", v)
	}
	for _, m := range []string{"roce_port_xmit_data_bytes_total", "roce_port_link_downed_total", "roce_port_symbol_error_total"} {
		if got := series(out, m); len(got) != 0 {
			t.Errorf("%s exported: %v", m, got)
		}
	}
}

// writeCountersExt gives port p of dev MLNX_OFED's counters_ext/ directory.
func writeCountersExt(t testing.TB, root, dev string, p int, values map[string]string) {
	t.Helper()
	dir := filepath.Join(root, "sys/class/infiniband", dev, "ports", string(rune('0'+p)), "counters_ext")
	for name, v := range values {
		setFile(t, filepath.Join(dir, name), v+"\n")
	}
}

// mlx4 under MLNX_OFED 3.x: counters/port_rcv_data is the 32-bit
// PortCounters field, saturated (or 0, as node_exporter's fixture has it on
// port 2) while counters_ext/port_rcv_data_64 counts on. The 64-bit file
// feeds the same series, in 4-byte words like the 32-bit one.
func TestRDMACountersExtPreferredOver32Bit(t *testing.T) {
	root := writeNode(t, sysfixture.HealthyCX7(1))
	counters := filepath.Join(root, "sys/class/infiniband/mlx5_0/ports/1/counters")
	setFile(t, filepath.Join(counters, "port_rcv_data"), "0\n")
	setFile(t, filepath.Join(counters, "port_xmit_data"), "4294967295\n")
	os.Remove(filepath.Join(counters, "unicast_rcv_packets"))
	writeCountersExt(t, root, "mlx5_0", 1, map[string]string{
		"port_rcv_data_64": "4631917", "port_xmit_data_64": "9133733440", "port_rcv_packets_64": "6825908347",
		"port_xmit_packets_64": "6235865", "port_unicast_rcv_packets": "61148", "port_unicast_xmit_packets": "61239",
		"port_multicast_rcv_packets": "93", "port_multicast_xmit_packets": "16",
	})
	e, _ := newTestExporter(t, testConfig(root, "rdma"))
	out := scrape(t, e)
	wantValues(t, out, map[string]string{
		"roce_port_rcv_data_bytes_total":         "1.8527668e+07", // 4631917 words
		"roce_port_xmit_data_bytes_total":        "3.653493376e+10",
		"roce_port_rcv_packets_total":            "6.825908347e+09",
		"roce_port_unicast_rcv_packets_total":    "61148",
		"roce_port_multicast_xmit_packets_total": "16",
	}, `device="mlx5_0"`)
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "_64") {
			t.Errorf("counters_ext name leaked into a metric: %s", line)
		}
	}
	if v := value(t, mustSeries(t, out, "roce_scrape_read_errors_total", `collector="rdma"`)); v != "0" {
		t.Errorf("read errors = %s", v)
	}
}

// A device whose PMA lacks PortCountersExtended answers counters_ext/ with
// "N/A (no PMA)": the 32-bit counters/ value stands in, without a read
// error; garbage in counters_ext/ is an error and no value (never the other
// file's, which would jump the series between two counters).
func TestRDMACountersExtFallsBackOnlyWhenNotSupported(t *testing.T) {
	root := writeNode(t, sysfixture.HealthyCX7(1))
	counters := filepath.Join(root, "sys/class/infiniband/mlx5_0/ports/1/counters")
	setFile(t, filepath.Join(counters, "port_rcv_data"), "1000\n")
	setFile(t, filepath.Join(counters, "port_xmit_data"), "2000\n")
	writeCountersExt(t, root, "mlx5_0", 1, map[string]string{"port_rcv_data_64": "N/A (no PMA)", "port_xmit_data_64": "bad"})
	e, _ := newTestExporter(t, testConfig(root, "rdma"))
	out := scrape(t, e)
	if v := value(t, mustSeries(t, out, "roce_port_rcv_data_bytes_total", `device="mlx5_0"`)); v != "4000" {
		t.Errorf("rcv data = %s, want the 32-bit 1000 words", v)
	}
	if got := series(out, "roce_port_xmit_data_bytes_total", `device="mlx5_0"`); len(got) != 0 {
		t.Errorf("garbage 64-bit file replaced by the 32-bit one: %v", got)
	}
	if v := value(t, mustSeries(t, out, "roce_scrape_read_errors_total", `collector="rdma"`)); v != "1" {
		t.Errorf("read errors = %s, want 1 (the garbage)", v)
	}
}

// state/phys_state without the numeric prefix, as yuuki/rdma_exporter's
// fixtures spell them: parsed by name, so roce_port_up stays.
func TestRDMAPortStateWithoutNumber(t *testing.T) {
	root := writeNode(t, sysfixture.HealthyCX7(2))
	port := func(dev, file string) string {
		return filepath.Join(root, "sys/class/infiniband", dev, "ports/1", file)
	}
	setFile(t, port("mlx5_0", "state"), "DOWN\n")
	setFile(t, port("mlx5_0", "phys_state"), "Disabled\n")
	setFile(t, port("mlx5_1", "state"), "ACTIVE\n")
	setFile(t, port("mlx5_1", "phys_state"), "5: LINK_UP\n")
	e, _ := newTestExporter(t, testConfig(root, "rdma"))
	out := scrape(t, e)
	for _, tc := range []struct{ dev, up, state, phys string }{{"mlx5_0", "0", "1", "3"}, {"mlx5_1", "1", "4", "5"}} {
		dev := `device="` + tc.dev + `"`
		if v := value(t, mustSeries(t, out, "roce_port_up", dev)); v != tc.up {
			t.Errorf("%s port_up = %s, want %s", tc.dev, v, tc.up)
		}
		if v := value(t, mustSeries(t, out, "roce_port_state_id", dev)); v != tc.state {
			t.Errorf("%s state = %s, want %s", tc.dev, v, tc.state)
		}
		if v := value(t, mustSeries(t, out, "roce_port_physical_state_id", dev)); v != tc.phys {
			t.Errorf("%s phys_state = %s, want %s", tc.dev, v, tc.phys)
		}
	}
	if v := value(t, mustSeries(t, out, "roce_scrape_read_errors_total", `collector="rdma"`)); v != "0" {
		t.Errorf("read errors = %s", v)
	}
}

// /sys/class/net/bonding_masters is a regular file the bonding module
// creates; like anything else there that is not a directory (or a link to
// one) it is not an interface.
func TestNetdevIncludeSkipsNonDirectories(t *testing.T) {
	root := writeNode(t, sysfixture.HealthyCX7(1))
	setFile(t, filepath.Join(root, "sys/class/net/bonding_masters"), "bond0\n")
	if err := os.Symlink("nowhere", filepath.Join(root, "sys/class/net/dangling")); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(root, "netdev")
	cfg.ro.NetdevInclude = mustRegexp(t, ".*")
	e, _ := newTestExporter(t, cfg)
	out := scrape(t, e)
	for _, name := range []string{"bonding_masters", "dangling"} {
		if got := series(out, "roce_interface_info", `interface="`+name+`"`); len(got) != 0 {
			t.Errorf("%s reported as an interface: %v", name, got)
		}
	}
	mustSeries(t, out, "roce_interface_info", `interface="lo"`)
	mustSeries(t, out, "roce_interface_info", `interface="ens1f0np0"`)
	if v := value(t, mustSeries(t, out, "roce_scrape_read_errors_total", `collector="netdev"`)); v != "0" {
		t.Errorf("netdev read errors = %s", v)
	}
}

// allSources is every collector the scenario tests read through.
var allSources = []string{"rdma", "netdev", "pcie", "ethtool", "dcb"}

// scenarioExporter reads a scenario written afresh, with its captures, as
// scenarioArgs does for the binary on the committed copy.
func scenarioExporter(t *testing.T, sc sysfixture.Scenario) *Exporter {
	t.Helper()
	root := filepath.Join(t.TempDir(), "node")
	if err := sc.Write(root); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(root, allSources...)
	if sc.Replay != nil {
		cfg.ro.ReplayDir = filepath.Join(root, "replay")
	}
	e, _ := newTestExporter(t, cfg)
	return e
}

func noReadErrors(t *testing.T, out string) {
	t.Helper()
	for _, c := range allSources {
		if v := value(t, mustSeries(t, out, "roce_scrape_read_errors_total", `collector="`+c+`"`)); v != "0" {
			t.Errorf("%s read errors = %s", c, v)
		}
	}
}

func TestScenarioMLX4CountersExt(t *testing.T) {
	e := scenarioExporter(t, sysfixture.Scenario{Node: sysfixture.MLX4CountersExt()})
	out := scrape(t, e)
	noReadErrors(t, out)
	for _, tc := range []struct{ port, rcv, iface string }{
		{"1", "5.152493827156e+13", "ib0"}, // 12881234567890 words; counters/ is stuck at 2^32-1
		{"2", "1.8527668e+07", "ib1"},      // 4631917 words; counters/ reads 0
	} {
		if v := value(t, mustSeries(t, out, "roce_port_rcv_data_bytes_total", `port="`+tc.port+`"`)); v != tc.rcv {
			t.Errorf("port %s rcv data = %s, want %s", tc.port, v, tc.rcv)
		}
		mustSeries(t, out, "roce_port_info", `port="`+tc.port+`"`, `interface="`+tc.iface+`"`, `link_layer="InfiniBand"`)
	}
	mustSeries(t, out, "roce_port_unicast_xmit_packets_total", `port="2"`)
}

// iWARP on a 4.x kernel: 17 "N/A (no PMA)" counters per scrape used to be
// 17 read errors per scrape, and RoCECollectorReadErrors firing forever.
func TestScenarioIWARPNoPMA(t *testing.T) {
	e := scenarioExporter(t, sysfixture.Scenario{Node: sysfixture.IWARPNoPMA()})
	var out string
	for i := 0; i < 3; i++ {
		out = scrape(t, e)
	}
	noReadErrors(t, out)
	if got := series(out, "roce_port_rcv_data_bytes_total"); len(got) != 0 {
		t.Errorf("PMA counters of a device without a PMA: %v", got)
	}
	mustSeries(t, out, "roce_hw_iw_in_rdma_writes_total", `device="i40iw0"`)
	if got := series(out, "roce_port_active_mtu_bytes"); len(got) != 0 {
		t.Errorf("a RoCE path MTU for an iWARP port: %v", got)
	}
	d := snapshot(e).Device("i40iw0")
	if d == nil || !d.IWARP() || d.NodeTypeName != "RNIC" {
		t.Errorf("i40iw0 = %+v, want node type 4 RNIC", d)
	}
}

func TestScenarioSRIOVVF(t *testing.T) {
	e := scenarioExporter(t, sysfixture.SRIOVVFScenario())
	out := scrape(t, e)
	noReadErrors(t, out)
	snap := snapshot(e)
	if vf := snap.PCI["0000:18:00.2"]; vf == nil || vf.PhysFn != "0000:18:00.0" || vf.CurrentWidth != 0 {
		t.Errorf("VF function = %+v, want physfn 0000:18:00.0 and no link width of its own", vf)
	}
	if pf := snap.PCI["0000:18:00.0"]; pf == nil || pf.PhysFn != "" {
		t.Errorf("PF function = %+v", pf)
	}
	if snap.DCB["ens1f0np0"] == nil || snap.DCB["ens1f0v0"] != nil {
		t.Errorf("DCB on %v; the PF has it, the VF has none", snap.InterfaceNames())
	}
	mustSeries(t, out, "roce_pfc_enabled", `interface="ens1f0np0"`, `priority="3"`)
	if got := series(out, "roce_pfc_enabled", `interface="ens1f0v0"`); len(got) != 0 {
		t.Errorf("PFC state for a VF: %v", got)
	}
	mustSeries(t, out, "roce_device_info", `device="mlx5_1"`, `hca_type="MT4126"`)
	if got := series(out, "roce_hw_np_cnp_sent_total", `device="mlx5_1"`); len(got) != 0 {
		t.Errorf("congestion counters on a VF: %v", got)
	}
}

func TestScenarioEFA(t *testing.T) {
	e := scenarioExporter(t, sysfixture.Scenario{Node: sysfixture.EFA()})
	out := scrape(t, e)
	noReadErrors(t, out)
	mustSeries(t, out, "roce_port_info", `device="efa_0"`, `link_layer="Unknown"`, `interface=""`)
	if v := value(t, mustSeries(t, out, "roce_hw_rx_bytes_total", `device="efa_0"`)); v != "9.0112233445566e+13" {
		t.Errorf("EFA rx_bytes = %s (bytes, not 4-byte words)", v)
	}
	mustSeries(t, out, "roce_hw_rdma_read_bytes_total", `device="efa_0"`)
	if got := series(out, "roce_port_rcv_data_bytes_total"); len(got) != 0 {
		t.Errorf("EFA has no counters/: %v", got)
	}
	if v := value(t, mustSeries(t, out, "roce_port_up", `device="efa_0"`)); v != "1" {
		t.Errorf("port_up = %s", v)
	}
	if d := snapshot(e).Device("efa_0"); d == nil || d.NodeType != node.NodeTypeUnspecified {
		t.Errorf("efa_0 = %+v, want node type 7 unspecified", d)
	}
}

// RoCE LAG: the port runs over bond0, whose GIDs it carries; the PCI
// function's own netdev is one of bond0's slaves, and PFC and pause live on
// the slaves, which are read as interfaces of the same port.
func TestScenarioRoCELAG(t *testing.T) {
	root := writeNode(t, sysfixture.RoCELAG())
	cfg := testConfig(root, allSources...)
	cfg.ro.NetdevInclude = mustRegexp(t, ".*")
	e, _ := newTestExporter(t, cfg)
	out := scrape(t, e)
	noReadErrors(t, out)
	mustSeries(t, out, "roce_port_info", `device="mlx5_bond_0"`, `interface="bond0"`)
	for _, slave := range []string{"ens1f0np0", "ens1f1np1"} {
		mustSeries(t, out, "roce_interface_info", `interface="`+slave+`"`, `device="mlx5_bond_0"`, `port="1"`, `driver="mlx5_core"`)
	}
	mustSeries(t, out, "roce_interface_info", `interface="bond0"`, `device="mlx5_bond_0"`)
	if got := series(out, "roce_interface_info", `interface="bonding_masters"`); len(got) != 0 {
		t.Errorf("bonding_masters reported: %v", got)
	}
	p := snapshot(e).Port("mlx5_bond_0", 1)
	if p == nil || p.Interface != "bond0" || strings.Join(p.BondSlaves, " ") != "ens1f0np0 ens1f1np1" {
		t.Errorf("port = %+v, want bond0 over ens1f0np0 ens1f1np1", p)
	}
}
