package node

import (
	"math"
	"os"
	"strings"
	"testing"
)

func loadModule(t *testing.T, files ...string) *ModuleEEPROM {
	t.Helper()
	var all []string
	for _, f := range files {
		b, err := os.ReadFile("testdata/transceiver/" + f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, string(b))
	}
	m, err := ParseModuleHex(strings.NewReader(strings.Join(all, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// near compares at the precision ethtool prints (4 significant decimals of
// the unit it prints in).
func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.IsNaN(got) || math.Abs(got-want) > tol {
		t.Errorf("%s = %v, want %v (±%v)", what, got, want, tol)
	}
}

func nearLimits(t *testing.T, what string, l *Limits, ha, la, hw, lw, tol float64) {
	t.Helper()
	if l == nil {
		t.Errorf("%s thresholds missing", what)
		return
	}
	near(t, what+" high alarm", l.HighAlarm, ha, tol)
	near(t, what+" low alarm", l.LowAlarm, la, tol)
	near(t, what+" high warning", l.HighWarning, hw, tol)
	near(t, what+" low warning", l.LowWarning, lw, tol)
}

// The mlxsw cover letter's 640-byte QSFP28 dump, against the thresholds
// `ethtool -m sfp42` printed from it.
func TestDecodeSFF8636MellanoxOptic(t *testing.T) {
	tr, err := DecodeModule(loadModule(t, "sff8636-mellanox-mlxsw-640.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Spec != SpecSFF8636 || tr.Type != "QSFP28" || tr.Media != MediaOptical {
		t.Errorf("spec/type/media = %s %s %s", tr.Spec, tr.Type, tr.Media)
	}
	if tr.Vendor != "Mellanox" || tr.SN != "MT1834FT03846" || tr.Revision != "A2" || !strings.HasPrefix(tr.PartNumber, "MMA1B00-") {
		t.Errorf("vendor/pn/rev/sn = %q %q %q %q", tr.Vendor, tr.PartNumber, tr.Revision, tr.SN)
	}
	near(t, "temperature", tr.TemperatureCelsius, 39.47, 0.005)
	near(t, "vcc", tr.SupplyVolts, 3.3477, 0.00005)
	if len(tr.Lanes) != 4 {
		t.Fatalf("lanes = %d, want 4", len(tr.Lanes))
	}
	if tr.RxPowerOMA {
		t.Error("byte 220 bit 3 says average Rx power")
	}
	mW, mA := 1e-3, 1e-3
	nearLimits(t, "bias", tr.BiasThresholds, 8.5*mA, 5.492*mA, 8.0*mA, 6.0*mA, 0.0005*mA)
	nearLimits(t, "tx power", tr.TxPowerThresholds, 3.4673*mW, 0.0724*mW, 1.7378*mW, 0.1445*mW, 0.00005*mW)
	nearLimits(t, "temperature", tr.TempThresholds, 80, -10, 70, 0, 0.005)
	near(t, "vcc high alarm", tr.VccThresholds.HighAlarm, 3.5, 0.00005)
	near(t, "vcc low alarm", tr.VccThresholds.LowAlarm, 3.1, 0.00005)
	if tr.RxPowerThresholds == nil {
		t.Error("rx power thresholds missing")
	}
}

// A DAC's lower page only (ethtool 6.5 printed hex), against ethtool 5.4's
// decoding of the same module.
func TestDecodeSFF8636CiscoDACLowerPage(t *testing.T) {
	tr, err := DecodeModule(loadModule(t, "sff8636-cisco-pureoptics-dac-lower.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Identifier != 0x11 || tr.Type != "QSFP28" {
		t.Errorf("identifier = %#x %s", tr.Identifier, tr.Type)
	}
	near(t, "temperature", tr.TemperatureCelsius, 29.05, 0.005)
	near(t, "vcc", tr.SupplyVolts, 3.3157, 0.00005)
	// Without upper page 00h the media is unknown: no lanes, no thresholds.
	if len(tr.Lanes) != 0 || tr.TempThresholds != nil || tr.Vendor != "" {
		t.Errorf("lanes %d thresholds %v vendor %q from a lower page alone", len(tr.Lanes), tr.TempThresholds, tr.Vendor)
	}
}

// A QSFP-DD 400GBASE-DR4: page 00h of one AFCT-93DRPHZ-AZ2 and page 11h of
// another of the same model, against CMIS and SONiC's decoding.
func TestDecodeCMISAvagoDR4(t *testing.T) {
	m := loadModule(t, "cmis-avago-qsfpdd-400g-dr4-page0.txt")
	tr, err := DecodeModule(m)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Spec != SpecCMIS || tr.Type != "QSFP-DD" || tr.Media != MediaOptical {
		t.Errorf("spec/type/media = %s %s %s", tr.Spec, tr.Type, tr.Media)
	}
	if tr.Vendor != "AVAGO" || tr.PartNumber != "AFCT-93DRPHZ-AZ2" || tr.Revision != "01" || tr.SN != "FD2038FG0FK" {
		t.Errorf("vendor/pn/rev/sn = %q %q %q %q", tr.Vendor, tr.PartNumber, tr.Revision, tr.SN)
	}
	near(t, "temperature", tr.TemperatureCelsius, 31.03, 0.005)
	near(t, "vcc", tr.SupplyVolts, 3.3027, 0.00005)
	if len(tr.Lanes) != 0 {
		t.Errorf("%d lanes without pages 01h and 11h", len(tr.Lanes))
	}

	// Page 11h of the Ethernet0 module, with a page 01h that declares the
	// three lane monitors (bias scale x1), as the DR4's own does for SONiC
	// to print them.
	m2 := loadModule(t, "cmis-avago-qsfpdd-400g-dr4-page0.txt", "cmis-avago-qsfpdd-400g-dr4-page11h.txt")
	p1 := make([]byte, ModulePageLen)
	p1[cmisMonitors] = 0x03
	p1[cmisLaneMon] = 0x07
	m2.SetPage(1, 0, p1)
	tr, err = DecodeModule(m2)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Lanes) != 4 {
		t.Fatalf("lanes = %d, want the 4 media lanes of 400GBASE-DR4", len(tr.Lanes))
	}
	mA := 1e-3
	for i, want := range []float64{44.942, 47.444, 47.444, 49.946} {
		near(t, "bias lane "+string(rune('1'+i)), tr.Lanes[i].BiasAmperes, want*mA, 0.0005*mA)
	}
	dBm := func(w float64) float64 { return 10 * math.Log10(w/1e-3) }
	for i, want := range map[int]float64{0: 2.8829, 2: 2.8959, 3: 2.7147} {
		near(t, "tx power lane dBm "+string(rune('1'+i)), dBm(tr.Lanes[i].TxPowerWatts), want, 0.00005)
	}
	for _, i := range []int{2, 3} {
		near(t, "rx power lane dBm "+string(rune('1'+i)), dBm(tr.Lanes[i].RxPowerWatts), -40, 0.00005)
	}
}

func TestLimitsLevel(t *testing.T) {
	l := &Limits{HighAlarm: 80, LowAlarm: -10, HighWarning: 70, LowWarning: 0}
	for _, c := range []struct {
		v          float64
		level, dir string
	}{{25, LevelOK, ""}, {71, LevelWarning, "high"}, {81, LevelAlarm, "high"}, {-1, LevelWarning, "low"}, {-11, LevelAlarm, "low"}, {math.NaN(), LevelOK, ""}} {
		if lv, d := l.Level(c.v); lv != c.level || d != c.dir {
			t.Errorf("Level(%v) = %s %s, want %s %s", c.v, lv, d, c.level, c.dir)
		}
	}
	if lv, _ := (&Limits{}).Level(5); lv != LevelOK {
		t.Error("all-zero thresholds are none")
	}
	if lv, _ := (*Limits)(nil).Level(5); lv != LevelOK {
		t.Error("nil thresholds are none")
	}
}

func TestParseModuleHexErrors(t *testing.T) {
	for _, in := range []string{"", "Offset Values\n------ ------\n", "0x0000: zz\n", "0x0000: 11 07\n", "garbage\n", "$ ethtool -m x page 0x11 hex on\n0x0080: 00\n"} {
		if _, err := ParseModuleHex(strings.NewReader(in)); err == nil {
			t.Errorf("ParseModuleHex(%q) accepted", in)
		}
	}
	if _, err := DecodeModule(ModuleFromFlat(make([]byte, 256))); err == nil {
		t.Error("an empty cage's zeros decoded")
	}
}

func FuzzDecodeModule(f *testing.F) {
	for _, name := range []string{"sff8636-mellanox-mlxsw-640.txt", "sff8636-cisco-pureoptics-dac-lower.txt", "cmis-avago-qsfpdd-400g-dr4-page0.txt", "cmis-avago-qsfpdd-400g-dr4-page11h.txt"} {
		b, err := os.ReadFile("testdata/transceiver/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := ParseModuleHex(strings.NewReader(string(b))); err == nil {
			if tr, err := DecodeModule(m); err == nil && len(tr.Lanes) > cmisMaxLanes {
				t.Fatalf("%d lanes", len(tr.Lanes))
			}
		}
		// Raw memory of any length, as the ioctl returns it.
		if tr, err := DecodeModule(ModuleFromFlat(b)); err == nil {
			for _, s := range []string{tr.Vendor, tr.PartNumber, tr.SN, tr.Revision} {
				for _, c := range []byte(s) {
					if c < 0x20 || c >= 0x7f {
						t.Fatalf("non-printable byte in %q", s)
					}
				}
			}
		}
	})
}
