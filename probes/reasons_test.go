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
}
