package main

import (
	"os"
	"testing"
)

// TestProbeSwitchTestsAreGenerated keeps alerts/tests/probe_switch.yml in
// step with the cases here (run `make rules` after changing them); promtool
// runs the file in the alerts package's tests.
func TestProbeSwitchTestsAreGenerated(t *testing.T) {
	got, err := os.ReadFile("../../tests/probe_switch.yml")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != render(cases()) {
		t.Error("alerts/tests/probe_switch.yml is stale: run `make rules`")
	}
}
