package node

import (
	"strconv"
	"strings"
	"testing"
)

// The sysfs parsers see whatever a driver prints; none may panic, and a
// value they accept must be sane.

func FuzzParseSysfsUint(f *testing.F) {
	for _, s := range []string{"0\n", "907712334410\n", "N/A (no PMA)\n", "18446744073709551616", "-1", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ParseCounter(b)
	})
}

func FuzzParseIDState(f *testing.F) {
	for _, s := range []string{"4: ACTIVE", "5: LinkUp", "7: <unknown>", ": x", "999999999999999999999: x",
		"DOWN", "Disabled", "LINK_UP", "4: ACTIVE ()", "Phy Test", "ACTIVE (", "(", "active_defer",
		"4: RNIC", "7: unspecified", "usNIC UDP"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, parse := range []func(string) (int, string, error){ParseState, ParsePhysState, ParseNodeType} {
			id, name, err := parse(s)
			if err != nil {
				continue
			}
			if id < 0 {
				t.Fatalf("negative state %d from %q", id, s)
			}
			// A bare name must come back as the kernel's number and name,
			// so "<id>: <name>" reads the same.
			if !strings.Contains(s, ":") {
				if id2, name2, err := parse(strconv.Itoa(id) + ": " + name); err != nil || id2 != id || name2 != name {
					t.Fatalf("%q = %d %q, but %d: %s = %d %q %v", s, id, name, id, name, id2, name2, err)
				}
			}
		}
	})
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"400 Gb/sec (4X NDR)", "2.5 Gb/sec (1X SDR)", "40 Gb/sec (4X QDR)", "NaN Gb/sec", "1e999 Gb/sec"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := ParseRate(s); err == nil && (v < 0 || v != v || v > 1e15) {
			t.Fatalf("implausible rate %v from %q", v, s)
		}
	})
}

func FuzzParsePCIeSpeed(f *testing.F) {
	for _, s := range []string{"32.0 GT/s PCIe", "8 GT/s", "Unknown", "2.5 GT/s PCIe", "NaN GT/s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if gt, err := ParsePCIeSpeed(s); err == nil && PCIeBandwidth(gt, 16) <= 0 {
			t.Fatalf("accepted %q with no bandwidth", s)
		}
	})
}

func FuzzParseAERTotal(f *testing.F) {
	f.Add("RxErr 0\nBadTLP 2\nTOTAL_ERR_COR 17\n")
	f.Add("TOTAL_ERR_FATAL x\n")
	f.Fuzz(func(t *testing.T, s string) {
		ParseAERTotal(s)
	})
}

func FuzzValidGIDAndName(f *testing.F) {
	f.Add("fe80:0000:0000:0000:ba3f:d2ff:fea1:2b3c")
	f.Add("RxECNMrkd")
	f.Fuzz(func(t *testing.T, s string) {
		ValidGID(s)
		n := SnakeCase(s)
		if n == "" {
			t.Fatalf("empty metric fragment from %q", s)
		}
		for i := 0; i < len(n); i++ {
			c := n[i]
			if !(c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
				t.Fatalf("SnakeCase(%q) = %q has %q", s, n, c)
			}
		}
		l := CleanText(s)
		if len(l) > 128 {
			t.Fatalf("label of %d bytes", len(l))
		}
	})
}
