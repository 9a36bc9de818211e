package health

import (
	"testing"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/node"
)

func neighbour(edit func(n *node.LLDPNeighbor)) func(s *node.Snapshot) {
	return func(s *node.Snapshot) { edit(s.LLDP[netdevName(1)]) }
}

// onVLANDevice moves rail 1's RoCE v2 GID of the compute IP onto a VLAN
// device, as when RoCE is tagged.
func onVLANDevice(s *node.Snapshot) {
	for i := range port(s, 1).GIDs {
		port(s, 1).GIDs[i].Interface = netdevName(1) + ".100"
	}
}

func TestSwitchPortMTUCheck(t *testing.T) {
	const id = "switch_port_mtu"
	runCases(t, []checkCase{
		{name: "9216 for MTU 9000", id: id, subject: netdevName(1), want: StatusOK,
			msg: []string{"leaf-1 Ethernet8 takes frames of up to 9216 bytes", "needs frames of 9018 bytes"}},
		{name: "a 1500-byte switch port", snap: neighbour(func(n *node.LLDPNeighbor) { n.MaxFrameSize = 1518 }), id: id, subject: netdevName(1), want: StatusFail,
			msg: []string{"at most 1518 bytes, less than ens2f0np0's MTU 9000", "drops every larger packet"},
			fix: []string{"raise the MTU of leaf-1 port Ethernet8", "ip link set dev ens2f0np0 mtu 1500", "lldpcli show neighbors details ports ens2f0np0"}},
		{name: "other rail unaffected", snap: neighbour(func(n *node.LLDPNeighbor) { n.MaxFrameSize = 1518 }), id: id, subject: netdevName(0), want: StatusOK},
		{name: "frame size exactly the MTU", snap: neighbour(func(n *node.LLDPNeighbor) { n.MaxFrameSize = 9000 }), id: id, subject: netdevName(1), want: StatusWarn,
			msg: []string{"short of the 9018 ens2f0np0's MTU 9000 needs", "without them"}},
		{name: "exactly the frame", snap: neighbour(func(n *node.LLDPNeighbor) { n.MaxFrameSize = 9018 }), id: id, subject: netdevName(1), want: StatusOK},
		{name: "tagged RoCE needs 4 more", snap: func(s *node.Snapshot) { onVLANDevice(s); s.LLDP[netdevName(1)].MaxFrameSize = 9018 },
			id: id, subject: netdevName(1), want: StatusWarn, msg: []string{"9022", "and VLAN tag"}},
		// The interface at 1500 but the plan at 9000: the path is judged for the plan.
		{name: "plan MTU above the interface's", snap: func(s *node.Snapshot) {
			s.Interfaces[netdevName(1)].MTU = 1500
			s.LLDP[netdevName(1)].MaxFrameSize = 1518
		}, id: id, subject: netdevName(1), want: StatusFail, msg: []string{"less than the plan's MTU 9000"}},
		{name: "no plan: the interface's MTU", noPlan: true, snap: func(s *node.Snapshot) {
			s.Interfaces[netdevName(1)].MTU = 1500
			s.LLDP[netdevName(1)].MaxFrameSize = 1518
		}, id: id, subject: netdevName(1), want: StatusOK, msg: []string{"ens2f0np0's MTU 1500 needs frames of 1518 bytes"}},
		{name: "no MFS TLV", snap: neighbour(func(n *node.LLDPNeighbor) { n.MaxFrameSize = 0 }), id: id, subject: netdevName(1), want: StatusSkipped,
			msg: []string{"sends no maximum frame size TLV", "SONiC"}},
		{name: "no neighbour", snap: func(s *node.Snapshot) { delete(s.LLDP, netdevName(1)) }, id: id, subject: netdevName(1), want: StatusSkipped,
			msg: []string{"no LLDP neighbour on ens2f0np0"}},
		{name: "link down", snap: neighbour(func(n *node.LLDPNeighbor) { n.LinkDown = true }), id: id, subject: netdevName(1), want: StatusSkipped,
			msg: []string{"link of ens2f0np0 is down"}},
		{name: "lldp collector off", snap: func(s *node.Snapshot) { delete(s.Sources, node.SourceLLDP); s.LLDP = nil }, id: id, subject: netdevName(1), want: StatusSkipped,
			msg: []string{"--collector.lldp"}},
	})
}

func TestSwitchPortVLANCheck(t *testing.T) {
	const id = "switch_port_vlan"
	runCases(t, []checkCase{
		{name: "untagged in the plan's VLAN", id: id, subject: netdevName(1), want: StatusOK, msg: []string{"untagged frames of ens2f0np0 land in VLAN 100 on leaf-1 Ethernet8"}},
		{name: "untagged in another VLAN", snap: neighbour(func(n *node.LLDPNeighbor) { n.PVID, n.VLANs = 10, []int{10, 100} }),
			id: id, subject: netdevName(1), want: StatusFail, msg: []string{"land in VLAN 10", "port VLAN ID 10, VLANs 10, 100", "not the plan's compute VLAN 100"},
			fix: []string{"put leaf-1 port Ethernet8 in VLAN 100", "untagged (access, native)"}},
		{name: "tagged and carried", snap: func(s *node.Snapshot) {
			onVLANDevice(s)
			s.LLDP[netdevName(1)].PVID, s.LLDP[netdevName(1)].VLANs = 1, []int{1, 100}
		}, id: id, subject: netdevName(1), want: StatusOK, msg: []string{"tagged (on ens2f0np0.100)", "carries VLAN 100"}},
		{name: "tagged and not carried", snap: func(s *node.Snapshot) {
			onVLANDevice(s)
			s.LLDP[netdevName(1)].PVID, s.LLDP[netdevName(1)].VLANs = 100, []int{200}
		}, id: id, subject: netdevName(1), want: StatusFail, msg: []string{"does not carry VLAN 100"}, fix: []string{"tagged (trunk)"}},
		{name: "no plan VLAN: says what the switch announces", plan: func(p *config.Plan) { p.Expectations.VLAN = nil },
			id: id, subject: netdevName(1), want: StatusSkipped, msg: []string{"the plan names no compute VLAN", "port VLAN ID 100, VLANs 100"}},
		{name: "no VLAN TLVs", snap: neighbour(func(n *node.LLDPNeighbor) { n.PVID, n.VLANs = 0, nil }),
			id: id, subject: netdevName(1), want: StatusSkipped, msg: []string{"sends no VLAN TLVs"}},
		{name: "VLAN names without a PVID", snap: neighbour(func(n *node.LLDPNeighbor) { n.PVID = 0 }),
			id: id, subject: netdevName(1), want: StatusSkipped, msg: []string{"no port VLAN ID"}},
	})
}

func TestSwitchPortSpeedCheck(t *testing.T) {
	const id = "switch_port_speed"
	runCases(t, []checkCase{
		{name: "400G both ends", id: id, subject: netdevName(1), want: StatusOK, msg: []string{"leaf-1 Ethernet8 runs 400GbaseDR4 (400 Gb/s, auto-negotiation on)"}},
		{name: "switch at 100G", snap: neighbour(func(n *node.LLDPNeighbor) {
			n.MACPHY = &node.LLDPMACPHY{MAU: "100GbaseCR4 - 100GBASE-R PCS/PMA over 4 lane shielded copper balanced cable"}
		}), id: id, subject: netdevName(1), want: StatusWarn, msg: []string{"says it runs 100GbaseCR4 (100 Gb/s, no auto-negotiation) while ens2f0np0 runs at 400 Gb/s"},
			fix: []string{"ethtool ens2f0np0"}},
		{name: "MAU lldpd cannot name", snap: neighbour(func(n *node.LLDPNeighbor) { n.MACPHY.MAU = "unknown" }),
			id: id, subject: netdevName(1), want: StatusSkipped, msg: []string{`"unknown"`}},
		{name: "no MAC/PHY TLV", snap: neighbour(func(n *node.LLDPNeighbor) { n.MACPHY = nil }),
			id: id, subject: netdevName(1), want: StatusSkipped, msg: []string{"no MAC/PHY TLV"}},
		{name: "local speed unknown", snap: func(s *node.Snapshot) { s.Interfaces[netdevName(1)].SpeedMbps = -1 },
			id: id, subject: netdevName(1), want: StatusSkipped, msg: []string{"speed of ens2f0np0 is unknown"}},
	})
}
