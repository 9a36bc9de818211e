package health

import (
	"maps"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/node"
)

// defaultDCQCN is a ConnectX's DCQCN as MLNX_OFED shows it out of the box.
func defaultDCQCN() *node.DCQCNParams {
	return &node.DCQCNParams{Source: node.DCQCNSourceSysfs, Values: maps.Clone(node.DCQCNDefaults)}
}

func TestDCQCNParamsDefaultPasses(t *testing.T) {
	fs := Run(buildSnap(), testPlan(t), "node01")
	f, ok := find(fs, "dcqcn_parameters_default", "ens1f0np0")
	if !ok || f.Status != StatusOK || !strings.Contains(f.Message, "19 of 19 parameters read from MLNX_OFED's ecn/ files") {
		t.Errorf("defaults: %+v\n%s", f, dump(fs))
	}
}

// A drifted set warns with each value beside its default and a fix that
// survives a reboot (mlxconfig, drained first) and one that acts at once where
// it was read; a node whose plan marks CNPs with another DSCP is judged against
// the plan.
func TestDCQCNParamsDrifted(t *testing.T) {
	s := buildSnap()
	p := s.DCB["ens2f0np0"].DCQCN
	p.Values["rpg_ai_rate"], p.Values["min_time_between_cnps"] = 10, 0
	s.DCB["ens3f0np0"].DCQCN = &node.DCQCNParams{Source: node.DCQCNSourceDebugfs, Values: map[string]uint64{"rpg_gd": 7, "rpg_time_reset": 300}}
	fs := Run(s, testPlan(t), "node01")
	f, _ := find(fs, "dcqcn_parameters_default", "ens2f0np0")
	for _, want := range []string{"rpg_ai_rate 10 (default 5)", "min_time_between_cnps 0 (default 4)"} {
		if f.Status != StatusWarn || !strings.Contains(f.Message, want) {
			t.Errorf("drifted: %+v lacks %q", f, want)
		}
	}
	for _, want := range []string{"drain the node first", "mlxconfig -d 0000:28:00.0 -y set RPG_AI_RATE_P1=5 MIN_TIME_BETWEEN_CNPS_P1=4",
		"echo 5 > /sys/class/net/ens2f0np0/ecn/roce_rp/rpg_ai_rate", "echo 4 > /sys/class/net/ens2f0np0/ecn/roce_np/min_time_between_cnps"} {
		if !strings.Contains(f.Fix, want) {
			t.Errorf("fix lacks %q:\n%s", want, f.Fix)
		}
	}
	f, _ = find(fs, "dcqcn_parameters_default", "ens3f0np0")
	if f.Status != StatusWarn || !strings.Contains(f.Message, "rpg_gd 7 (default 11); 2 of 19 parameters read from debugfs cc_params") ||
		!strings.Contains(f.Fix, "echo 11 > /sys/kernel/debug/mlx5/0000:38:00.0/cc_params/rp_gd") {
		t.Errorf("debugfs: %+v", f)
	}
	if f, _ := find(fs, "dcqcn_parameters_default", "ens1f0np0"); f.Status != StatusOK {
		t.Errorf("the untouched port: %+v", f)
	}

	// cnp_dscp 46 is the plan's: no warning; the default 48 then is one.
	plan := testPlan(t)
	plan.Expectations.CNPDSCP = intp(46)
	s = buildSnap()
	s.DCB["ens1f0np0"].DCQCN.Values["cnp_dscp"] = 46
	fs = Run(s, plan, "node01")
	if f, _ := find(fs, "dcqcn_parameters_default", "ens1f0np0"); f.Status != StatusOK {
		t.Errorf("cnp_dscp as planned: %+v", f)
	}
	if f, _ := find(fs, "dcqcn_parameters_default", "ens2f0np0"); f.Status != StatusWarn || !strings.Contains(f.Message, "cnp_dscp 48 (default 46)") {
		t.Errorf("cnp_dscp off the plan: %+v", f)
	}
}

// Unknown is not default: a port that shows no parameters is skipped, saying
// where they would be.
func TestDCQCNParamsUnknownSkips(t *testing.T) {
	s := buildSnap()
	s.DCB["ens1f0np0"].DCQCN = nil
	fs := Run(s, testPlan(t), "node01")
	f, _ := find(fs, "dcqcn_parameters_default", "ens1f0np0")
	if f.Status != StatusSkipped || !strings.Contains(f.Message, "/sys/kernel/debug/mlx5/0000:18:00.0/cc_params/") {
		t.Errorf("unknown: %+v", f)
	}
}

// The fixtures: the healthy node's MLNX_OFED files are the defaults, the
// drift scenario's rails 4-7 are not.
func TestDCQCNParamsFixtures(t *testing.T) {
	fs := Run(fixtureReader(t, "mlx5-8x400g-healthy").Snapshot(), fixturePlan(t), "node01")
	for _, f := range fs {
		if f.ID == "dcqcn_parameters_default" && f.Status != StatusOK {
			t.Errorf("healthy fixture: %+v", f)
		}
	}
	fs = Run(fixtureReader(t, "mlx5-dcqcn-drift").Snapshot(), fixturePlan(t), "node01")
	warned := 0
	for _, f := range fs {
		if f.ID != "dcqcn_parameters_default" {
			continue
		}
		if f.Status == StatusWarn {
			warned++
			if !strings.Contains(f.Message, "rpg_ai_rate 10 (default 5), rate_reduce_monitor_period 2 (default 4), min_time_between_cnps 0 (default 4)") {
				t.Errorf("drift fixture: %+v", f)
			}
		} else if f.Status != StatusOK {
			t.Errorf("drift fixture: %+v", f)
		}
	}
	if warned != 4 {
		t.Errorf("%d ports warned, want rails 4-7", warned)
	}
}
