package nicstats

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mustParseFile(t testing.TB, name string) Stats {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := ParseStatistics(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return st
}

// statLines counts the indented lines of a fixture independently of the
// parser, so the test does not trust ParseStatistics to count itself.
func statLines(t *testing.T, name string) (n int, first, last string) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "     ") {
			continue
		}
		n++
		name := strings.TrimSpace(l[:strings.LastIndex(l, ": ")])
		if first == "" {
			first = name
		}
		last = name
	}
	return n, first, last
}

func TestParseStatisticsFixtures(t *testing.T) {
	for _, name := range []string{
		"mlx5-pfc3-ethtool-S.txt",
		"mlx5-pfc34-ethtool-S.txt",
		"bnxt_en-ethtool-S.txt",
		"ice-ethtool-S.txt",
		"ice-unified-ethtool-S.txt",
	} {
		t.Run(name, func(t *testing.T) {
			st := mustParseFile(t, name)
			n, first, last := statLines(t, name)
			if st.Len() != n || len(st.Values) != n {
				t.Fatalf("got %d names / %d values, fixture has %d stat lines", st.Len(), len(st.Values), n)
			}
			if st.Skipped != 0 {
				t.Errorf("Skipped = %d on a clean fixture", st.Skipped)
			}
			if st.Names[0] != first || st.Names[n-1] != last {
				t.Errorf("order not kept: first %q last %q, want %q %q", st.Names[0], st.Names[n-1], first, last)
			}
		})
	}
}

func TestParseStatisticsValues(t *testing.T) {
	st := mustParseFile(t, "mlx5-pfc3-ethtool-S.txt")
	for name, want := range map[string]uint64{
		"rx_vport_rdma_unicast_bytes": 3630849337640,
		"rx_prio3_pause":              1204,
		"rx_prio3_pause_duration":     5933,
		"link_down_events_phy":        1,
	} {
		if got, ok := st.Get(name); !ok || got != want {
			t.Errorf("%s = %d, %v; want %d", name, got, ok, want)
		}
	}
	if _, ok := st.Get("rx_prio4_pause"); ok {
		t.Error("rx_prio4_pause present, the fixture has PFC on priority 3 only")
	}
}

func TestParseStatisticsAwkwardNames(t *testing.T) {
	in := "NIC statistics:\n" +
		"     [3]: tx_bytes: 42\n" +
		"     rxq0: rx_bytes: 7\n" +
		"     rx_priority_3_xoff.nic: 5\n" +
		"     tx-0.tx_packets: 9\n" +
		"     some stat with spaces: 18446744073709551615\n" +
		"\tport.rx-priority-3-xoff: 11\n"
	st, err := ParseStatistics(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name string
		v    uint64
	}{
		{"[3]: tx_bytes", 42},
		{"rxq0: rx_bytes", 7},
		{"rx_priority_3_xoff.nic", 5},
		{"tx-0.tx_packets", 9},
		{"some stat with spaces", 18446744073709551615},
		{"port.rx-priority-3-xoff", 11},
	}
	if st.Len() != len(want) {
		t.Fatalf("got %d stats %q, want %d", st.Len(), st.Names, len(want))
	}
	for i, w := range want {
		if st.Names[i] != w.name || st.Values[i] != w.v {
			t.Errorf("#%d = %q:%d, want %q:%d", i, st.Names[i], st.Values[i], w.name, w.v)
		}
	}
}

func TestParseStatisticsGarbage(t *testing.T) {
	in := "\n\nNIC statistics:\n" +
		"     rx_packets: 10\n" +
		"     this line has no value\n" +
		"     negative: -1\n" +
		"     overflow: 18446744073709551616\n" +
		"     hex: 0x10\n" +
		"     : 5\n" +
		"     tx_packets: 20\n" +
		"Standard stats for eth0:\n" +
		"     rx_bytes: 30\n"
	st, err := ParseStatistics(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if st.Skipped != 5 {
		t.Errorf("Skipped = %d, want 5", st.Skipped)
	}
	if strings.Join(st.Names, ",") != "rx_packets,tx_packets,rx_bytes" {
		t.Errorf("names = %q", st.Names)
	}
	if st.Values[0] != 10 || st.Values[1] != 20 || st.Values[2] != 30 {
		t.Errorf("values = %v", st.Values)
	}
}

func TestParseStatisticsErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":        "",
		"blank":        "\n \n\t\n",
		"no header":    "     rx_packets: 1\n",
		"header only":  "NIC statistics:\n",
		"all garbage":  "NIC statistics:\n     x\n     y: z\n",
		"other output": "no stats available\n",
		"huge line":    "NIC statistics:\n     " + strings.Repeat("a", 2*maxLine) + ": 1\n",
	} {
		t.Run(name, func(t *testing.T) {
			st, err := ParseStatistics(strings.NewReader(in))
			if err == nil {
				t.Fatalf("no error, got %+v", st)
			}
		})
	}
	_, err := ParseStatistics(strings.NewReader("NIC statistics:\n"))
	if !errors.Is(err, ErrNoStatistics) {
		t.Errorf("header only: %v, want ErrNoStatistics", err)
	}
}

func openTestdata(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestParseDriverInfo(t *testing.T) {
	di, err := ParseDriverInfo(openTestdata(t, "mlx5-ethtool-i.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := DriverInfo{
		Driver: "mlx5_core", Version: "6.8.0-45-generic", FirmwareVersion: "28.39.1002 (MT_0000000838)",
		BusInfo: "0000:17:00.0", SupportsStatistics: true, SupportsTest: true, SupportsPrivFlags: true,
	}
	if di != want {
		t.Errorf("mlx5:\n got %+v\nwant %+v", di, want)
	}

	di, err = ParseDriverInfo(openTestdata(t, "bnxt_en-ethtool-i.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if di.Driver != "bnxt_en" || di.FirmwareVersion != "220.0.59.0/pkg 220.0.83.0" || di.BusInfo != "0000:c1:00.0" ||
		!di.SupportsEEPROM || !di.SupportsRegDump || di.SupportsPrivFlags || di.ExpansionROMVersion != "" {
		t.Errorf("bnxt_en: %+v", di)
	}
}

func TestParseDriverInfoErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":     "",
		"no driver": "version: 1\nbus-info: 0000:01:00.0\n",
		"bad bool":  "driver: x\nsupports-test: maybe\n",
		"no colon":  "driver: x\ngarbage\n",
		"empty drv": "driver:\n",
	} {
		if di, err := ParseDriverInfo(strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error, got %+v", name, di)
		}
	}
}

func TestParsePause(t *testing.T) {
	p, err := ParsePause(openTestdata(t, "mlx5-ethtool-a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Interface != "ens1f0np0" || p.Autoneg || p.RX || p.TX || p.RXNegotiated != nil || p.RXPauseFrames != nil {
		t.Errorf("mlx5: %+v", p)
	}

	p, err = ParsePause(openTestdata(t, "bnxt_en-ethtool-a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Interface != "enp65s0f0np0" || !p.Autoneg || !p.RX || !p.TX {
		t.Errorf("bnxt_en: %+v", p)
	}
	if p.RXNegotiated == nil || !*p.RXNegotiated || p.TXNegotiated == nil || !*p.TXNegotiated {
		t.Errorf("bnxt_en negotiated: %v %v", p.RXNegotiated, p.TXNegotiated)
	}
	if p.TXPauseFrames == nil || *p.TXPauseFrames != 1021 || p.RXPauseFrames == nil || *p.RXPauseFrames != 88 {
		t.Errorf("bnxt_en statistics: %v %v", p.TXPauseFrames, p.RXPauseFrames)
	}

	// The ioctl-era ethtool separated differently; keys are trimmed, so it
	// parses the same.
	p, err = ParsePause(strings.NewReader("Pause parameters for eth0:\nAutonegotiate:  on\nRX:             off\nTX:             on\nRX negotiated:  off\nTX negotiated:  on\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Autoneg || p.RX || !p.TX || *p.RXNegotiated || !*p.TXNegotiated {
		t.Errorf("ioctl format: %+v", p)
	}
}

func TestParsePauseErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":      "",
		"no header":  "RX: on\nTX: on\n",
		"no TX":      "Pause parameters for eth0:\nRX: on\n",
		"bad value":  "Pause parameters for eth0:\nRX: yes\nTX: on\n",
		"bad stat":   "Pause parameters for eth0:\nRX: on\nTX: on\nStatistics:\n  tx_pause_frames: many\n",
		"junk line":  "Pause parameters for eth0:\nRX on\nTX: on\n",
		"header val": "Pause parameters for eth0: x\nRX: on\nTX: on\n",
	} {
		if p, err := ParsePause(strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error, got %+v", name, p)
		}
	}
}
