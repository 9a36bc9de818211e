package probes

import (
	"slices"
	"testing"

	"github.com/roce-exporter/roce_exporter/config"
)

// The scheduler pairs local rail i with the peer's rail i, in the order the
// plan lists each node's compute interfaces.
func TestLinksPairRails(t *testing.T) {
	node := func(devices []string) *config.Node {
		n := &config.Node{Name: "node02"}
		for i, d := range devices {
			n.Interfaces = append(n.Interfaces, &config.ComputeInterface{Rail: i, RDMADevice: d})
		}
		return n
	}
	tests := []struct {
		local, peer []string
		want        [][2]string
	}{
		{[]string{"mlx5_0", "mlx5_1"}, []string{"mlx5_0", "mlx5_1"}, [][2]string{{"mlx5_0", "mlx5_0"}, {"mlx5_1", "mlx5_1"}}},
		// Pairing is by position in the plan, not by name.
		{[]string{"mlx5_0", "mlx5_3"}, []string{"mlx5_2", "mlx5_5"}, [][2]string{{"mlx5_0", "mlx5_2"}, {"mlx5_3", "mlx5_5"}}},
		// Mismatched counts: the common prefix.
		{[]string{"mlx5_0", "mlx5_1", "mlx5_2"}, []string{"mlx5_0"}, [][2]string{{"mlx5_0", "mlx5_0"}}},
		{nil, []string{"mlx5_0"}, [][2]string{}},
	}
	for _, tt := range tests {
		s := &Scheduler{self: node(tt.local)}
		got := [][2]string{}
		for _, l := range s.links(node(tt.peer)) {
			got = append(got, [2]string{l.Device, l.PeerDevice})
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("links(%v, %v) = %v, want %v", tt.local, tt.peer, got, tt.want)
		}
	}
}
