package node

import "testing"

// TestParseMlx5TrafficClass: the real show format of MLNX_OFED's mlx5_ib tc sysfs
// ("Global tclass=%d\n" then rule lines; empty when nothing is set).
func TestParseMlx5TrafficClass(t *testing.T) {
	for _, tc := range []struct {
		text    string
		want    int
		set, ok bool
	}{
		{"Global tclass=106\n", 106, true, true},
		{"Global tclass=236\ntclass=160 dst_ip=10.0.0.0/8\n", 236, true, true},
		{"", 0, false, true},
		{"tclass=160 dst_ip=10.0.0.0/8\n", 0, false, true},
		{"Global tclass=300\n", 0, false, false},
		{"Global tclass=x\n", 0, false, false},
	} {
		got, set, err := ParseMlx5TrafficClass(tc.text)
		if (err == nil) != tc.ok || got != tc.want || set != tc.set {
			t.Errorf("%q: %d, %v, %v; want %d, %v, ok=%v", tc.text, got, set, err, tc.want, tc.set, tc.ok)
		}
	}
	if v, err := ParseToS("106\n"); err != nil || v != 106 {
		t.Errorf("ParseToS(106) = %d, %v", v, err)
	}
	if _, err := ParseToS("256"); err == nil {
		t.Error("ParseToS(256) accepted")
	}
}

func TestDSCPMap(t *testing.T) {
	var m DSCPMap
	if _, ok := m.Lookup(26); ok {
		t.Fatal("empty map maps 26")
	}
	m.Set(26, 3)
	m.Set(26, 0) // a second entry for one DSCP: the lower (lossy) priority is kept
	m.Set(48, 6)
	m.Set(64, 1) // out of range: ignored
	if p, ok := m.Lookup(26); !ok || p != 0 {
		t.Errorf("26 → %d, %v; want 0", p, ok)
	}
	if got := m.DSCPsOn(6); len(got) != 1 || got[0] != 48 {
		t.Errorf("DSCPs on 6 = %v", got)
	}
	var nilMap *DSCPMap
	if _, ok := nilMap.Lookup(26); ok {
		t.Error("nil map maps 26")
	}
}

// The defaults are the values vendors publish: DSCP 26 for RoCE, 48 for CNPs, and
// NVIDIA's traffic class 106 (26<<2 | ECT(0)) for NCCL_IB_TC and tc/<port>/traffic_class.
func TestRoCEDefaults(t *testing.T) {
	if DefaultRoCEDSCP != 26 || DefaultCNPDSCP != 48 {
		t.Errorf("default DSCPs %d, %d; want 26, 48", DefaultRoCEDSCP, DefaultCNPDSCP)
	}
	if DefaultRoCETrafficClass != 106 || RoCETrafficClass(DefaultRoCEDSCP) != 106 {
		t.Errorf("default traffic class %d (computed %d), want 106", DefaultRoCETrafficClass, RoCETrafficClass(DefaultRoCEDSCP))
	}
	if tc := RoCETrafficClass(0); tc != ECT0 {
		t.Errorf("DSCP 0: traffic class %d, want only the ECT(0) bits %d", tc, ECT0)
	}
	if tc := RoCETrafficClass(NumDSCP - 1); tc != 255-1 {
		t.Errorf("DSCP 63: traffic class %d, want 254", tc)
	}
}
