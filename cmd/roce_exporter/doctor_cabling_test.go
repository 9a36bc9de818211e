package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/i18n"
	"github.com/roce-exporter/roce_exporter/node"
)

func TestCablingLines(t *testing.T) {
	snap := &node.Snapshot{
		Sources: map[string]node.SourceStatus{node.SourceLLDP: node.SourceOK},
		Devices: []*node.Device{
			{Name: "mlx5_0", Ports: []*node.Port{{Device: "mlx5_0", Number: 1, LinkLayer: node.LinkLayerEthernet, Interface: "ens1f0np0"}}},
			// RoCE LAG: the bond's slaves are the cables.
			{Name: "mlx5_bond_0", Ports: []*node.Port{{Device: "mlx5_bond_0", Number: 1, LinkLayer: node.LinkLayerEthernet,
				Interface: "bond0", BondSlaves: []string{"ens2f0np0", "ens2f1np1"}}}},
			{Name: "mlx5_3", Ports: []*node.Port{{Device: "mlx5_3", Number: 1, LinkLayer: node.LinkLayerInfiniBand, Interface: "ibp1s0"}}},
		},
		LLDP: map[string]*node.LLDPNeighbor{
			"ens1f0np0": {Interface: "ens1f0np0", ChassisName: "leaf-1", PortID: "Ethernet0", PortIDType: "local", PortDescr: "etp1"},
			"ens2f0np0": {Interface: "ens2f0np0", ChassisName: "leaf-1", PortID: "Ethernet8", PortIDType: "ifname", LinkDown: true},
		},
	}
	lines := cabling(snap)
	var buf bytes.Buffer
	printCabling(&textLayout{w: &buf, opts: textOptions{Width: 100}}, lines)
	got := buf.String()
	for _, want := range []string{
		"mlx5_0       ens1f0np0  cabled to leaf-1 Ethernet0 (\"etp1\")",
		"mlx5_bond_0  ens2f0np0  cabled to leaf-1 Ethernet8, last seen before the link went down",
		"mlx5_bond_0  ens2f1np1  no LLDP neighbour",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("cabling lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "ibp1s0") {
		t.Errorf("an InfiniBand port has no LLDP:\n%s", got)
	}
	if at := cablingOf(lines, "mlx5_bond_0", i18n.New(i18n.English)); at != "cabled to leaf-1 Ethernet8, last seen before the link went down" {
		t.Errorf("at line of the bond: %q", at)
	}
	if at := cablingOf(lines, "ens1f0np0", i18n.New(i18n.English)); !strings.HasPrefix(at, "cabled to leaf-1 Ethernet0") {
		t.Errorf("at line of an interface subject: %q", at)
	}
	// lldpd not read: no cabling section at all, not "no neighbour" everywhere.
	snap.Sources[node.SourceLLDP] = node.SourceAbsent
	if lines := cabling(snap); lines != nil {
		t.Errorf("lldp absent, yet %v", lines)
	}
}
