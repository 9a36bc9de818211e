package health

import (
	"strings"
	"testing"
)

// A node with nothing to check is not healthy (issue 27: a CPU node, or a
// sysfs tree without RDMA, read "HEALTHY: every check passed or was
// skipped"), and the reason is the one its checks gave.
func TestSummarizeNothingToCheck(t *testing.T) {
	s := Summarize(Run(cpuOnly(), nil, "cpu-01"))
	if s.State != StateNothingToCheck || !s.NotRDMANode() || !strings.HasPrefix(s.Reason, SkipNotRDMANode+": ") {
		t.Errorf("CPU node: %+v", s)
	}
	if s.Counts[StatusSkipped] != len(Checks()) || s.Counts[StatusOK] != 0 {
		t.Errorf("CPU node counts %v", s.Counts)
	}
	// The same node in the plan fails: its NIC is missing.
	if s := Summarize(Run(cpuOnly(), testPlan(t), "node01")); s.State != StateFailing || s.NotRDMANode() || s.Reason != "" {
		t.Errorf("planned node without its NIC: %+v", s)
	}
}

func TestSummarizeStates(t *testing.T) {
	f := func(st Status, subject, msg string) Finding {
		return Finding{ID: "x", Subject: subject, Status: st, Message: msg}
	}
	for _, c := range []struct {
		name   string
		fs     []Finding
		state  State
		reason string
	}{
		{"healthy with skips", []Finding{f(StatusOK, "node", "fine"), f(StatusSkipped, "node", SkipNoPlan)}, StateHealthy, ""},
		{"warning", []Finding{f(StatusOK, "node", "fine"), f(StatusWarn, "mlx5_0", "hot")}, StateWarning, ""},
		{"failing beats warning", []Finding{f(StatusWarn, "mlx5_0", "hot"), f(StatusFail, "mlx5_1", "down")}, StateFailing, ""},
		{"most checks' reason", []Finding{f(StatusSkipped, "node", SkipNoPlan), f(StatusSkipped, "node", SkipNoRDMADevice),
			f(StatusSkipped, "node", SkipNoRDMADevice), f(StatusSkipped, "mlx5_0", "port skip")}, StateNothingToCheck, SkipNoRDMADevice},
		{"tie: the first check's", []Finding{f(StatusSkipped, "node", "first"), f(StatusSkipped, "node", "second")}, StateNothingToCheck, "first"},
		{"no findings", nil, StateNothingToCheck, "no check ran"},
	} {
		s := Summarize(c.fs)
		if s.State != c.state || s.Reason != c.reason || s.NotRDMANode() {
			t.Errorf("%s: %+v, want %s %q", c.name, s, c.state, c.reason)
		}
	}
}
