package probes

import (
	"strings"
	"testing"
)

// allReasons is every failure reason, and "" for success.
var allReasons = []string{
	"", ReasonConnectRefused, ReasonTimeout, ReasonNoDevice, ReasonGIDIndex,
	ReasonRetryExceeded, ReasonWrongResults, ReasonBelowThreshold, ReasonRegression,
	ReasonExecError, ReasonQPConnectTimeout, ReasonIncompleteOutput, ReasonParseError,
	ReasonWrongPriority, ReasonSocketFallback, ReasonNoGDRDMA,
}

func TestHintForEveryReason(t *testing.T) {
	for _, reason := range allReasons {
		hint := Hint(reason)
		if reason == "" {
			if hint != "" {
				t.Errorf("success must have no hint, got %q", hint)
			}
			continue
		}
		if hint == "" || strings.Contains(hint, "\n") {
			t.Errorf("Hint(%q) = %q, want one non-empty line", reason, hint)
		}
	}
	if Hint("no_such_reason") != "" {
		t.Error("unknown reasons must have no hint")
	}
	if h := Hint(ReasonGIDIndex); !strings.Contains(h, "show_gids") || !strings.Contains(h, "RoCE v2") {
		t.Errorf("gid_index hint must point at show_gids and the RoCE v2 GID: %q", h)
	}
	// A queue pair that never connects is often a GID index forced on a node
	// whose table differs: the hint must not send the operator to the network
	// team first.
	if h := Hint(ReasonQPConnectTimeout); strings.Contains(h, "not NCCL") || !strings.Contains(h, "per node") || !strings.Contains(h, "node_env") {
		t.Errorf("qp_connect_timeout hint: %q", h)
	}
	if h := Hint(ReasonNoGDRDMA); strings.Contains(h, "=SYS") || !strings.Contains(h, "PIX or PXB") {
		t.Errorf("no_gdrdma hint: %q", h)
	}
}
