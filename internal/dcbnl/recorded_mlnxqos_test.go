package dcbnl

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// Real `mlnx_qos -i` outputs of four MLNX_OFED / mlnx-tools generations
// (testdata/SOURCES): the receive buffer line ends in max_buffer_size= since
// mlnx-tools v23.07, in total_size= before, and is absent on old releases.
// Each must give the whole state: trust, the DSCP map, PFC, ETS.
func TestRecordedMlnxQosRealCaptures(t *testing.T) {
	type want struct {
		dcbx       uint8
		trust      string
		pfc        []int
		delay      uint16
		dscp       map[uint8]uint8 // DSCP -> the one priority it maps to
		apps       int
		tsa        map[int]uint8 // traffic class -> TSA
		bw         map[int]uint8 // traffic class -> ETS share
		prioTC     map[int]uint8 // priority -> traffic class
		buffer     []uint32      // nil: no buffer line
		total      uint32
		prio2buf   map[int]uint8
		noPFC, noE bool
	}
	for _, tc := range []struct {
		file string
		want want
	}{
		{"mlnx_qos-max_buffer_size-ofed23.10-cx7.txt", want{
			dcbx: dcbxHost, trust: "dscp", pfc: []int{5}, delay: 30,
			// This node remapped DSCP 40 to priority 5 and 48 to 6 (the
			// first entry of each line): 26 stays on 3.
			dscp: map[uint8]uint8{26: 3, 40: 5, 48: 6, 41: 5, 49: 6, 0: 0, 63: 7}, apps: 64,
			tsa:    map[int]uint8{0: tsaETS, 1: tsaETS, 2: tsaETS, 3: tsaETS, 4: tsaStrict, 7: tsaStrict},
			bw:     map[int]uint8{0: 9, 1: 1, 2: 80, 3: 10},
			prioTC: map[int]uint8{0: 0, 5: 5, 7: 7},
			buffer: []uint32{19872, 220896, 0, 0, 0, 0, 0, 0}, total: 4151520, prio2buf: map[int]uint8{5: 1, 3: 0},
		}},
		{"mlnx_qos-max_buffer_size-doca3.2-cx5.txt", want{
			dcbx: dcbxLLDManaged, trust: "dscp", pfc: []int{3}, delay: 7,
			dscp: map[uint8]uint8{26: 3, 48: 6, 0: 0}, apps: 64,
			tsa:    map[int]uint8{0: tsaETS, 3: tsaETS, 6: tsaVendor},
			bw:     map[int]uint8{0: 50, 3: 50},
			prioTC: map[int]uint8{0: 0, 1: 0, 2: 0, 4: 0, 5: 0, 7: 0, 3: 3, 6: 6},
			buffer: []uint32{130944, 130944, 0, 0, 0, 0, 0, 0}, total: 262016, prio2buf: map[int]uint8{3: 1, 0: 0},
		}},
		{"mlnx_qos-max_buffer_size-mlnx-tools-b8c08c52.txt", want{
			dcbx: dcbxHost, trust: "pcp", pfc: nil, delay: 7,
			tsa:    map[int]uint8{0: tsaVendor, 7: tsaVendor},
			prioTC: map[int]uint8{1: 0, 0: 1, 2: 2, 7: 7},
			buffer: []uint32{0, 187200, 0, 0, 0, 0, 0, 0}, total: 2044224, prio2buf: map[int]uint8{0: 1, 7: 1},
		}},
		{"mlnx_qos-no-buffer-line-netarbiter-full.txt", want{
			dcbx: dcbxHost, trust: "dscp", pfc: []int{3}, delay: 7,
			dscp: map[uint8]uint8{26: 3, 48: 6}, apps: 64,
			tsa:    map[int]uint8{0: tsaVendor, 3: tsaVendor},
			prioTC: map[int]uint8{1: 0, 0: 1, 3: 3},
		}},
		{"mlnx_qos-no-buffer-line-ofed4.4-head.txt", want{
			dcbx: dcbxHost, trust: "dscp", dscp: map[uint8]uint8{26: 3, 7: 0}, apps: 64, noPFC: true, noE: true,
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got := parseFile(t, tc.file)
			w := tc.want
			if got.DCBX == nil || *got.DCBX != w.dcbx {
				t.Errorf("DCBX = %v, want %d", got.DCBX, w.dcbx)
			}
			if got.Trust() != w.trust {
				t.Errorf("trust %q, want %q", got.Trust(), w.trust)
			}
			switch {
			case w.noPFC && got.PFC != nil:
				t.Errorf("PFC invented: %+v", got.PFC)
			case !w.noPFC && got.PFC == nil:
				t.Errorf("PFC lost")
			case !w.noPFC:
				if on := enabledList(got.PFC); !reflect.DeepEqual(on, w.pfc) || got.PFC.Delay != w.delay {
					t.Errorf("PFC on %v delay %d, want %v delay %d", on, got.PFC.Delay, w.pfc, w.delay)
				}
			}
			for d, p := range w.dscp {
				if got := got.PrioritiesForDSCP(d); !reflect.DeepEqual(got, []uint8{p}) {
					t.Errorf("DSCP %d -> %v, want [%d]", d, got, p)
				}
			}
			if len(got.Apps) != w.apps {
				t.Errorf("%d APP entries, want %d", len(got.Apps), w.apps)
			}
			if w.noE != (got.ETS == nil) {
				t.Fatalf("ETS = %+v", got.ETS)
			}
			if got.ETS != nil {
				for tcl, tsa := range w.tsa {
					if got.ETS.TSA[tcl] != tsa {
						t.Errorf("tc %d TSA %d, want %d", tcl, got.ETS.TSA[tcl], tsa)
					}
				}
				for tcl, bw := range w.bw {
					if got.ETS.TCTxBW[tcl] != bw {
						t.Errorf("tc %d bw %d, want %d", tcl, got.ETS.TCTxBW[tcl], bw)
					}
				}
				for p, tcl := range w.prioTC {
					if got.ETS.PrioTC[p] != tcl {
						t.Errorf("priority %d on tc %d, want %d", p, got.ETS.PrioTC[p], tcl)
					}
				}
			}
			if w.buffer == nil {
				if got.Buffer != nil {
					t.Errorf("Buffer invented: %+v", got.Buffer)
				}
				return
			}
			b := got.Buffer
			if b == nil {
				t.Fatal("no Buffer")
			}
			if !reflect.DeepEqual(b.Size[:], w.buffer) || b.TotalSize != w.total {
				t.Errorf("buffer sizes %v total %d, want %v total %d", b.Size, b.TotalSize, w.buffer, w.total)
			}
			for p, buf := range w.prio2buf {
				if b.Prio2Buffer[p] != buf {
					t.Errorf("priority %d in buffer %d, want %d", p, b.Prio2Buffer[p], buf)
				}
			}
		})
	}
}

// The buffer line's tail is one known key after exactly eight sizes.
func TestRecordedMlnxQosBufferLine(t *testing.T) {
	const head = "DCBX mode: OS controlled\nReceive buffer size (bytes): "
	for _, ok := range []struct {
		line  string
		total uint32
	}{
		{"0,187200,0,0,0,0,0,0,max_buffer_size=2044224", 2044224},
		{"130944,130944,0,0,0,0,0,0,total_size=1027728", 1027728},
		{"20016,156096,0,0,0,0,0,0,", 0},
	} {
		got, err := ParseRecorded(strings.NewReader(head + ok.line + "\n"))
		if err != nil {
			t.Errorf("%q: %v", ok.line, err)
			continue
		}
		if got.Buffer == nil || got.Buffer.TotalSize != ok.total {
			t.Errorf("%q: buffer %+v, want total %d", ok.line, got.Buffer, ok.total)
		}
	}
	for _, bad := range []string{
		"0,187200,0,0,0,0,0,0,0,max_buffer_size=2044224", // nine sizes
		"0,187200,0,0,0,0,0,max_buffer_size=2044224",     // seven
		"0,187200,0,0,0,0,0,0,max_buffer_size=2044224,total_size=1",
		"0,187200,0,0,0,0,0,0,max_buffer_size=",
		"0,187200,0,0,0,0,0,0,max_buffer_size=-1",
		"0,187200,0,0,0,0,0,0,headroom=12",
		"0,187200,0,0,0,0,0,max_buffer_size=2044224,0",
	} {
		if got, err := ParseRecorded(strings.NewReader(head + bad + "\n")); err == nil || !errors.Is(err, errMalformed) {
			t.Errorf("%q: %+v, %v; want a malformed error", bad, got, err)
		}
	}
}

// The command line of a pasted session is skipped whatever the shell's
// prompt; any other line that is not mlnx_qos output still fails.
func TestRecordedPromptLines(t *testing.T) {
	const body = "\nDCBX mode: OS controlled\nPriority trust state: pcp\n"
	for _, prompt := range []string{
		"root@lg-cmc-gpu-tf-prod-008:~# mlnx_qos -i ens4np0",
		"[root@gpu01 ~]# mlnx_qos -i ens4np0",
		"user@gpu01:~$ sudo mlnx_qos -i ens4np0",
		"$mlnx_qos -i eth2",
		"~# /usr/bin/mlnx_qos -i eth2",
		"mlnx_qos -i eth2",
		"admin@sw:~$ dcb pfc show dev eth0",
	} {
		if _, err := ParseRecorded(strings.NewReader(prompt + body)); err != nil {
			t.Errorf("%q: %v", prompt, err)
		}
	}
	for _, notPrompt := range []string{
		"run mlnx_qos -i eth2 to see it",
		"root@host:~# ethtool -S eth2",
		"Warning: mlnx_qos is deprecated",
	} {
		if _, err := ParseRecorded(strings.NewReader(notPrompt + body)); err == nil {
			t.Errorf("%q was skipped as a command line", notPrompt)
		}
	}
}
