package health

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
	"github.com/roce-exporter/roce_exporter/node"
)

// Issue 26's captured nodes through the reader, each fault on the rails it
// was built on and the node (or its untouched rails) passing the same check
// when it is set up right: the doctor judges what the real formats carry
// (procfs, `ip -j`, limits.conf, mlnx_qos, lldpcli json0), not only what
// the unit tests put in a snapshot.

// verdict is a finding a fixture test expects: its status and a part of
// its message.
type verdict struct {
	id, subject string
	status      Status
	msg         string
}

func expectVerdicts(t *testing.T, fs []Finding, want []verdict) {
	t.Helper()
	checkInvariants(t, fs)
	for _, w := range want {
		f, ok := find(fs, w.id, w.subject)
		if !ok {
			t.Errorf("%s %s: no finding", w.id, w.subject)
			continue
		}
		if f.Status != w.status || !strings.Contains(f.Message, w.msg) {
			t.Errorf("%s %s: %s %q, want %s with %q", w.id, w.subject, f.Status, f.Message, w.status, w.msg)
		}
		if (w.status == StatusFail || w.status == StatusWarn) && f.Fix == "" {
			t.Errorf("%s %s: %s without a fix", w.id, w.subject, f.Status)
		}
	}
}

// scenarioSnapshot writes a scenario as genfixtures does and reads it.
func scenarioSnapshot(t *testing.T, sc sysfixture.Scenario) *node.Snapshot {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "node") // Write makes it, refusing one that exists
	if err := sc.Write(dir); err != nil {
		t.Fatal(err)
	}
	return fixtureReaderAt(t, dir).Snapshot()
}

// railsOneSubnetFixed is mlx5-rails-one-subnet-default-sysctls with the
// doctor's fixes applied on both nodes: arp_ignore 1, arp_announce 2 and
// loose rp_filter on conf.all, a table and a rule per rail, and so node02's
// rails learnt each on its own rail with its own MAC.
func railsOneSubnetFixed() sysfixture.Scenario {
	sc := sysfixture.RailsOneSubnetDefaultSysctls()
	h := sc.Host
	h.Sysctls["all"] = [3]int{1, 2, 2}
	h.Neighbors = h.Neighbors[:1] // the management gateway's
	for i, d := range sc.Node.Devices {
		a, table := fmt.Sprintf("192.168.100.%d", 11+i), fmt.Sprint(101+i)
		h.Rules = append(h.Rules, sysfixture.IPRule{Priority: 1001 + i, Src: a, Table: table})
		h.Routes = append(h.Routes, sysfixture.IPRoute{Dst: "192.168.100.0/24", Dev: d.Netdev, Table: table, Scope: "link", PrefSrc: a, Flags: []string{}})
		h.Neighbors = append(h.Neighbors, sysfixture.IPNeigh{Dst: fmt.Sprintf("192.168.100.%d", 21+i), Dev: d.Netdev,
			LLAddr: fmt.Sprintf("b8:3f:d2:a1:3b:%02x", 0x3c+i), State: []string{"REACHABLE"}})
	}
	slices.SortFunc(h.Rules, func(a, b sysfixture.IPRule) int { return cmp.Compare(a.Priority, b.Priority) })
	return sc
}

func TestFixtureRailsOneSubnet(t *testing.T) {
	plan := fixturePlanFile(t, "plan-node01-one-subnet.yaml")
	t.Run("default sysctls", func(t *testing.T) {
		fs := Run(fixtureReader(t, "mlx5-rails-one-subnet-default-sysctls").Snapshot(), plan, "node01")
		want := []verdict{
			{"neighbor_entries_on_rail", "ens1f0np0", StatusFail, "node02's rail 0 address 192.168.100.21 resolved to b8:3f:d2:a1:3b:3c, a MAC node02 also answers for at 192.168.100.22"},
			{"neighbor_entries_on_rail", "ens2f0np0", StatusWarn, "resolved only on ens1f0np0, not on ens2f0np0"},
			{"per_rail_source_routing", "ens1f0np0", StatusWarn, "only because table main lists this NIC's route for the subnet first"},
		}
		for i := 0; i < 8; i++ {
			nd := sysfixture.Netdev(i)
			want = append(want, verdict{"arp_flux_sysctls", nd, StatusFail, "arp_ignore 0"})
			if i > 0 {
				want = append(want, verdict{"per_rail_source_routing", nd, StatusFail, "leaves by ens1f0np0"})
			}
		}
		expectVerdicts(t, fs, want)
	})
	t.Run("fixed", func(t *testing.T) {
		fs := Run(scenarioSnapshot(t, railsOneSubnetFixed()), plan, "node01")
		var want []verdict
		for i := 0; i < 8; i++ {
			nd := sysfixture.Netdev(i)
			want = append(want,
				verdict{"arp_flux_sysctls", nd, StatusOK, ""},
				verdict{"per_rail_source_routing", nd, StatusOK, ""},
				verdict{"neighbor_entries_on_rail", nd, StatusOK, "each with its own MAC"})
		}
		expectVerdicts(t, fs, want)
	})
}

func TestFixtureMemlock(t *testing.T) {
	plan := fixturePlan(t)
	t.Run("fresh install", func(t *testing.T) {
		fs := Run(fixtureReader(t, "mlx5-memlock-default-8mib").Snapshot(), plan, "node01")
		expectVerdicts(t, fs, []verdict{{"memlock_for_rdma", SubjectNode, StatusWarn, "login sessions (ssh, mpirun's remote ranks) get the 8 MiB default"}})
	})
	t.Run("raised in limits.d and systemd", func(t *testing.T) {
		sc := sysfixture.MemlockDefault8MiB()
		sc.Host.SelfMemlock, sc.Host.CapEff = "unlimited", "000001ffffffffff"
		sc.Host.Etc["security/limits.d/rdma.conf"] = "* soft memlock unlimited\n* hard memlock unlimited\n"
		sc.Host.Etc["systemd/system.conf.d/memlock.conf"] = "[Manager]\nDefaultLimitMEMLOCK=infinity\n"
		fs := Run(scenarioSnapshot(t, sc), plan, "node01")
		expectVerdicts(t, fs, []verdict{{"memlock_for_rdma", SubjectNode, StatusOK, ""}})
	})
}

func TestFixturePFCBuffers(t *testing.T) {
	fs := Run(fixtureReader(t, "mlx5-pfc-buffers-misconfigured").Snapshot(), fixturePlan(t), "node01")
	want := []verdict{
		{"pfc_buffer_no_lossy_priority", "ens3f0np0", StatusFail, "receive buffer 0 holds PFC priority 3 and lossy priority 0, 1, 2, 4, 5, 6, 7"},
		{"pfc_headroom_sufficient", "ens6f0np0", StatusFail, "130,944 bytes, too small"},
		{"ets_share_for_roce", "ens8f0np0", StatusFail, "ETS share of 0%"},
	}
	// Every check passes on the rails set up as the production capture.
	for _, id := range []string{"pfc_buffer_no_lossy_priority", "pfc_headroom_sufficient", "ets_share_for_roce"} {
		want = append(want, verdict{id, "ens1f0np0", StatusOK, ""})
	}
	want = append(want,
		verdict{"pfc_buffer_no_lossy_priority", "ens6f0np0", StatusOK, ""},
		verdict{"pfc_headroom_sufficient", "ens3f0np0", StatusOK, ""},
		verdict{"ets_share_for_roce", "ens3f0np0", StatusOK, ""})
	expectVerdicts(t, fs, want)
}

func TestFixtureSwitchPort(t *testing.T) {
	snap := fixtureReader(t, "mlx5-switch-port-mtu-1500").Snapshot()
	vlan := func(v int) *config.Plan {
		p := fixturePlan(t)
		p.Expectations.VLAN = &v
		return p
	}
	t.Run("plan VLAN 100, as the leaves", func(t *testing.T) {
		expectVerdicts(t, Run(snap, vlan(100), "node01"), []verdict{
			{"switch_port_mtu", "ens5f0np0", StatusFail, "takes frames of at most 1518 bytes"},
			{"switch_port_mtu", "ens1f0np0", StatusOK, ""},
			{"switch_port_speed", "ens7f0np0", StatusWarn, "runs 100GbaseCR4 (100 Gb/s"},
			{"switch_port_speed", "ens1f0np0", StatusOK, ""},
			{"switch_port_vlan", "ens1f0np0", StatusOK, ""},
		})
	})
	t.Run("plan VLAN 200", func(t *testing.T) {
		expectVerdicts(t, Run(snap, vlan(200), "node01"), []verdict{{"switch_port_vlan", "ens1f0np0", StatusFail, "VLAN"}})
	})
}

func TestFixtureNICModelOnRail(t *testing.T) {
	plan := fixturePlan(t)
	expectVerdicts(t, Run(fixtureReader(t, "mlx5-cx6dx-on-rail-3").Snapshot(), plan, "node01"), []verdict{
		{"nic_model_same_on_rails", "mlx5_3", StatusWarn, "rail 3 is MT4125 MT_0000000359"},
		{"nic_model_same_on_rails", "mlx5_0", StatusOK, ""},
	})
	expectVerdicts(t, Run(fixtureReader(t, "mlx5-8x400g-healthy").Snapshot(), plan, "node01"), []verdict{
		{"nic_model_same_on_rails", "mlx5_3", StatusOK, ""},
	})
}
