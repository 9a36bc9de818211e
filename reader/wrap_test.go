package reader

import "testing"

func TestCounterExtend(t *testing.T) {
	f := &wrapExtender{}
	steps := []struct{ raw, want uint64 }{
		{4294967290, 4294967290},
		{5, 4294967301},          // wrapped once
		{100, 4294967396},        // keeps counting from the extension
		{4294967295, 8589934591}, // approaching the next wrap
		{3, 8589934595},          // second wrap
	}
	for _, s := range steps {
		if got := f.extend(s.raw); got != s.want {
			t.Fatalf("extend(%d) = %d, want %d", s.raw, got, s.want)
		}
	}
	// A drop from the lower half is a reset (driver reload): the counter
	// restarts and Prometheus sees a reset, not a phantom 4 Gi jump.
	g := &wrapExtender{}
	g.extend(1000)
	if got := g.extend(10); got != 10 {
		t.Fatalf("reset: got %d, want 10", got)
	}
}
