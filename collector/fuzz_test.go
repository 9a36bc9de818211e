package collector

import (
	"bufio"
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
		parseSysfsUint("f", b)
	})
}

func FuzzParseIDState(f *testing.F) {
	for _, s := range []string{"4: ACTIVE", "5: LinkUp", "7: <unknown>", ": x", "999999999999999999999: x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if id, _, err := parseIDState(s); err == nil && id < 0 {
			t.Fatalf("negative state %d from %q", id, s)
		}
	})
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"400 Gb/sec (4X NDR)", "2.5 Gb/sec (1X SDR)", "40 Gb/sec (4X QDR)", "NaN Gb/sec", "1e999 Gb/sec"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := parseRate(s); err == nil && (v < 0 || v != v || v > 1e15) {
			t.Fatalf("implausible rate %v from %q", v, s)
		}
	})
}

func FuzzParsePCIeSpeed(f *testing.F) {
	for _, s := range []string{"32.0 GT/s PCIe", "8 GT/s", "Unknown", "2.5 GT/s PCIe", "NaN GT/s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if gt, err := parsePCIeSpeed(s); err == nil && pcieBandwidth(gt, 16) <= 0 {
			t.Fatalf("accepted %q with no bandwidth", s)
		}
	})
}

func FuzzParseAERTotal(f *testing.F) {
	f.Add("RxErr 0\nBadTLP 2\nTOTAL_ERR_COR 17\n")
	f.Add("TOTAL_ERR_FATAL x\n")
	f.Fuzz(func(t *testing.T, s string) {
		parseAERTotal(s)
	})
}

func FuzzValidGIDAndName(f *testing.F) {
	f.Add("fe80:0000:0000:0000:ba3f:d2ff:fea1:2b3c")
	f.Add("RxECNMrkd")
	f.Fuzz(func(t *testing.T, s string) {
		validGID(s)
		n := sanitizeName(s)
		if n == "" {
			t.Fatalf("empty metric fragment from %q", s)
		}
		for i := 0; i < len(n); i++ {
			c := n[i]
			if !(c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
				t.Fatalf("sanitizeName(%q) = %q has %q", s, n, c)
			}
		}
		l := sanitizeLabel(s)
		if len(l) > 128 {
			t.Fatalf("label of %d bytes", len(l))
		}
	})
}

func FuzzParseIPAddr(f *testing.F) {
	f.Add("ens1f0np0        UP             192.168.100.11/24 fe80::1/64\n")
	f.Add("2: ens1f0np0    inet 192.168.100.11/24 brd 192.168.100.255 scope global ens1f0np0\n")
	f.Fuzz(func(t *testing.T, s string) {
		parseIPAddr(bufioScanner(s))
	})
}

func bufioScanner(s string) *bufio.Scanner { return bufio.NewScanner(strings.NewReader(s)) }
