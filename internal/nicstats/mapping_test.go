package nicstats

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/node"
)

// series identifies one output series in tests.
type series struct {
	family node.Family
	dir    string
	prio   int
	label  string
}

func (s series) String() string {
	return fmt.Sprintf("%s{dir=%q,prio=%d,label=%q}", s.family, s.dir, s.prio, s.label)
}

type emitted struct {
	raw   string
	value uint64
}

// collect applies a mapping the way a collector would and indexes the result.
func collect(t *testing.T, st Stats) (map[series]emitted, *Mapping) {
	t.Helper()
	m := NewMapping(st.Names)
	out := make(map[series]emitted)
	err := m.Each(st.Values, func(e Entry, v uint64) {
		k := series{e.Family, e.Direction, e.Priority, e.Label}
		if prev, dup := out[k]; dup {
			t.Errorf("series %v emitted twice (%s and %s)", k, prev.raw, e.Raw)
		}
		if st.Names[e.Index] != e.Raw {
			t.Errorf("entry %q has index %d which names %q", e.Raw, e.Index, st.Names[e.Index])
		}
		out[k] = emitted{e.Raw, v}
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, m
}

// expect checks that series s was emitted from raw name raw, with the value
// the fixture holds for that name.
func expect(t *testing.T, st Stats, got map[series]emitted, s series, raw string) {
	t.Helper()
	want, ok := st.Get(raw)
	if !ok {
		t.Fatalf("fixture has no %q", raw)
	}
	e, ok := got[s]
	if !ok {
		t.Errorf("%v not emitted (want it from %q)", s, raw)
		return
	}
	if e.raw != raw || e.value != want {
		t.Errorf("%v = %q:%d, want %q:%d", s, e.raw, e.value, raw, want)
	}
}

func pfc(f node.Family, dir string, prio int) series { return series{family: f, dir: dir, prio: prio} }

func TestMappingMLX5PFC3(t *testing.T) {
	st := mustParseFile(t, "mlx5-pfc3-ethtool-S.txt")
	got, _ := collect(t, st)

	expect(t, st, got, pfc(node.FamilyPFCPauseFrames, node.DirRX, 3), "rx_prio3_pause")
	expect(t, st, got, pfc(node.FamilyPFCPauseFrames, node.DirTX, 3), "tx_prio3_pause")
	expect(t, st, got, pfc(node.FamilyPFCPauseDuration, node.DirRX, 3), "rx_prio3_pause_duration")
	expect(t, st, got, pfc(node.FamilyPFCPauseDuration, node.DirTX, 3), "tx_prio3_pause_duration")
	expect(t, st, got, pfc(node.FamilyPFCPauseTransitions, node.DirRX, 3), "rx_prio3_pause_transition")
	expect(t, st, got, series{family: node.FamilyPFCPauseStormEvents, prio: -1, label: node.StormWarning}, "tx_pause_storm_warning_events")
	expect(t, st, got, series{family: node.FamilyPFCPauseStormEvents, prio: -1, label: node.StormError}, "tx_pause_storm_error_events")
	for _, p := range []int{0, 3} {
		ps := strconv.Itoa(p)
		expect(t, st, got, pfc(node.FamilyPriorityBytes, node.DirRX, p), "rx_prio"+ps+"_bytes")
		expect(t, st, got, pfc(node.FamilyPriorityBytes, node.DirTX, p), "tx_prio"+ps+"_bytes")
		expect(t, st, got, pfc(node.FamilyPriorityPackets, node.DirRX, p), "rx_prio"+ps+"_packets")
		expect(t, st, got, pfc(node.FamilyPriorityPackets, node.DirTX, p), "tx_prio"+ps+"_packets")
		expect(t, st, got, series{node.FamilyPriorityDiscards, node.DirRX, p, node.DiscardOther}, "rx_prio"+ps+"_discards")
	}
	expect(t, st, got, series{family: node.FamilyPHYDiscards, dir: node.DirRX, prio: -1}, "rx_discards_phy")
	expect(t, st, got, series{family: node.FamilyPHYDiscards, dir: node.DirTX, prio: -1}, "tx_discards_phy")
	expect(t, st, got, series{family: node.FamilyPHYCRCErrors, prio: -1}, "rx_crc_errors_phy")
	expect(t, st, got, series{family: node.FamilyPHYUncorrectedSymbolErrors, prio: -1}, "rx_pcs_symbol_err_phy")
	expect(t, st, got, series{family: node.FamilyPHYCorrectedBits, prio: -1}, "rx_corrected_bits_phy")
	expect(t, st, got, series{family: node.FamilyPHYLinkDownEvents, prio: -1}, "link_down_events_phy")

	expect(t, st, got, series{family: node.FamilyRXQueueDiscards, dir: node.DirRX, prio: -1}, "rx_out_of_buffer")
	// 5 PFC + 2 storm + 2 priorities x 5 traffic + 2 phy discards + 4 phy
	// + the receive-queue drops.
	if len(got) != 5+2+10+2+4+1 {
		t.Errorf("emitted %d series, want %d: %v", len(got), 24, got)
	}
	// PFC is only on priority 3: nothing may be invented for the others,
	// and global pause is off so its series must be absent too.
	for s := range got {
		if s.prio != -1 && s.prio != 0 && s.prio != 3 {
			t.Errorf("series for absent priority: %v", s)
		}
		if (s.family == node.FamilyPFCPauseFrames || s.family == node.FamilyPFCPauseDuration || s.family == node.FamilyPFCPauseTransitions) && s.prio != 3 {
			t.Errorf("PFC series for a priority without PFC: %v", s)
		}
		if s.family == node.FamilyGlobalPauseFrames {
			t.Errorf("global pause series without global pause counters: %v", s)
		}
	}
}

func TestMappingMLX5PFC34(t *testing.T) {
	st := mustParseFile(t, "mlx5-pfc34-ethtool-S.txt")
	got, m := collect(t, st)
	for _, p := range []int{3, 4} {
		ps := strconv.Itoa(p)
		expect(t, st, got, pfc(node.FamilyPFCPauseFrames, node.DirRX, p), "rx_prio"+ps+"_pause")
		expect(t, st, got, pfc(node.FamilyPFCPauseDuration, node.DirTX, p), "tx_prio"+ps+"_pause_duration")
		expect(t, st, got, pfc(node.FamilyPFCPauseTransitions, node.DirRX, p), "rx_prio"+ps+"_pause_transition")
		// Per traffic class despite the name: the index is the TC.
		expect(t, st, got, series{node.FamilyTCDiscards, node.DirRX, p, node.DiscardBuffer}, "rx_prio"+ps+"_buf_discard")
		expect(t, st, got, series{node.FamilyTCDiscards, node.DirRX, p, node.DiscardCongestion}, "rx_prio"+ps+"_cong_discard")
		expect(t, st, got, series{node.FamilyTCECNMarkedPackets, node.DirRX, p, ""}, "rx_prio"+ps+"_marked")
	}
	for s := range got {
		if s.family == node.FamilyPriorityDiscards && s.label != node.DiscardOther {
			t.Errorf("per-TC counter reported per priority: %v", s)
		}
	}
	expect(t, st, got, series{family: node.FamilyGlobalPauseFrames, dir: node.DirRX, prio: -1}, "rx_global_pause")
	expect(t, st, got, series{family: node.FamilyGlobalPauseFrames, dir: node.DirTX, prio: -1}, "tx_global_pause")

	pfcPrios := map[int]bool{}
	perPrioTraffic := map[int]bool{}
	for s := range got {
		switch s.family {
		case node.FamilyPFCPauseFrames, node.FamilyPFCPauseDuration, node.FamilyPFCPauseTransitions:
			pfcPrios[s.prio] = true
		case node.FamilyPriorityBytes:
			perPrioTraffic[s.prio] = true
		}
	}
	if len(pfcPrios) != 2 || !pfcPrios[3] || !pfcPrios[4] {
		t.Errorf("PFC series for priorities %v, want exactly 3 and 4", pfcPrios)
	}
	if len(perPrioTraffic) != 8 {
		t.Errorf("per-priority traffic for %d priorities, mlx5 always lists 8", len(perPrioTraffic))
	}
	if len(m.Duplicates()) != 0 {
		t.Errorf("unexpected duplicates: %+v", m.Duplicates())
	}
}

func TestMappingBnxt(t *testing.T) {
	st := mustParseFile(t, "bnxt_en-ethtool-S.txt")
	got, _ := collect(t, st)
	for p := 0; p < 8; p++ {
		ps := strconv.Itoa(p)
		expect(t, st, got, pfc(node.FamilyPFCPauseFrames, node.DirRX, p), "rx_pfc_ena_frames_pri"+ps)
		expect(t, st, got, pfc(node.FamilyPFCPauseFrames, node.DirTX, p), "tx_pfc_ena_frames_pri"+ps)
		expect(t, st, got, pfc(node.FamilyPFCPauseDuration, node.DirRX, p), "pfc_pri"+ps+"_rx_duration_us")
		expect(t, st, got, pfc(node.FamilyPFCPauseDuration, node.DirTX, p), "pfc_pri"+ps+"_tx_duration_us")
		expect(t, st, got, pfc(node.FamilyPFCPauseTransitions, node.DirRX, p), "pfc_pri"+ps+"_rx_transitions")
		expect(t, st, got, pfc(node.FamilyPFCPauseTransitions, node.DirTX, p), "pfc_pri"+ps+"_tx_transitions")
		expect(t, st, got, pfc(node.FamilyPriorityBytes, node.DirRX, p), "rx_bytes_pri"+ps)
		expect(t, st, got, pfc(node.FamilyPriorityBytes, node.DirTX, p), "tx_bytes_pri"+ps)
		expect(t, st, got, pfc(node.FamilyPriorityPackets, node.DirRX, p), "rx_packets_pri"+ps)
		expect(t, st, got, pfc(node.FamilyPriorityPackets, node.DirTX, p), "tx_packets_pri"+ps)
	}
	expect(t, st, got, series{family: node.FamilyPHYCRCErrors, prio: -1}, "rx_fcs_err_frames")
	expect(t, st, got, series{family: node.FamilyPHYUncorrectedSymbolErrors, prio: -1}, "rx_pcs_symbol_err")
	expect(t, st, got, series{family: node.FamilyPHYCorrectedBits, prio: -1}, "rx_corrected_bits")
	expect(t, st, got, series{family: node.FamilyPHYLinkDownEvents, prio: -1}, "link_down_events")
	expect(t, st, got, series{family: node.FamilyGlobalPauseFrames, dir: node.DirRX, prio: -1}, "rx_pause_frames")
	expect(t, st, got, series{family: node.FamilyGlobalPauseFrames, dir: node.DirTX, prio: -1}, "tx_pause_frames")

	// Per-ring "[N]: rx_bytes" and the port-wide rx_bytes are not
	// per-priority and stay unmapped; the per-CoS counters are CoS queues,
	// not priorities: they only feed node.ResolveCoSDiscards.
	for _, raw := range []string{"[0]: rx_ucast_bytes", "[0]: rx_discards", "rx_bytes", "rx_pfc_frames", "rx_discard_bytes_cos0"} {
		if e, ok := node.ClassifyEthtool(raw); ok {
			t.Errorf("%q classified as %v", raw, e.Family)
		}
	}
	for _, raw := range []string{"rx_bytes_cos1", "rx_discard_packets_cos0"} {
		if e, ok := node.ClassifyEthtool(raw); !ok || e.Family.Exported() {
			t.Errorf("%q classified as %v (%v), want an internal CoS family", raw, e.Family, ok)
		}
	}
}

func TestMappingIce(t *testing.T) {
	for _, tc := range []struct {
		file           string
		rxXoff, txXoff string
		linkRX, linkTX string
		crc            string
		rxXon          string
		dropped        string
	}{
		{"ice-ethtool-S.txt", "rx_priority_%d_xoff.nic", "tx_priority_%d_xoff.nic", "link_xoff_rx.nic", "link_xoff_tx.nic", "rx_crc_errors.nic", "rx_priority_3_xon.nic", "rx_dropped.nic"},
		{"ice-unified-ethtool-S.txt", "port-rx-xoff_prio-%d_events", "port-tx-xoff_prio-%d_events", "port-rx-xoff_events", "port-tx-xoff_events", "port-rx-crc_errors", "port-rx-xon_prio-3_events", "port-rx-dropped_pkts"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			st := mustParseFile(t, tc.file)
			got, _ := collect(t, st)
			for p := 0; p < 8; p++ {
				expect(t, st, got, pfc(node.FamilyPFCPauseFrames, node.DirRX, p), fmt.Sprintf(tc.rxXoff, p))
				expect(t, st, got, pfc(node.FamilyPFCPauseFrames, node.DirTX, p), fmt.Sprintf(tc.txXoff, p))
			}
			expect(t, st, got, series{family: node.FamilyGlobalPauseFrames, dir: node.DirRX, prio: -1}, tc.linkRX)
			expect(t, st, got, series{family: node.FamilyGlobalPauseFrames, dir: node.DirTX, prio: -1}, tc.linkTX)
			expect(t, st, got, series{family: node.FamilyPHYCRCErrors, prio: -1}, tc.crc)
			// XON frame counts are not state transitions (see classifier).
			if e, ok := node.ClassifyEthtool(tc.rxXon); ok {
				t.Errorf("%s classified as %v", tc.rxXon, e.Family)
			}
			expect(t, st, got, series{family: node.FamilyPHYDiscards, dir: node.DirRX, prio: -1}, tc.dropped)
			if want := 16 + 2 + 1 + 1; len(got) != want {
				t.Errorf("emitted %d series, want %d", len(got), want)
			}
		})
	}
}

func TestMappingTableChange(t *testing.T) {
	a := mustParseFile(t, "mlx5-pfc3-ethtool-S.txt")
	b := mustParseFile(t, "mlx5-pfc34-ethtool-S.txt")
	m := NewMapping(a.Names)
	if !m.Matches(a.Names) {
		t.Fatal("mapping does not match its own table")
	}
	if m.Matches(b.Names) {
		t.Error("mapping matches a different table")
	}
	called := false
	if err := m.Each(b.Values, func(Entry, uint64) { called = true }); !errors.Is(err, ErrTableMismatch) || called {
		t.Errorf("Each on another table's values: err %v, called %v", err, called)
	}

	// PFC moved from priority 3 to 5: same count, different names. Only the
	// fingerprint can tell.
	moved := make([]string, len(a.Names))
	for i, n := range a.Names {
		if strings.HasPrefix(n, "rx_prio3_pause") || strings.HasPrefix(n, "tx_prio3_pause") {
			n = strings.Replace(n, "prio3", "prio5", 1)
		}
		moved[i] = n
	}
	if len(moved) != m.Len() || m.Matches(moved) {
		t.Error("same-length table with PFC on another priority matched")
	}
	got, _ := collect(t, Stats{Names: moved, Values: a.Values})
	if _, ok := got[pfc(node.FamilyPFCPauseFrames, node.DirRX, 5)]; !ok {
		t.Error("rebuilt mapping lacks priority 5")
	}
	if _, ok := got[pfc(node.FamilyPFCPauseFrames, node.DirRX, 3)]; ok {
		t.Error("rebuilt mapping still has priority 3")
	}
}

func TestFingerprintSeparatesNames(t *testing.T) {
	if Fingerprint([]string{"ab", "c"}) == Fingerprint([]string{"a", "bc"}) {
		t.Error("name boundaries do not affect the fingerprint")
	}
	if Fingerprint(nil) == Fingerprint([]string{""}) {
		t.Error("empty table and one empty name collide")
	}
}

func TestMappingDuplicates(t *testing.T) {
	names := []string{"rx_packets", "rx_crc_errors_phy", "rx_fcs_err_frames", "rx_prio3_pause", "rx_pfc_ena_frames_pri3", "rx_crc_errors_phy"}
	values := []uint64{1, 2, 3, 4, 5, 6}
	m := NewMapping(names)
	var raws []string
	if err := m.Each(values, func(e Entry, v uint64) { raws = append(raws, fmt.Sprintf("%s=%d", e.Raw, v)) }); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(raws, ","); got != "rx_crc_errors_phy=2,rx_prio3_pause=4" {
		t.Errorf("emitted %s", got)
	}
	d := m.Duplicates()
	if len(d) != 3 {
		t.Fatalf("duplicates = %+v", d)
	}
	for i, w := range []Duplicate{
		{Raw: "rx_fcs_err_frames", Index: 2, KeptRaw: "rx_crc_errors_phy", KeptIndex: 1},
		{Raw: "rx_pfc_ena_frames_pri3", Index: 4, KeptRaw: "rx_prio3_pause", KeptIndex: 3},
		{Raw: "rx_crc_errors_phy", Index: 5, KeptRaw: "rx_crc_errors_phy", KeptIndex: 1},
	} {
		if d[i] != w {
			t.Errorf("duplicate %d = %+v, want %+v", i, d[i], w)
		}
	}
}

// bigTable builds an mlx5-like string table with many channels, the shape
// that makes the scrape path expensive on large nodes.
func bigTable(channels int) Stats {
	var names []string
	for c := 0; c < channels; c++ {
		for _, s := range []string{"packets", "bytes", "csum_complete", "csum_unnecessary", "xdp_drop", "lro_packets", "gro_packets", "wqe_err", "buff_alloc_err", "cqe_compress_blks", "cache_reuse", "congst_umr", "arfs_err", "recover"} {
			names = append(names, fmt.Sprintf("rx%d_%s", c, s))
		}
		for _, s := range []string{"packets", "bytes", "tso_packets", "tso_bytes", "csum_partial", "added_vlan_packets", "nop", "stopped", "dropped", "xmit_more", "recover", "cqes", "wake", "cqe_err"} {
			names = append(names, fmt.Sprintf("tx%d_%s", c, s))
		}
	}
	for p := 0; p < 8; p++ {
		for _, f := range []string{"rx_prio%d_bytes", "rx_prio%d_packets", "rx_prio%d_discards", "tx_prio%d_bytes", "tx_prio%d_packets", "rx_prio%d_buf_discard", "rx_prio%d_cong_discard", "rx_prio%d_marked"} {
			names = append(names, fmt.Sprintf(f, p))
		}
	}
	for _, f := range []string{"rx_prio%d_pause", "rx_prio%d_pause_duration", "tx_prio%d_pause", "tx_prio%d_pause_duration", "rx_prio%d_pause_transition"} {
		names = append(names, fmt.Sprintf(f, 3))
	}
	names = append(names, "rx_discards_phy", "rx_crc_errors_phy", "link_down_events_phy", "tx_pause_storm_error_events")
	values := make([]uint64, len(names))
	for i := range values {
		values[i] = uint64(i) * 7
	}
	return Stats{Names: names, Values: values}
}

func TestEachDoesNotAllocate(t *testing.T) {
	st := bigTable(64)
	m := NewMapping(st.Names)
	var sum float64
	fn := func(e Entry, v uint64) { sum += float64(v) * float64(e.Priority+2) }
	allocs := testing.AllocsPerRun(100, func() {
		if err := m.Each(st.Values, fn); err != nil {
			t.Fatal(err)
		}
		if !m.Matches(st.Names) {
			t.Fatal("no match")
		}
	})
	if allocs != 0 {
		t.Errorf("Each+Matches allocated %v times per scrape", allocs)
	}
	if len(m.Entries()) != 8*8+5+4 {
		t.Errorf("mapped %d entries", len(m.Entries()))
	}
}

func BenchmarkMappingEach(b *testing.B) {
	st := bigTable(256) // ~7.2k statistics
	m := NewMapping(st.Names)
	var sum uint64
	fn := func(_ Entry, v uint64) { sum += v }
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := m.Each(st.Values, fn); err != nil {
			b.Fatal(err)
		}
	}
	_ = sum
}

// BenchmarkMatches is the per-scrape cost of detecting a changed table.
func BenchmarkMatches(b *testing.B) {
	st := bigTable(256)
	m := NewMapping(st.Names)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !m.Matches(st.Names) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkNewMapping(b *testing.B) {
	st := bigTable(256)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		NewMapping(st.Names)
	}
}
