package dcbnl

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func parseFile(t *testing.T, name string) *IEEE {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseRecorded(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return got
}

func TestRecordedDcbPFC(t *testing.T) {
	got := parseFile(t, "dcb-pfc-prio3.txt")
	p := got.PFC
	if p == nil {
		t.Fatal("no PFC")
	}
	if !reflect.DeepEqual(enabledList(p), []int{3}) || p.Cap != 8 || p.Delay != 7 || p.MBC != 0 {
		t.Errorf("PFC = %+v", p)
	}
	if p.Requests[3] != 311 || p.Indications[3] != 1204 {
		t.Errorf("requests %v indications %v", p.Requests, p.Indications)
	}
	if got.Trust() != "pcp" || got.Apps != nil || got.ETS != nil || got.DCBX != nil {
		t.Errorf("unexpected extra state: %+v", got)
	}
}

// The same state must read the same whether it came from netlink or from a
// `dcb` capture of it.
func TestRecordedDcbMatchesNetlink(t *testing.T) {
	rec := parseFile(t, "dcb-pfc-prio3.txt")
	nl, err := decodeIEEE(mlx5Reply(0x08))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rec.PFC, nl.PFC) {
		t.Errorf("recorded PFC %+v\nnetlink PFC %+v", rec.PFC, nl.PFC)
	}
}

func TestRecordedDcbAppDSCP(t *testing.T) {
	got := parseFile(t, "dcb-pfc-app-dscp.txt")
	if got.Trust() != "dscp" {
		t.Errorf("Trust() = %q", got.Trust())
	}
	if len(got.Apps) != 64 {
		t.Fatalf("%d apps, want 64", len(got.Apps))
	}
	// The fixture maps every DSCP d to priority d>>3, partly by symbolic
	// name (CS3 = 24, AF31 = 26, EF = 46 ...).
	for d := 0; d < 64; d++ {
		if p := got.PrioritiesForDSCP(uint8(d)); !reflect.DeepEqual(p, []uint8{uint8(d >> 3)}) {
			t.Errorf("DSCP %d -> %v, want [%d]", d, p, d>>3)
		}
	}
	if got.DCBX == nil || *got.DCBX != dcbxHost|dcbxVerIEEE {
		t.Errorf("DCBX = %v", got.DCBX)
	}
	if got.PFC == nil || got.PFC.Mask() != 0x08 {
		t.Errorf("PFC = %+v", got.PFC)
	}
}

func TestRecordedDcbEthertypeAndETS(t *testing.T) {
	got := parseFile(t, "dcb-pfc-app-ethertype.txt")
	if !reflect.DeepEqual(enabledList(got.PFC), []int{3, 4}) {
		t.Errorf("PFC on %v", enabledList(got.PFC))
	}
	want := []App{
		{selEthertype, 3, 0x8915},
		{selEthertype, 0, 0},
		{selDgram, 3, 4791},
		{selPCP, 3, 3},
		{selPCP, 3, 11},
	}
	if !reflect.DeepEqual(got.Apps, want) {
		t.Errorf("apps = %+v\nwant %+v", got.Apps, want)
	}
	if got.Trust() != "pcp" {
		t.Errorf("Trust() = %q", got.Trust())
	}
	e := got.ETS
	if e == nil || e.Cap != 8 || e.Willing != 0 || e.TCTxBW[0] != 50 || e.TCTxBW[1] != 50 ||
		e.TSA[0] != tsaETS || e.TSA[2] != tsaStrict || e.PrioTC[3] != 1 || e.PrioTC[4] != 1 || e.PrioTC[5] != 0 {
		t.Errorf("ETS = %+v", e)
	}
}

func TestRecordedMlnxQosNetarbiter(t *testing.T) {
	got := parseFile(t, "mlnx_qos-dscp-netarbiter.txt")
	if got.DCBX == nil || *got.DCBX != dcbxHost {
		t.Errorf("DCBX = %v, want host (\"OS controlled\")", got.DCBX)
	}
	if got.TrustHint != "dscp" || got.Trust() != "dscp" {
		t.Errorf("trust hint %q, Trust() %q", got.TrustHint, got.Trust())
	}
	if got.PFC == nil || !reflect.DeepEqual(enabledList(got.PFC), []int{3}) || got.PFC.Delay != 7 {
		t.Errorf("PFC = %+v", got.PFC)
	}
	for d := 24; d <= 31; d++ {
		if p := got.PrioritiesForDSCP(uint8(d)); !reflect.DeepEqual(p, []uint8{3}) {
			t.Errorf("DSCP %d -> %v", d, p)
		}
	}
	if len(got.Apps) != 8 {
		t.Errorf("%d apps", len(got.Apps))
	}
	if got.ETS == nil || got.ETS.TSA[3] != tsaVendor || got.ETS.PrioTC[3] != 3 {
		t.Errorf("ETS = %+v", got.ETS)
	}
	if got.Buffer != nil {
		t.Errorf("Buffer invented: %+v", got.Buffer)
	}
}

func TestRecordedMlnxQosPCP(t *testing.T) {
	got := parseFile(t, "mlnx_qos-pcp.txt")
	if got.DCBX == nil || *got.DCBX != dcbxLLDManaged {
		t.Errorf("DCBX = %v", got.DCBX)
	}
	if got.Trust() != "pcp" || !reflect.DeepEqual(got.Apps, []App{{selEthertype, 0, 0}}) {
		t.Errorf("trust %q apps %+v", got.Trust(), got.Apps)
	}
	if got.PFC.Mask() != 0x08 || got.PFC.Delay != 7 {
		t.Errorf("PFC = %+v", got.PFC)
	}
	b := got.Buffer
	if b == nil || b.Size[0] != 130944 || b.Size[1] != 130944 || b.TotalSize != 1027728 || b.Prio2Buffer[3] != 1 || b.Prio2Buffer[0] != 0 {
		t.Errorf("Buffer = %+v", b)
	}
	e := got.ETS
	if e == nil || e.TSA[0] != tsaETS || e.TSA[3] != tsaETS || e.TCTxBW[0] != 50 || e.TCTxBW[3] != 50 ||
		e.PrioTC[3] != 3 || e.PrioTC[7] != 0 {
		t.Errorf("ETS = %+v", e)
	}
}

// A "none" trust state leaves the decision to the APP table rule.
func TestRecordedMlnxQosTrustNone(t *testing.T) {
	in := "Priority trust state: none\ndscp2prio mapping:\n\tprio:3 dscp:26,\n"
	got, err := ParseRecorded(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if got.TrustHint != "" || got.Trust() != "dscp" || got.PFC != nil {
		t.Errorf("%+v", got)
	}
}

func TestRecordedDSCPNames(t *testing.T) {
	// Old rt_dsfield files name 0x60 "flash" where new ones say "CS3";
	// both are DSCP 24. Numbers and case do not matter.
	got, err := ParseRecorded(strings.NewReader("dscp-prio flash:3 cs3:4 EF:5 le:1 63:7 default:0\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []App{{selDSCP, 3, 24}, {selDSCP, 4, 24}, {selDSCP, 5, 46}, {selDSCP, 1, 1}, {selDSCP, 7, 63}, {selDSCP, 0, 0}}
	if !reflect.DeepEqual(got.Apps, want) {
		t.Errorf("apps = %+v", got.Apps)
	}
}

func TestRecordedErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":              "",
		"comments only":      "# nothing\n$ dcb pfc show dev eth0\n\n",
		"random text":        "hello world\n",
		"ethtool output":     "NIC statistics:\n     rx_packets: 1\n",
		"dcb unknown line":   "prio-pfc 3:on\nbuffer-size 0:1b\n",
		"dcb prio 8":         "prio-pfc 8:on\n",
		"dcb on/off":         "prio-pfc 3:yes\n",
		"dcb no colon":       "prio-pfc 3\n",
		"dcb no entries":     "prio-pfc\n",
		"dcb twice":          "prio-pfc 3:on\nprio-pfc 4:on\n",
		"dcb no prio-pfc":    "pfc-cap 8 macsec-bypass off delay 7\n",
		"dcb odd pairs":      "pfc-cap 8 delay\nprio-pfc 3:on\n",
		"dcb foreign pair":   "pfc-cap 8 willing on\nprio-pfc 3:on\n",
		"dcb big delay":      "delay 70000\nprio-pfc 3:on\n",
		"dcb dscp 64":        "dscp-prio 64:3\n",
		"dcb dscp name":      "dscp-prio AF99:3\n",
		"dcb app prio 9":     "dscp-prio 26:9\n",
		"dcb ethertype":      "ethtype-prio 100:3\n",
		"dcb port 0":         "dgram-port-prio 0:3\n",
		"dcb pcp":            "pcp-prio 9nd:3\n",
		"dcb tsa":            "tc-tsa 0:???\n",
		"dcb bw":             "tc-bw 0:101\n",
		"dcb dcbx word":      "host ieee banana\n",
		"dcb default-prio":   "default-prio\n",
		"mlnx unknown line":  "DCBX mode: OS controlled\nsomething else\n",
		"mlnx dcbx":          "DCBX mode: maybe\n",
		"mlnx trust":         "Priority trust state: vlan\n",
		"mlnx columns":       "PFC configuration:\n\tpriority 0 1 2 3 4 5 6 7\n\tenabled 0 0 0 1 0 0 0\n",
		"mlnx header":        "PFC configuration:\n\tpriority 1 2 3 4 5 6 7 8\n",
		"mlnx enabled 2":     "PFC configuration:\n\tenabled 0 0 0 2 0 0 0 0\n",
		"mlnx enabled twice": "PFC configuration:\n\tenabled 0 0 0 1 0 0 0 0\n\tenabled 0 0 0 1 0 0 0 0\n",
		"mlnx dscp":          "Priority trust state: dscp\ndscp2prio mapping:\n\tprio:3 dscp:99,\n",
		"mlnx dscp empty":    "Priority trust state: dscp\ndscp2prio mapping:\n\tprio:3 dscp:\n",
		"mlnx cable":         "DCBX mode: OS controlled\nCable len: -1\n",
		"mlnx tc":            "DCBX mode: OS controlled\ntc: 9 ratelimit: unlimited, tsa: vendor\n",
		"mlnx tsa":           "DCBX mode: OS controlled\ntc: 1 ratelimit: unlimited, tsa: fair\n",
		"mlnx ets bw":        "DCBX mode: OS controlled\ntc: 1 ratelimit: unlimited, tsa: ets\n",
		"mlnx buffers":       "DCBX mode: OS controlled\nReceive buffer size (bytes): 1,2,3\n",
		"mlnx orphan prio":   "DCBX mode: OS controlled\n\tprio:3\n",
		"mlnx twice":         "DCBX mode: OS controlled\nDCBX mode: OS controlled\n",
		"too big":            "prio-pfc 3:on\n" + strings.Repeat("#", maxRecorded),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ParseRecorded(strings.NewReader(in))
			if err == nil {
				t.Fatalf("no error, got %+v", got)
			}
			if !errors.Is(err, errMalformed) {
				t.Errorf("error %v is not errMalformed", err)
			}
		})
	}
}

func FuzzParseRecorded(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("tc: 1 ratelimit: x, tsa: ets, bw: 7%\n\t priority:  2\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := ParseRecorded(bytes.NewReader(in))
		if err != nil {
			if got != nil || !errors.Is(err, errMalformed) {
				t.Fatalf("got %v with error %v", got, err)
			}
			return
		}
		if tr := got.Trust(); tr != "dscp" && tr != "pcp" {
			t.Fatalf("Trust() = %q", tr)
		}
		for _, a := range got.Apps {
			if a.Priority > 7 || (a.Selector == selDSCP && a.Protocol > 63) {
				t.Fatalf("out-of-range app %+v", a)
			}
		}
		if got.ETS != nil {
			for _, tc := range got.ETS.PrioTC {
				if tc > 7 {
					t.Fatalf("prio_tc %d", tc)
				}
			}
		}
	})
}

// TestRecordedMlnxQosFullDSCPMap: the full 64-entry dscp2prio map of a real mlnx_qos
// (two-digit entries, "07,06,...,00,") lands every DSCP on d/8, as DSCPPrio reports it.
func TestRecordedMlnxQosFullDSCPMap(t *testing.T) {
	got := parseFile(t, "mlnx_qos-dscp-doc2792.txt")
	if got.Trust() != "dscp" || got.PFC == nil || !reflect.DeepEqual(enabledList(got.PFC), []int{0, 2, 6, 7}) || got.PFC.Delay != 10 {
		t.Fatalf("trust %q, PFC %+v", got.Trust(), got.PFC)
	}
	n := 0
	got.DSCPPrio(func(d, p uint8) {
		n++
		if p != d/8 {
			t.Errorf("DSCP %d -> %d, want %d", d, p, d/8)
		}
	})
	if n != 64 {
		t.Errorf("%d DSCP entries, want 64", n)
	}
	if p := got.PrioritiesForDSCP(26); !reflect.DeepEqual(p, []uint8{3}) {
		t.Errorf("DSCP 26 -> %v", p)
	}
	if got.ETS == nil || got.ETS.TSA[6] != tsaStrict || got.ETS.PrioTC[0] != 1 || got.ETS.TCTxBW[7] != 40 {
		t.Errorf("ETS = %+v", got.ETS)
	}
}

// `dcb buffer show` in both spellings iproute2 has printed: plain bytes
// (the 2020 series) and sprint_size's units (today's man page).
func TestRecordedDcbBuffer(t *testing.T) {
	for _, c := range []struct {
		file  string
		p2b   [8]uint8
		size  [8]uint32
		total uint32
	}{
		{"dcb-buffer-mlxsw-netdev-2020.txt", [8]uint8{0, 0, 0, 3, 0, 0, 6, 0}, [8]uint32{10000, 0, 0, 70000, 0, 0, 10000, 0}, 221072},
		{"dcb-buffer-man-page.txt", [8]uint8{0, 1, 2, 3, 4, 5, 6, 7}, [8]uint32{10240, 10240, 10240, 10240, 10240, 10240, 1 << 20, 10240}, 1222 * 1024},
	} {
		got := parseFile(t, c.file).Buffer
		if got == nil || got.Prio2Buffer != c.p2b || got.Size != c.size || got.TotalSize != c.total {
			t.Errorf("%s: buffer %+v", c.file, got)
		}
	}
}

func TestRecordedDcbBufferErrors(t *testing.T) {
	for name, text := range map[string]string{
		"no prio-buffer":  "buffer-size 0:10000 1:0 2:0 3:70000 4:0 5:0 6:10000 7:0\n",
		"no buffer-size":  "prio-buffer 0:0 1:0 2:0 3:3 4:0 5:0 6:6 7:0\n",
		"bits, not bytes": "prio-buffer 0:0\nbuffer-size 0:10kbit\n",
		"buffer 8":        "prio-buffer 0:8\nbuffer-size 0:1\n",
		"over 4 GiB":      "prio-buffer 0:0\nbuffer-size 0:5Gb\n",
		"two totals":      "prio-buffer 0:0\nbuffer-size 0:1\ntotal-size 1 2\n",
	} {
		if _, err := ParseRecorded(strings.NewReader(text)); !errors.Is(err, errMalformed) {
			t.Errorf("%s: err = %v, want errMalformed", name, err)
		}
	}
	// sprint_size writes bytes that are no whole KiB with a "b".
	got, err := ParseRecorded(strings.NewReader("prio-buffer 0:0 1:0 2:0 3:1 4:0 5:0 6:0 7:0\nbuffer-size 0:19872b 1:220896b 2:0b 3:0b 4:0b 5:0b 6:0b 7:0b\ntotal-size 4151520b\n"))
	if err != nil || got.Buffer.Size[1] != 220896 || got.Buffer.TotalSize != 4151520 || got.Buffer.Prio2Buffer[3] != 1 {
		t.Errorf("byte sizes: %+v, %v", got, err)
	}
}
