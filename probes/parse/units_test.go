package parse

import "testing"

func TestPerftestUnitConversion(t *testing.T) {
	tests := []struct {
		unit  PerftestUnit
		value float64
		want  float64
	}{
		// MB and MiB are the same 2^20 factor: only the label changed in 24.07.
		{UnitMB, 11714.10, 11714.10 * mib},
		{UnitMiB, 11714.10, 11714.10 * mib},
		{UnitMiB, 1, 1048576},
		// --report_gbits: 10^9 bits.
		{UnitGb, 392.34, 392.34e9 / 8},
		{UnitGb, 8, 1e9},
		{UnitGb, 0, 0},
	}
	for _, tt := range tests {
		got, err := tt.unit.BytesPerSecond(tt.value)
		if err != nil {
			t.Fatalf("%s: %v", tt.unit, err)
		}
		approx(t, string(tt.unit), got, tt.want)
	}
	if _, err := PerftestUnit("GB/sec").BytesPerSecond(1); err == nil {
		t.Error("an unknown unit must be an error, not a silent factor")
	}
}

func TestParsePerftestUnitLabels(t *testing.T) {
	for label, want := range map[string]PerftestUnit{"MB/sec": UnitMB, "MiB/sec": UnitMiB, "Gb/sec": UnitGb} {
		got, ok := parsePerftestUnit(label)
		if !ok || got != want {
			t.Errorf("parsePerftestUnit(%q) = %q, %v", label, got, ok)
		}
	}
	if _, ok := parsePerftestUnit("KB/sec"); ok {
		t.Error("KB/sec is not a perftest unit")
	}
}

func TestNCCLUnits(t *testing.T) {
	// nccl-tests divides by 1e9 (doc/PERFORMANCE.md), not by 2^30.
	approx(t, "GB/s", ncclGBToBytesPerSecond(235.03), 235.03e9)
	approx(t, "µs", usecToSeconds(63896), 0.063896)
}
