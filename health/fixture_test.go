package health

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/reader"
)

// fixtureNode reads one of the recorded nodes the way the exporter does.
type fixtureNode struct {
	r    *reader.Reader
	last *node.Snapshot
}

func fixtureReader(t *testing.T, scenario string) *fixtureNode {
	t.Helper()
	return fixtureReaderAt(t, filepath.Join("..", "collector", "testdata", scenario))
}

// fixtureReaderAt reads a node laid out as sysfixture writes one: base/sys,
// dev, replay, and proc and rootfs when it has them.
func fixtureReaderAt(t *testing.T, base string) *fixtureNode {
	t.Helper()
	o := reader.Options{
		SysPath:   filepath.Join(base, "sys"),
		DevPath:   filepath.Join(base, "dev"),
		Sources:   reader.SourceNames(),
		Timeout:   5 * time.Second,
		ReplayDir: filepath.Join(base, "replay"),
	}
	// As the exporter's tests run the fixtures (cmd/roce_exporter scenarioArgs).
	if st, err := os.Stat(filepath.Join(base, "proc")); err == nil && st.IsDir() {
		o.ProcPath = filepath.Join(base, "proc")
	}
	if st, err := os.Stat(filepath.Join(base, "rootfs")); err == nil && st.IsDir() {
		o.RootFS = filepath.Join(base, "rootfs")
	}
	r, err := reader.New(o, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("reader on %s: %v", base, err)
	}
	t.Cleanup(func() { r.Close() })
	return &fixtureNode{r: r}
}

// Snapshot reads the node; from the second read on, the snapshot has the
// one before as Previous, as the exporter's have.
func (f *fixtureNode) Snapshot() *node.Snapshot {
	s := f.r.Read().Snapshot
	if f.last != nil {
		f.last.Previous = nil
		s.Previous = f.last
	}
	f.last = s
	return s
}

func fixturePlan(t *testing.T) *config.Plan {
	t.Helper()
	return fixturePlanFile(t, "plan-node01.yaml")
}

func fixturePlanFile(t *testing.T, name string) *config.Plan {
	t.Helper()
	p, err := config.Load(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if len(p.Warnings) > 0 {
		t.Errorf("fixture plan has warnings: %v", p.Warnings)
	}
	return p
}

// cloneSnapshot deep-copies a snapshot through JSON, which reaches every exported
// field; Previous is not copied (it is tagged json:"-").
func cloneSnapshot(t *testing.T, s *node.Snapshot) *node.Snapshot {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var c node.Snapshot
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func TestFixtureHealthy(t *testing.T) {
	exp := fixtureReader(t, "mlx5-8x400g-healthy")
	plan := fixturePlan(t)
	first := exp.Snapshot()
	second := exp.Snapshot()
	if second.Previous == nil {
		t.Fatal("second snapshot has no Previous")
	}
	for name, snap := range map[string]*node.Snapshot{"one sample": first, "two samples": second} {
		t.Run(name, func(t *testing.T) {
			fs := Run(snap, plan, "node01")
			checkInvariants(t, fs)
			for _, f := range fs {
				if f.Status != StatusOK && f.Status != StatusSkipped {
					t.Errorf("healthy node: %s %s is %s: %s", f.ID, f.Subject, f.Status, f.Message)
				}
			}
			// The checks that need nothing but the fixture must actually have run.
			for _, id := range []string{"port_active", "mtu_matches_plan", "roce_v2_gid_present", "pfc_enabled_on_roce_priority", "ecn_enabled", "pcie_bandwidth_sufficient", "firmware_consistent"} {
				for _, subj := range []string{"mlx5_0", "ens1f0np0"} {
					if f, ok := find(fs, id, subj); ok && f.Status != StatusOK {
						t.Errorf("%s %s: %s, want ok: %s", id, subj, f.Status, f.Message)
					}
				}
			}
			nccl, _ := find(fs, "nccl_env", "node")
			want := "NCCL_SOCKET_IFNAME==ens1f0np0,ens2f0np0,ens3f0np0,ens4f0np0,ens5f0np0,ens6f0np0,ens7f0np0,ens8f0np0 " +
				"NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1 NCCL_IB_GID_INDEX=3 NCCL_IB_TC=106 NCCL_IB_FIFO_TC=106"
			if nccl.Message != want {
				t.Errorf("nccl_env = %q\nwant      %q", nccl.Message, want)
			}
		})
	}
	t.Run("two samples: rates ran", func(t *testing.T) {
		fs := Run(second, plan, "node01")
		for _, id := range []string{"no_pfc_storm", "no_link_flaps"} {
			if f, _ := find(fs, id, "ens3f0np0"); f.Status != StatusOK {
				t.Errorf("%s with two samples: %s %s", id, f.Status, f.Message)
			}
		}
	})
}

// Eight Gen5 ConnectX-7 cards in the Gen4 slots of an Ice Lake or Milan
// server, each link at 16 GT/s x16 for a 200G port: nothing to fix, so
// nothing but passes and skips, and the PCIe findings say the slot decides.
func TestFixtureGen5NICsInGen4Slots(t *testing.T) {
	exp := fixtureReader(t, "mlx5-gen5-nics-in-gen4-slots")
	plan := fixturePlan(t)
	plan.Expectations.LinkRateGbps = 200
	exp.Snapshot()
	fs := Run(exp.Snapshot(), plan, "node01")
	checkInvariants(t, fs)
	for _, f := range fs {
		if f.Status != StatusOK && f.Status != StatusSkipped {
			t.Errorf("%s %s is %s: %s", f.ID, f.Subject, f.Status, f.Message)
		}
	}
	for i := range 8 {
		dev := fmt.Sprintf("mlx5_%d", i)
		if f, _ := find(fs, "pcie_link_not_degraded", dev); f.Status != StatusOK || !strings.Contains(f.Message, "16 GT/s x16, the most its slot allows: the card supports 32 GT/s x16, the port above it, ") {
			t.Errorf("%s: %+v", dev, f)
		}
		if f, _ := find(fs, "pcie_bandwidth_sufficient", dev); f.Status != StatusOK || !strings.Contains(f.Message, "252 Gb/s usable (16 GT/s x16, the most its slot allows) for 200 Gb/s") {
			t.Errorf("%s: %+v", dev, f)
		}
	}
}

func TestFixtureDegraded(t *testing.T) {
	snap := fixtureReader(t, "mlx5-degraded").Snapshot()
	fs := Run(snap, fixturePlan(t), "node01")
	checkInvariants(t, fs)
	// Every injected fault, named by check and subject, and nothing else.
	want := map[[2]string]Status{
		{"port_active", "mlx5_1"}:                  StatusFail,
		{"pcie_bandwidth_sufficient", "mlx5_2"}:    StatusFail,
		{"pcie_link_not_degraded", "mlx5_2"}:       StatusFail,
		{"pcie_no_aer_errors", "mlx5_2"}:           StatusWarn,
		{"mtu_matches_plan", "ens4f0np0"}:          StatusFail,
		{"roce_mtu_4096_possible", "ens4f0np0"}:    StatusWarn,
		{"mtu_consistent", "ens4f0np0"}:            StatusWarn,
		{"firmware_consistent", "mlx5_4"}:          StatusWarn,
		{"no_uncorrected_phy_errors", "ens6f0np0"}: StatusWarn,
		{"port_counters_readable", "mlx5_6"}:       StatusWarn,
		{"ecn_enabled", "ens7f0np0"}:               StatusFail,
		{"trust_mode_matches_plan", "ens1f0np0"}:   StatusFail,
		// The same fault seen from the chain: PCP trust on untagged RoCE is priority 0.
		{"roce_dscp_maps_to_pfc_priority", "ens1f0np0"}: StatusFail,
		{"pfc_enabled_on_roce_priority", "ens8f0np0"}:   StatusFail,
		{"pfc_only_on_roce_priority", "ens8f0np0"}:      StatusWarn,
		// Its RoCE runs where its PFC is, priority 0, not the plan's 3.
		{"rdma_bytes_on_roce_priority", "ens8f0np0"}: StatusWarn, // since boot only: history
		{"global_pause_off_with_pfc", "ens8f0np0"}:   StatusFail,
		{"nccl_env", "node"}:                         StatusWarn,
		// The down port's optic receives no light; mlx5_3's runs hot with
		// a dim lane.
		{"transceiver_within_thresholds", "ens2f0np0"}: StatusFail,
		{"transceiver_within_thresholds", "ens4f0np0"}: StatusFail,
		{"devlink_health_ok", "mlx5_5"}:                StatusWarn,
	}
	got := map[[2]string]Finding{}
	for _, f := range fs {
		if f.Status == StatusWarn || f.Status == StatusFail {
			got[[2]string{f.ID, f.Subject}] = f
		}
	}
	for key, st := range want {
		f, ok := got[key]
		switch {
		case !ok:
			t.Errorf("fault not reported: %s %s (want %s)", key[0], key[1], st)
		case f.Status != st:
			t.Errorf("%s %s: %s, want %s: %s", key[0], key[1], f.Status, st, f.Message)
		case f.Fix == "":
			t.Errorf("%s %s: no fix", key[0], key[1])
		}
	}
	var extra []string
	for key, f := range got {
		if _, ok := want[key]; !ok {
			extra = append(extra, key[0]+" "+key[1]+" "+string(f.Status)+": "+f.Message)
		}
	}
	sort.Strings(extra)
	for _, e := range extra {
		t.Errorf("unexpected finding: %s", e)
	}

	// The values the operator needs are in the messages.
	for _, c := range []struct{ id, subject, text string }{
		{"port_active", "mlx5_1", "1: DOWN"},
		{"port_active", "mlx5_1", "the driver says: autoneg, no partner detected"},
		{"transceiver_within_thresholds", "ens4f0np0", "lane 3 Rx power -10.40 dBm below the module's low alarm -8.90 dBm"},
		{"transceiver_within_thresholds", "ens4f0np0", "temperature 72.4 °C above the module's high warning 70.0 °C"},
		{"transceiver_within_thresholds", "ens2f0np0", "no light on any of its 4 lanes"},
		{"pcie_link_not_degraded", "mlx5_2", "x8"},
		{"mtu_matches_plan", "ens4f0np0", "MTU 1500"},
		{"firmware_consistent", "mlx5_4", "28.37.1014"},
		{"firmware_consistent", "mlx5_4", "28.39.1002"},
		{"no_uncorrected_phy_errors", "ens6f0np0", "37"},
		{"trust_mode_matches_plan", "ens1f0np0", "pcp"},
		{"pfc_enabled_on_roce_priority", "ens8f0np0", "enabled on: 0"},
	} {
		if f := got[[2]string{c.id, c.subject}]; !strings.Contains(f.Message, c.text) {
			t.Errorf("%s %s: message %q lacks %q", c.id, c.subject, f.Message, c.text)
		}
	}
	for _, c := range []struct{ id, subject, text string }{
		{"mtu_matches_plan", "ens4f0np0", "ip link set dev ens4f0np0 mtu 9000"},
		{"pfc_enabled_on_roce_priority", "ens8f0np0", "mlnx_qos -i ens8f0np0 --pfc 0,0,0,1,0,0,0,0"},
		{"global_pause_off_with_pfc", "ens8f0np0", "ethtool -A ens8f0np0 rx off tx off"},
		{"trust_mode_matches_plan", "ens1f0np0", "mlnx_qos -i ens1f0np0 --trust dscp"},
		{"firmware_consistent", "mlx5_4", "mlxfwmanager"},
		{"pcie_link_not_degraded", "mlx5_2", "reseat"},
	} {
		if f := got[[2]string{c.id, c.subject}]; !strings.Contains(f.Fix, c.text) {
			t.Errorf("%s %s: fix %q lacks %q", c.id, c.subject, f.Fix, c.text)
		}
	}
}

func TestFixtureNoRDMADriver(t *testing.T) {
	snap := fixtureReader(t, "no-rdma-driver").Snapshot()
	fs := Run(snap, fixturePlan(t), "node01")
	checkInvariants(t, fs)
	if len(fs) < 2 {
		t.Fatalf("findings:\n%s", dump(fs))
	}
	if f := fs[0]; f.Status != StatusFail || !strings.Contains(f.Message, "no RDMA driver") || !strings.Contains(f.Fix, "modprobe") {
		t.Errorf("first finding = %+v, want a failure naming the missing RDMA driver", f)
	}
	if f := fs[1]; f.ID != "rdma_driver_loaded" || f.Status != StatusFail || !strings.Contains(f.Message, "mlx5_ib") {
		t.Errorf("second finding = %+v, want rdma_driver_loaded failing on mlx5_ib", f)
	}
	for _, f := range fs[2:] {
		if f.Status != StatusSkipped || f.Message != SkipNoRDMADevice {
			t.Errorf("%s %s: %s %q, want skipped %q", f.ID, f.Subject, f.Status, f.Message, SkipNoRDMADevice)
		}
	}
	if len(fs) != len(Checks()) {
		t.Errorf("%d findings, want one per check (%d)", len(fs), len(Checks()))
	}
}

func TestFixturePFCStorm(t *testing.T) {
	first := fixtureReader(t, "mlx5-pfc-storm").Snapshot()
	plan := fixturePlan(t)

	// One sample: the storm watchdog's error events since boot are all there is.
	fs := Run(first, plan, "node01")
	checkInvariants(t, fs)
	if f, _ := find(fs, "no_pfc_storm", "ens3f0np0"); f.Status != StatusWarn || !strings.Contains(f.Message, "since boot") {
		t.Errorf("one sample: no_pfc_storm ens3f0np0 = %s %q, want warn since boot", f.Status, f.Message)
	}

	// Ten seconds later the port was paused for 9.8 of them: a storm.
	second := cloneSnapshot(t, first)
	second.Previous = first
	second.Time = first.Time.Add(10 * time.Second)
	st := second.Ethtool["ens3f0np0"]
	before, ok := st.Get(node.FamilyPFCPauseDuration, node.DirRX, 3, "")
	if !ok {
		t.Fatal("fixture has no rx priority 3 pause duration on ens3f0np0")
	}
	setEth(st, node.FamilyPFCPauseDuration, node.DirRX, 3, "", before+9_800_000)

	fs = Run(second, plan, "node01")
	checkInvariants(t, fs)
	f, _ := find(fs, "no_pfc_storm", "ens3f0np0")
	if f.Status != StatusFail || !strings.Contains(f.Message, "rx priority 3 paused 98% of the time") || !strings.Contains(f.Fix, "switch is pausing ens3f0np0") {
		t.Errorf("no_pfc_storm ens3f0np0 = %s %q (fix %q), want fail at 98%% rx", f.Status, f.Message, f.Fix)
	}
	for _, other := range []string{"ens1f0np0", "ens2f0np0", "ens4f0np0", "ens8f0np0"} {
		if f, _ := find(fs, "no_pfc_storm", other); f.Status != StatusOK {
			t.Errorf("no_pfc_storm %s = %s %q, want ok", other, f.Status, f.Message)
		}
	}

	// The storm overflows the port's buffer: 0.5 M drops among 2 G packets of
	// priority 3 in the ten seconds fail, where the 1.2 M since boot only warned.
	for _, fam := range []node.Family{node.FamilyPriorityDiscards, node.FamilyPriorityPackets} {
		label := ""
		if fam == node.FamilyPriorityDiscards {
			label = node.DiscardOther
		}
		add := map[node.Family]uint64{node.FamilyPriorityDiscards: 500_000, node.FamilyPriorityPackets: 2_000_000_000}[fam]
		setEth(st, fam, node.DirRX, 3, label, ethVal(st, fam, node.DirRX, 3, label)+add)
	}
	fs = Run(second, plan, "node01")
	if f, _ := find(fs, "no_packet_discards", "ens3f0np0"); f.Status != StatusFail || !strings.Contains(f.Message, "dropped 500000 received packet(s) of RoCE priority 3 in the last 10s") {
		t.Errorf("no_packet_discards ens3f0np0 = %s %q, want fail", f.Status, f.Message)
	}
}

// TestFixtureHistoryInBothModes reads every recorded node twice, as the doctor's
// default run does: nothing changes in between, so what the counters hold is history,
// and the two-sample run must report it just as the one-sample run does.
func TestFixtureHistoryInBothModes(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "collector", "testdata", "*", "sys"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	plan := fixturePlan(t)
	for _, dir := range dirs {
		scenario := filepath.Base(filepath.Dir(dir))
		t.Run(scenario, func(t *testing.T) {
			fx := fixtureReader(t, scenario)
			one := Run(fx.Snapshot(), plan, "node01")
			two := Run(fx.Snapshot(), plan, "node01")
			checkInvariants(t, two)
			for _, f := range one {
				g, ok := find(two, f.ID, f.Subject)
				if !ok || f.Status == StatusSkipped || g.Status == StatusSkipped {
					continue
				}
				if f.Status != g.Status {
					t.Errorf("%s %s: one sample says %s (%s), two samples say %s (%s)", f.ID, f.Subject, f.Status, f.Message, g.Status, g.Message)
				}
			}
		})
	}
}

// TestFixtureHistoryWarns is issue 18's report: the default doctor run said
// "0 failed, 0 warnings" on a node with storm events, drops and errors since boot.
func TestFixtureHistoryWarns(t *testing.T) {
	plan := fixturePlan(t)
	for _, c := range []struct {
		scenario, id, subject string
		text                  []string
	}{
		{"mlx5-pfc-storm", "no_pfc_storm", "ens3f0np0", []string{"3 PFC storm error event(s) since boot"}},
		{"mlx5-pfc-storm", "no_packet_discards", "ens3f0np0", []string{"1203344 received packet(s) of RoCE priority 3 dropped since boot", "none new"}},
		{"mlx5-degraded", "no_uncorrected_phy_errors", "ens6f0np0", []string{"37 uncorrected PHY symbol error(s)", "none new"}},
		{"mlx5-degraded", "pcie_no_aer_errors", "mlx5_2", []string{"1734 correctable since boot", "none new"}},
	} {
		t.Run(c.scenario+"/"+c.id, func(t *testing.T) {
			fx := fixtureReader(t, c.scenario)
			fx.Snapshot()
			fs := Run(fx.Snapshot(), plan, "node01")
			f, _ := find(fs, c.id, c.subject)
			if f.Status != StatusWarn {
				t.Fatalf("%s %s with two samples = %s %q, want warn", c.id, c.subject, f.Status, f.Message)
			}
			for _, text := range c.text {
				if !strings.Contains(f.Message, text) {
					t.Errorf("message %q lacks %q", f.Message, text)
				}
			}
			// Only the faulty port: the other ports' clean counters stay ok.
			for _, g := range fs {
				if g.ID == c.id && g.Subject != c.subject && g.Status != StatusOK {
					t.Errorf("%s %s: %s %q, want ok", g.ID, g.Subject, g.Status, g.Message)
				}
			}
		})
	}
}

func TestFixtureInfiniBand(t *testing.T) {
	snap := fixtureReader(t, "ib-hdr").Snapshot()
	fs := Run(snap, nil, "node01")
	checkInvariants(t, fs)
	for _, dev := range []string{"mlx5_0", "mlx5_1"} {
		if f, _ := find(fs, "port_active", dev); f.Status != StatusOK {
			t.Errorf("port_active %s = %s %q", dev, f.Status, f.Message)
		}
		if f, _ := find(fs, "default_roce_mode_v2", dev); f.Status != StatusSkipped || f.Message != SkipInfiniBand {
			t.Errorf("default_roce_mode_v2 %s = %s %q, want skipped %q", dev, f.Status, f.Message, SkipInfiniBand)
		}
	}
	for _, nd := range []string{"ibp65s0", "ibp129s0"} {
		for _, id := range []string{"roce_v2_gid_present", "roce_mtu_4096_possible", "ecn_enabled", "no_pfc_storm"} {
			if f, _ := find(fs, id, nd); f.Status != StatusSkipped || f.Message != SkipInfiniBand {
				t.Errorf("%s %s = %s %q, want skipped %q", id, nd, f.Status, f.Message, SkipInfiniBand)
			}
		}
	}
	if f, _ := find(fs, "pcie_bandwidth_sufficient", "mlx5_0"); f.Status != StatusOK || !strings.Contains(f.Message, "200 Gb/s") {
		t.Errorf("pcie_bandwidth_sufficient mlx5_0 = %s %q", f.Status, f.Message)
	}
}

func TestFixtureBroadcom(t *testing.T) {
	snap := fixtureReader(t, "bnxt-no-counters").Snapshot()
	fs := Run(snap, nil, "node01")
	checkInvariants(t, fs)
	for _, c := range []struct {
		id, subject string
		want        Status
		text        string
	}{
		{"rdma_driver_loaded", "node", StatusOK, "bnxt_re"},
		{"port_counters_readable", "bnxt_re0", StatusOK, "by design"},
		{"roce_v2_gid_present", "ens2f0np0", StatusOK, "index 3 carries 192.168.100.21"},
		{"pcie_bandwidth_sufficient", "bnxt_re0", StatusOK, "200 Gb/s"},
	} {
		if f, _ := find(fs, c.id, c.subject); f.Status != c.want || !strings.Contains(f.Message, c.text) {
			t.Errorf("%s %s = %s %q, want %s with %q", c.id, c.subject, f.Status, f.Message, c.want, c.text)
		}
	}
}

func TestFindingJSON(t *testing.T) {
	fs := Run(buildSnap(), nil, "node01")
	b, err := json.Marshal(fs)
	if err != nil {
		t.Fatal(err)
	}
	var raw []map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw) == 0 {
		t.Fatal("no findings")
	}
	want := []string{"fix", "id", "message", "status", "subject"}
	for _, m := range raw {
		var keys []string
		for k, v := range m {
			keys = append(keys, k)
			if _, ok := v.(string); !ok {
				t.Errorf("key %s is %T, want a string", k, v)
			}
		}
		sort.Strings(keys)
		if strings.Join(keys, ",") != strings.Join(want, ",") {
			t.Fatalf("finding keys = %v, want %v", keys, want)
		}
	}
	var back []Finding
	// The JSON carries the English only: the Texts stay behind.
	english := fs[0]
	english.MessageText, english.FixText = Text{}, Text{}
	if err := json.Unmarshal(b, &back); err != nil || len(back) != len(fs) || !reflect.DeepEqual(back[0], english) {
		t.Errorf("findings do not round-trip: %v", err)
	}
}

// TestFixtureRealWorldLayouts reads issue 18's real-world layouts as the doctor
// does (no plan: none of them is in the test plan) and checks each verdict the
// layout once got wrong, and that nothing else fails.
func TestFixtureRealWorldLayouts(t *testing.T) {
	// wantFinding is a finding's status and texts its message must hold.
	type wantFinding struct {
		id, subject string
		want        Status
		text        []string
	}
	for _, c := range []struct {
		scenario string
		findings []wantFinding
		// warns are the only findings that may warn.
		warns []string
	}{
		{scenario: "efa", findings: []wantFinding{
			{"roce_v2_gid_present", "efa_0", StatusSkipped, []string{"efa_0 is not a RoCE port (EFA", "link layer Unknown", "node type 7: unspecified", "does not apply"}},
			{"ecn_enabled", "efa_0", StatusSkipped, []string{"efa_0 is not a RoCE port (EFA"}},
			{"roce_mtu_4096_possible", "efa_0", StatusSkipped, []string{"efa_0 is not a RoCE port (EFA"}},
			{"nccl_env", "node", StatusSkipped, []string{"aws-ofi-nccl"}},
		}},
		{scenario: "iwarp-no-pma", findings: []wantFinding{
			{"roce_v2_gid_present", "eno1", StatusSkipped, []string{"i40iw0 is not a RoCE port (iWARP", "node type 4: RNIC", "does not apply"}},
			{"default_roce_mode_v2", "i40iw0", StatusSkipped, []string{"i40iw0 is not a RoCE port (iWARP"}},
			{"rdma_driver_loaded", "node", StatusOK, []string{"loaded: i40e, i40iw, ib_uverbs"}},
			{"port_rate_matches_netdev", "i40iw0", StatusOK, []string{"10 Gb/s"}},
			{"nccl_env", "node", StatusSkipped, []string{"i40iw0 is iWARP"}},
		}},
		{scenario: "mlx5-sriov-vf", findings: []wantFinding{
			{"pcie_bandwidth_sufficient", "mlx5_0", StatusOK, []string{"504.1 Gb/s usable (32 GT/s x16) for 400 Gb/s of port rate"}},
			{"pcie_bandwidth_sufficient", "mlx5_1", StatusSkipped, []string{"SR-IOV virtual function of 0000:18:00.0", "judged on mlx5_0"}},
			{"pcie_link_not_degraded", "mlx5_1", StatusSkipped, []string{"SR-IOV virtual function of 0000:18:00.0"}},
		}},
		{scenario: "mlx5-roce-lag", findings: []wantFinding{
			{"port_rate_matches_netdev", "mlx5_bond_0", StatusOK, []string{"rate 100 Gb/s matches", "ens1f0np0 at 100000 Mb/s", "bond0, their sum, at 200000 Mb/s"}},
		}},
		{scenario: "mlx4-ib-counters-ext", findings: []wantFinding{
			{"pcie_bandwidth_sufficient", "mlx4_0", StatusWarn, []string{"63 Gb/s usable (8 GT/s x8) for 80 Gb/s", "both ports cannot run at line rate at once", "design limit"}},
			{"port_counters_readable", "mlx4_0/1", StatusOK, []string{"counters/ values read", "no hw_counters/"}},
			{"port_counters_readable", "mlx4_0/2", StatusOK, []string{"counters/ values read", "no hw_counters/"}},
		}, warns: []string{"pcie_bandwidth_sufficient mlx4_0",
			// Its IPoIB addresses are not in a copied tree.
			"nccl_env node"}},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			fx := fixtureReader(t, c.scenario)
			for _, snap := range []*node.Snapshot{fx.Snapshot(), fx.Snapshot()} {
				fs := Run(snap, nil, "node01")
				checkInvariants(t, fs)
				for _, w := range c.findings {
					f, ok := find(fs, w.id, w.subject)
					if !ok || f.Status != w.want {
						t.Errorf("%s %s = %s %q, want %s", w.id, w.subject, f.Status, f.Message, w.want)
						continue
					}
					for _, text := range w.text {
						if !strings.Contains(f.Message, text) {
							t.Errorf("%s %s: message %q lacks %q", w.id, w.subject, f.Message, text)
						}
					}
				}
				for _, f := range fs {
					if f.Status == StatusFail || f.Status == StatusWarn && !slices.Contains(c.warns, f.ID+" "+f.Subject) {
						t.Errorf("unexpected %s %s %s: %s", f.Status, f.ID, f.Subject, f.Message)
					}
				}
			}
		})
	}
}
