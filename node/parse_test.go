package node

import (
	"errors"
	"testing"
	"unicode/utf8"
)

func TestParseSysfsUint(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0\n", 0, true},
		{"907712334410\n", 907712334410, true},
		{"18446744073709551615", 18446744073709551615, true},
		{"18446744073709551616", 0, false}, // overflow is garbage, not a wrap
		{"", 0, false},
		{"-1", 0, false},
		{"12abc", 0, false},
		{"garbage\x01value", 0, false},
	} {
		got, err := ParseCounter([]byte(tc.in))
		if (err == nil) != tc.ok {
			t.Errorf("%q: err = %v, want ok=%v", tc.in, err, tc.ok)
			continue
		}
		if err != nil && !errors.Is(err, ErrNotNumeric) {
			t.Errorf("%q: error %v does not wrap ErrNotNumeric", tc.in, err)
		}
		if got != tc.want {
			t.Errorf("%q = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// "N/A (no PMA)" is the device saying it cannot count, not garbage: the
// reader must tell the two apart to count only the garbage as read errors.
func TestParseCounterNotSupportedIsNotGarbage(t *testing.T) {
	for _, in := range []string{"N/A (no PMA)\n", "N/A (no PMA)"} {
		_, err := ParseCounter([]byte(in))
		if !errors.Is(err, ErrNotSupported) || errors.Is(err, ErrNotNumeric) {
			t.Errorf("%q: %v, want ErrNotSupported only", in, err)
		}
	}
	for _, in := range []string{"N/A", "N/A (no PMA) 3", "garbage"} {
		_, err := ParseCounter([]byte(in))
		if !errors.Is(err, ErrNotNumeric) || errors.Is(err, ErrNotSupported) {
			t.Errorf("%q: %v, want ErrNotNumeric only", in, err)
		}
	}
}

func TestParseIDState(t *testing.T) {
	state, phys := "ParseState", "ParsePhysState"
	parsers := map[string]func(string) (int, string, error){state: ParseState, phys: ParsePhysState}
	for _, tc := range []struct {
		parser, in string
		id         int
		name       string
		ok         bool
	}{
		{state, "4: ACTIVE", 4, "ACTIVE", true},
		{state, "1: DOWN", 1, "DOWN", true},
		{state, "4: ACTIVE ()", 4, "ACTIVE ()", true},
		// Bare names, as other projects' fixtures spell them.
		{state, "ACTIVE", 4, "ACTIVE", true},
		{state, "DOWN", 1, "DOWN", true},
		{state, "active_defer", 5, "ACTIVE_DEFER", true},
		{state, "ACTIVE ()", 4, "ACTIVE", true},
		{state, "LinkUp", 0, "", false}, // a physical state is not a logical one
		{state, "x: ACTIVE", 0, "", false},
		{state, "-1: DOWN", 0, "", false},
		{state, "", 0, "", false},
		{phys, "5: LinkUp", 5, "LinkUp", true},
		{phys, "7: <unknown>", 7, "<unknown>", true},
		{phys, "5: LINK_UP", 5, "LINK_UP", true},
		{phys, "Disabled", 3, "Disabled", true},
		{phys, "LinkUp", 5, "LinkUp", true},
		{phys, "LINK_UP", 5, "LinkUp", true},
		{phys, "Phy Test", 7, "Phy Test", true},
		{phys, "polling", 2, "Polling", true},
		{phys, "ACTIVE", 0, "", false},
		{phys, "<unknown>", 0, "", false},
	} {
		id, name, err := parsers[tc.parser](tc.in)
		if (err == nil) != tc.ok || id != tc.id || name != tc.name {
			t.Errorf("%s(%q) = %d %q %v", tc.parser, tc.in, id, name, err)
		}
	}
}

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		bits float64
		ok   bool
	}{
		{"400 Gb/sec (4X NDR)", 400e9, true},
		{"25 Gb/sec (1X EDR)", 25e9, true},
		{"2.5 Gb/sec (1X SDR)", 2.5e9, true},
		{"200 Gb/sec (4X HDR)", 200e9, true},
		{"400 Gb/sec", 400e9, true},
		{"0 GB/sec", 0, true},
		{"10 GB/sec", 0, false},
		{"fast", 0, false},
		{"400 Mb/sec (4X)", 0, false},
		{"1e300 Gb/sec (4X)", 0, false},
	} {
		got, err := ParseRate(tc.in)
		if (err == nil) != tc.ok || got != tc.bits {
			t.Errorf("%q = %v %v", tc.in, got, err)
		}
	}
}

func TestSanitizeName(t *testing.T) {
	for in, want := range map[string]string{
		"port_rcv_data":           "port_rcv_data",
		"VL15_dropped":            "vl15_dropped",
		"ip4InOctets":             "ip4_in_octets",
		"RxECNMrkd":               "rx_ecn_mrkd",
		"tcpRetransSegs":          "tcp_retrans_segs",
		"rx_priority_3_xoff.nic":  "rx_priority_3_xoff_nic",
		"[3]: tx_bytes":           "_3_tx_bytes",
		"__weird--name__":         "weird_name",
		"":                        "unnamed",
		"iwOutRdmaWrites":         "iw_out_rdma_writes",
		"already_total":           "already_total",
		"ümlaut":                  "mlaut",
		"np_ecn_marked_roce_pkts": "np_ecn_marked_roce_pkts",
	} {
		if got := SnakeCase(in); got != want {
			t.Errorf("SnakeCase(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParsePCIeSpeed(t *testing.T) {
	for in, want := range map[string]float64{
		"32.0 GT/s PCIe": 32, "16.0 GT/s PCIe": 16, "8.0 GT/s PCIe": 8, "2.5 GT/s PCIe": 2.5,
		"8 GT/s": 8, "5 GT/s": 5, "64.0 GT/s PCIe": 64,
	} {
		got, err := ParsePCIeSpeed(in)
		if err != nil || got != want {
			t.Errorf("%q = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"Unknown", "fast", "3.0 GT/s PCIe", "GT/s"} {
		if _, err := ParsePCIeSpeed(bad); err == nil {
			t.Errorf("%q: want error", bad)
		}
	}
}

func TestPCIeBandwidth(t *testing.T) {
	// Usable bandwidth after encoding, in bytes/s (kernel PCIE_SPEED2MBS_ENC).
	for _, tc := range []struct {
		gts   float64
		width int
		gbps  float64
	}{
		{8, 8, 63.008}, {8, 16, 126.016}, {16, 16, 252.048}, {32, 16, 504.112}, {2.5, 1, 2}, {5, 4, 16}, {64, 16, 1024},
	} {
		got := PCIeBandwidth(tc.gts, tc.width) * 8 / 1e9
		if diff := got - tc.gbps; diff > 1e-9 || diff < -1e-9 {
			t.Errorf("Gen %v x%d = %v Gb/s, want %v", tc.gts, tc.width, got, tc.gbps)
		}
	}
}

func TestParseAERTotal(t *testing.T) {
	text := "RxErr 0\nBadTLP 2\nTOTAL_ERR_COR 17\n"
	if v, ok, err := ParseAERTotal(text); err != nil || !ok || v != 17 {
		t.Errorf("got %d %v %v", v, ok, err)
	}
	if _, ok, err := ParseAERTotal("RxErr 0\n"); ok || err != nil {
		t.Errorf("no total: ok=%v err=%v", ok, err)
	}
	if _, _, err := ParseAERTotal("TOTAL_ERR_FATAL lots\n"); err == nil {
		t.Error("garbage total: want error")
	}
}

func TestValidGID(t *testing.T) {
	if !ValidGID("fe80:0000:0000:0000:ba3f:d2ff:fea1:2b3c") {
		t.Error("valid GID rejected")
	}
	for _, bad := range []string{"fe80::1", "FE80:0000:0000:0000:ba3f:d2ff:fea1:2b3c", "zz80:0000:0000:0000:ba3f:d2ff:fea1:2b3c", ""} {
		if ValidGID(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestValidUTF8(t *testing.T) {
	for in, want := range map[string]string{
		"ens1f0np0":    "ens1f0np0",
		"v\xff\xfe":    `v\xff\xfe`,
		"ünï":          "ünï",
		"a\xc3":        `a\xc3`,        // truncated two-byte sequence
		"\xed\xa0\x80": `\xed\xa0\x80`, // a surrogate is not valid UTF-8
	} {
		got := ValidUTF8(in)
		if got != want || !utf8.ValidString(got) {
			t.Errorf("ValidUTF8(%q) = %q, want %q", in, got, want)
		}
	}
}

// LabelUTF8 is one to one: a name with a byte 0xff and a name spelled
// with the text `\xff` (both legal interface names) stay apart, while every
// ordinary name is itself.
func TestLabelUTF8IsOneToOne(t *testing.T) {
	for in, want := range map[string]string{
		"ens1f0np0":    "ens1f0np0",
		"ünï":          "ünï",
		`a\b`:          `a\b`, // a backslash alone is no escape
		"v\xff":        `v\xff`,
		`v\xff`:        `v\\xff`,
		"v\xff\\":      `v\xff\\`,
		"\xed\xa0\x80": `\xed\xa0\x80`,
	} {
		got := LabelUTF8(in)
		if got != want || !utf8.ValidString(got) {
			t.Errorf("LabelUTF8(%q) = %q, want %q", in, got, want)
		}
	}
	seen := map[string]string{}
	for _, in := range []string{"v\xff", `v\xff`, `v\\xff`, "v\\\xff", `v\x`, "v\\x", "v\xff\xfe", `v\xff\xfe`, "v\xff" + `\xfe`, `v\xff` + "\xfe", `\`, `\\`, "\xc3", `\xc3`, "ü", `\xc3\xbc`} {
		out := LabelUTF8(in)
		if prev, dup := seen[out]; dup && prev != in {
			t.Errorf("%q and %q both give %q", prev, in, out)
		}
		seen[out] = in
	}
}

func FuzzLabelUTF8(f *testing.F) {
	f.Add("v\xff", `v\xff`)
	f.Add(`\x`, "\\x")
	f.Fuzz(func(t *testing.T, a, b string) {
		la, lb := LabelUTF8(a), LabelUTF8(b)
		if !utf8.ValidString(la) {
			t.Fatalf("LabelUTF8(%q) = %q is not UTF-8", a, la)
		}
		if a != b && la == lb {
			t.Fatalf("LabelUTF8(%q) == LabelUTF8(%q) == %q", a, b, la)
		}
	})
}

func TestCountersExtName(t *testing.T) {
	for raw, want := range map[string]string{
		"port_rcv_data_64":            "port_rcv_data",
		"port_xmit_data_64":           "port_xmit_data",
		"port_rcv_packets_64":         "port_rcv_packets",
		"port_xmit_packets_64":        "port_xmit_packets",
		"port_unicast_rcv_packets":    "unicast_rcv_packets",
		"port_unicast_xmit_packets":   "unicast_xmit_packets",
		"port_multicast_rcv_packets":  "multicast_rcv_packets",
		"port_multicast_xmit_packets": "multicast_xmit_packets",
		"something_new":               "something_new",
	} {
		if got := CountersExtName(raw); got != want {
			t.Errorf("CountersExtName(%q) = %q, want %q", raw, got, want)
		}
	}
	if !IsPMADataCounter(CountersExtName("port_rcv_data_64")) {
		t.Error("the 64-bit data counter must keep the 4-byte-word scale")
	}
}

func TestParseNodeType(t *testing.T) {
	for in, want := range map[string]int{"1: CA": NodeTypeCA, "4: RNIC": NodeTypeRNIC, "7: unspecified": NodeTypeUnspecified, "RNIC": NodeTypeRNIC} {
		if got, _, err := ParseNodeType(in); err != nil || got != want {
			t.Errorf("ParseNodeType(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if d := (Device{NodeType: NodeTypeRNIC}); !d.IWARP() {
		t.Error("an RNIC is iWARP")
	}
}
