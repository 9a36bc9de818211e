package config

import "testing"

func TestParseSizeBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want SizeBytes
	}{
		{"8", 8},
		{"0", 0},
		{"8K", 8 << 10},
		{"8k", 8 << 10},
		{"1M", 1 << 20},
		{"1m", 1 << 20},
		{"8G", 8 << 30},
		{"128M", 128 << 20},
		{" 32 M ", 32 << 20},
		{"1.5G", 3 << 29},
		{"0.5K", 512},
		{"9223372036854775807", 1<<63 - 1},
		{"8589934591G", 8589934591 << 30},
	} {
		got, err := ParseSizeBytes(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseSizeBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestParseSizeBytesRejects(t *testing.T) {
	for _, in := range []string{
		"", "G", "-8", "+8", "8GB", "8GiB", "8T", "1e3", "0x10", "inf", "NaN", "1.5", "0.3K",
		"8 G B", "1..2M", "9223372036854775808", "8589934592G", "1_000", "８", "ȿG",
	} {
		if got, err := ParseSizeBytes(in); err == nil {
			t.Errorf("ParseSizeBytes(%q) = %d, want an error", in, got)
		}
	}
}

func TestSizeBytesString(t *testing.T) {
	for _, tc := range []struct {
		in   SizeBytes
		want string
	}{
		{0, "0"},
		{8, "8"},
		{1000, "1000"},
		{1024, "1K"},
		{1536, "1536"},
		{1 << 20, "1M"},
		{3 << 29, "1536M"},
		{8 << 30, "8G"},
	} {
		if got := tc.in.String(); got != tc.want {
			t.Errorf("SizeBytes(%d).String() = %q, want %q", int64(tc.in), got, tc.want)
		}
		if back, err := ParseSizeBytes(tc.in.String()); err != nil || back != tc.in {
			t.Errorf("ParseSizeBytes(%q) = %d, %v; want the round trip to %d", tc.in.String(), back, err, int64(tc.in))
		}
	}
}
