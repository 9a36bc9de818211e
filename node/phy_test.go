package node

import (
	"strings"
	"testing"
)

// The example of the kernel patch that added FEC statistics (Jakub
// Kicinski, "ethtool: add FEC statistics", netdev, 2021) and ice's (Anil
// Samal, netdev, 2024), as ethtool prints them.
func TestParseShowFEC(t *testing.T) {
	p, err := ParseShowFEC(strings.NewReader(`FEC parameters for eth0:
Configured FEC encodings: None
Active FEC encoding: None
Statistics:
  corrected_blocks: 256
    Lane 0: 255
    Lane 1: 1
  uncorrectable_blocks: 145
    Lane 0: 128
    Lane 1: 17
`))
	if err != nil {
		t.Fatal(err)
	}
	if p.FECMode != "None" || p.FECCorrected.Total != 256 || len(p.FECCorrected.Lanes) != 2 || p.FECUncorrectable.Lanes[1] != 17 {
		t.Errorf("%+v %+v %+v", p, p.FECCorrected, p.FECUncorrectable)
	}
	p, err = ParseShowFEC(strings.NewReader(`FEC parameters for ens21f0np0:
Supported/Configured FEC encodings: Auto RS BaseR
Active FEC encoding: RS
Statistics:
  corrected_blocks: 0
  uncorrectable_blocks: 0
`))
	if err != nil || p.FECMode != "RS" || p.FECCorrected == nil || p.FECUncorrectable.Total != 0 {
		t.Errorf("%+v %v", p, err)
	}
	// Linux 6.18's ethtool: per-lane values on the counter's line.
	p, err = ParseShowFEC(strings.NewReader("FEC parameters for eni8np1:\nActive FEC encoding: None\nStatistics:\n  corrected_blocks: 123\n  uncorrectable_blocks: 4\n  fec_bit_err_0: 445 [ per_lane:  125, 120, 100, 100 ]\n"))
	if err != nil || p.FECCorrected.Total != 123 || p.FECUncorrectable.Total != 4 {
		t.Errorf("%+v %v", p, err)
	}
	// No statistics: counters stay unknown.
	p, err = ParseShowFEC(strings.NewReader("FEC parameters for eth0:\nSupported/Configured FEC encodings: Auto\nActive FEC encoding: RS\n"))
	if err != nil || p.FECCorrected != nil {
		t.Errorf("%+v %v", p, err)
	}
	for _, bad := range []string{"", "hello\n", "FEC parameters for x:\n  corrected_blocks: x\n", "FEC parameters for x:\n    Lane 0: 1\n"} {
		if _, err := ParseShowFEC(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestParseLinkDetected(t *testing.T) {
	for _, c := range []struct {
		in              string
		link            bool
		state, substate string
	}{
		{"Settings for eth0:\n\tLink detected: yes\n", true, "", ""},
		{"\tLink detected: no (No cable)\n", false, "no_cable", ""},
		{"\tLink detected: no (Autoneg, No partner detected)\n", false, "autoneg", "no_partner_detected"},
		{"\tLink detected: no (Bad signal integrity, Serdes ALOS)\n", false, "bad_signal_integrity", "serdes_alos"},
		{"\tLink detected: no (Module, CMIS module is not in ModuleReady state)\n", false, "module", "cmis_not_ready"},
		{"\tLink detected: no (42, 3)\n", false, "state_42", "substate_3"},
	} {
		link, st, sub, ok, err := ParseLinkDetected(strings.NewReader(c.in))
		if err != nil || !ok || link != c.link || st != c.state || sub != c.substate {
			t.Errorf("%q = %v %q %q %v %v", c.in, link, st, sub, ok, err)
		}
	}
	if _, _, _, ok, err := ParseLinkDetected(strings.NewReader("Settings for eth0:\n")); ok || err != nil {
		t.Error("no line must be not ok, no error")
	}
	if _, _, _, _, err := ParseLinkDetected(strings.NewReader("Link detected: no (Gremlins)\n")); err == nil {
		t.Error("unknown state accepted")
	}
	if LinkExtStateName(4) != "no_cable" || LinkExtSubstateName(3, 4) != "serdes_alos" || LinkExtStateName(-1) != "" || LinkExtSubstateName(4, 0) != "" {
		t.Error("names")
	}
}

func FuzzParsePHYText(f *testing.F) {
	f.Add("FEC parameters for eth0:\nActive FEC encoding: RS\nStatistics:\n  corrected_blocks: 256\n    Lane 0: 255\n  uncorrectable_blocks: 1 [ per_lane: 1, 0 ]\n")
	f.Add("\tLink detected: no (Autoneg, No partner detected)\n")
	f.Fuzz(func(t *testing.T, s string) {
		if p, err := ParseShowFEC(strings.NewReader(s)); err == nil && p == nil {
			t.Fatal("nil without error")
		}
		if _, st, sub, ok, err := ParseLinkDetected(strings.NewReader(s)); err == nil && ok && st == "" && sub != "" {
			t.Fatalf("substate %q without a state", sub)
		}
	})
}
