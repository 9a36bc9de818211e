package fleetsim

import (
	"sync"
	"testing"
	"time"
)

var (
	shippedOnce  sync.Once
	shippedRules *RuleSet
	shippedErr   error
)

// loadShippedRules loads alerts/ as it ships.
func loadShippedRules(t testing.TB) *RuleSet {
	t.Helper()
	shippedOnce.Do(func() { shippedRules, shippedErr = LoadRules("../../alerts", 15*time.Second) })
	if shippedErr != nil {
		t.Fatal(shippedErr)
	}
	return shippedRules
}
