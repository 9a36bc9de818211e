package nicstats

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/roce-exporter/roce_exporter/node"
)

// resolved applies a mapping and node.ResolveCoSDiscards as the reader
// does, and indexes the values.
func resolved(t *testing.T, st Stats) map[series]uint64 {
	t.Helper()
	m := NewMapping(st.Names)
	var values []node.EthtoolValue
	if err := m.Each(st.Values, func(e Entry, v uint64) {
		values = append(values, node.EthtoolValue{Family: e.Family, Direction: e.Direction, Priority: e.Priority, Label: e.Label, Value: v})
	}); err != nil {
		t.Fatal(err)
	}
	out := map[series]uint64{}
	for _, v := range node.ResolveCoSDiscards(values) {
		k := series{v.Family, v.Direction, v.Priority, v.Label}
		if _, dup := out[k]; dup {
			t.Errorf("series %v twice", k)
		}
		switch v.Family {
		case node.FamilyCoSBytes, node.FamilyCoSPackets, node.FamilyCoSDiscards:
			t.Errorf("internal family %v left after resolving", v.Family)
		}
		out[k] = v.Value
	}
	return out
}

var (
	phyRX   = series{family: node.FamilyPHYDiscards, dir: node.DirRX, prio: -1}
	phyTX   = series{family: node.FamilyPHYDiscards, dir: node.DirTX, prio: -1}
	queueRX = series{family: node.FamilyRXQueueDiscards, dir: node.DirRX, prio: -1}
)

// Real captures with drops (testdata/*.source): each kind of drop lands in
// its one family, once: the port's own discards in phy_discards, the host's
// empty receive rings in rx_queue_discards, never the per-ring lines.
func TestDropCountersRealCaptures(t *testing.T) {
	for _, tc := range []struct {
		file string
		want map[series]uint64
		// absent are series that must not be there.
		absent []series
	}{
		{"bnxt_en-ethq-discards-ethtool-S.txt", map[series]uint64{
			phyRX: 49337, phyTX: 0, queueRX: 655430134,
			// Every CoS queue and priority counter reads 0 on this NIC,
			// so whichever queue a priority is on, it dropped 0.
			{node.FamilyPriorityDiscards, node.DirRX, 3, node.DiscardOther}: 0,
		}, nil},
		{"bnxt_en-rhel8-stat_discard-ethtool-S.txt", map[series]uint64{
			phyRX: 14, phyTX: 13, queueRX: 13,
			{node.FamilyPriorityDiscards, node.DirRX, 3, node.DiscardOther}: 0,
		}, nil},
		{"mlx5-out_of_buffer-5.15-ethtool-S.txt", map[series]uint64{
			phyRX: 58591428329, phyTX: 0, queueRX: 990473555,
			{node.FamilyPriorityDiscards, node.DirRX, 0, node.DiscardOther}: 58591314012,
		}, nil},
		{"mlx5-out_of_buffer-6.5-ethtool-S.txt", map[series]uint64{
			phyRX: 441063206498, queueRX: 534918379,
			{node.FamilyPriorityDiscards, node.DirRX, 0, node.DiscardOther}: 441063206498,
		}, nil},
		{"ice-e810-ethq-ethtool-S.txt", map[series]uint64{
			phyRX: 0,
			{node.FamilyPFCPauseFrames, node.DirRX, 3, ""}: 0,
		}, []series{queueRX, phyTX}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got := resolved(t, mustParseFile(t, tc.file))
			for s, want := range tc.want {
				if v, ok := got[s]; !ok || v != want {
					t.Errorf("%v = %d, %v; want %d", s, v, ok, want)
				}
			}
			for _, s := range tc.absent {
				if v, ok := got[s]; ok {
					t.Errorf("%v = %d, want none", s, v)
				}
			}
		})
	}
}

func TestDropCaptureSources(t *testing.T) {
	for _, f := range []string{"bnxt_en-ethq-discards-ethtool-S.txt", "bnxt_en-rhel8-stat_discard-ethtool-S.txt",
		"mlx5-out_of_buffer-5.15-ethtool-S.txt", "mlx5-out_of_buffer-6.5-ethtool-S.txt", "ice-e810-ethq-ethtool-S.txt"} {
		if _, err := os.Stat(filepath.Join("testdata", f+".source")); err != nil {
			t.Errorf("%s has no provenance: %v", f, err)
		}
	}
}
