package node

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func parseCapture(t *testing.T, file string) (*ModuleEEPROM, error) {
	t.Helper()
	b, err := os.ReadFile("testdata/transceiver/" + file)
	if err != nil {
		t.Fatal(err)
	}
	return ParseModuleHex(strings.NewReader(string(b)))
}

// The same Intel SFP read by bnxt_en and by ice, pasted after
// `$ sudo ethtool -m <if> hex on` (testdata/transceiver/*.source): bnxt's
// bytes start with an SFP identifier but are the A2h diagnostics page, and
// are refused as corrupt; ice's are the module's identity, which the
// exporter does not decode (SFF-8472 is not among its specifications) but
// does not call corrupt either.
func TestSFPCorruptedByBnxtAgainstIce(t *testing.T) {
	bad, err := parseCapture(t, "sfp-bnxt-corrupted-sudo-prompt.txt")
	if err != nil {
		t.Fatalf("bnxt capture: %v", err)
	}
	if bad.Lower[0] != moduleIDSFP {
		t.Fatalf("bnxt capture identifier %#x", bad.Lower[0])
	}
	if _, err := DecodeModule(bad); !errors.Is(err, ErrModuleCorrupt) || errors.Is(err, ErrModuleUnsupported) {
		t.Errorf("bnxt's corrupted read: %v, want ErrModuleCorrupt", err)
	}
	good, err := parseCapture(t, "sfp-ice-correct-sudo-prompt.txt")
	if err != nil {
		t.Fatalf("ice capture: %v", err)
	}
	if v := text(good.Lower[20:36]); v != "Intel Corp" {
		t.Errorf("ice capture vendor %q", v)
	}
	if _, err := DecodeModule(good); !errors.Is(err, ErrModuleUnsupported) || errors.Is(err, ErrModuleCorrupt) {
		t.Errorf("ice's correct read: %v, want ErrModuleUnsupported only", err)
	}
}

// mlx5 before Linux d1c94bc5b90c answered a failed module read with
// netlink warnings and "success", and ethtool printed the warning's own
// bytes as a dump: a read failure, never a module.
func TestModuleNetlinkWarningIsAReadFailure(t *testing.T) {
	m, err := parseCapture(t, "mlx5-netlink-warning-garbage.txt")
	var re *ModuleReadError
	if !errors.Is(err, ErrModuleReadFailed) || !errors.As(err, &re) {
		t.Fatalf("got %+v, %v; want a ModuleReadError", m, err)
	}
	if !strings.Contains(re.Message, "Query module eeprom by page failed, read 0 bytes, err -5") || re.Reason != "" || re.Line != 2 {
		t.Errorf("read error %+v", re)
	}
}

// mlx4 on a ConnectX-2 (netdev, 2024-09): ethtool's own error, and a dump
// asked for from offset 256 that holds no lower page.
func TestModuleMLX4Failures(t *testing.T) {
	_, err := parseCapture(t, "mlx4-cx2-unknown-error-1564.txt")
	var re *ModuleReadError
	if !errors.As(err, &re) || re.Reason != "Unknown error 1564" || re.Line != 2 {
		t.Errorf("ethtool's error: %v (%+v)", err, re)
	}
	if m, err := parseCapture(t, "mlx4-cx2-offset-256-only.txt"); err == nil {
		t.Errorf("a dump from offset 256 gave a module: lower page %x", m.Lower)
	}
}

// A real dump pasted after any shell's prompt reads the same module.
func TestModuleHexAfterAnyPrompt(t *testing.T) {
	b, err := os.ReadFile("testdata/transceiver/sff8636-mellanox-mlxsw-640.txt")
	if err != nil {
		t.Fatal(err)
	}
	dump := string(b)
	if strings.Contains(dump, "ethtool") {
		t.Fatal("the fixture already carries a command line")
	}
	for _, prompt := range []string{
		"", "$ ethtool -m sfp42 hex on", "# ethtool -m sfp42 hex on", "[root@sw1 ~]# ethtool -m sfp42 hex on",
		"root@sw1:~# ethtool -m sfp42 hex on", "admin@sw1:~$ sudo ethtool -m sfp42 hex on",
	} {
		m, err := ParseModuleHex(strings.NewReader(prompt + "\n" + dump))
		if err != nil {
			t.Errorf("prompt %q: %v", prompt, err)
			continue
		}
		tr, err := DecodeModule(m)
		if err != nil || tr.Vendor != "Mellanox" || tr.TempThresholds == nil {
			t.Errorf("prompt %q: %+v, %v", prompt, tr, err)
		}
	}
	// A page dump after a bracketed prompt keeps its page number.
	m, err := ParseModuleHex(strings.NewReader("[root@h ~]# ethtool -m eth0 hex on\n0x0000: 11" + strings.Repeat(" 00", 127) + "\n" +
		"[root@h ~]# ethtool -m eth0 page 3 hex on\n0x0080: 4b" + strings.Repeat(" 00", 127) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p := m.page(3, 0); p == nil || p[0] != 0x4b {
		t.Errorf("page 3 = %x", p)
	}
}

// SFF-8636 and CMIS repeat the identifier in byte 128; a read whose two
// copies differ is not one module's memory.
func TestModuleIdentifierCopiesDisagree(t *testing.T) {
	m := loadModule(t, "sff8636-mellanox-mlxsw-640.txt")
	m.Upper[ModulePageKey(0, 0)][0] = ModuleIDQSFPDD
	if _, err := DecodeModule(m); !errors.Is(err, ErrModuleCorrupt) {
		t.Errorf("identifier 0x11 with page 00h saying 0x18: %v", err)
	}
}
