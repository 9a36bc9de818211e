package health

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/roce-exporter/roce_exporter/node"
)

// The switch's own view of the link, from what its port announces over LLDP
// (the local lldpd decodes the TLVs, internal/lldpcli reads them): the
// largest frame it takes, its VLANs and its speed. The host cannot see the
// switch's configuration, but a switch that sends these TLVs says it; one
// that does not leaves them unknown, which is no pass.

// ethernetFrameOverhead is what an Ethernet frame adds to its IP MTU: the
// 14-byte header and the 4-byte FCS. IEEE 802.3's maximum frame size counts
// both (1518 bytes for MTU 1500), and a VLAN tag adds 4 more (1522).
const (
	ethernetFrameOverhead = 18
	vlanTagBytes          = 4
)

// lldpTargets yields the Ethernet targets with an LLDP neighbour whose link
// is up, reporting the rest.
func (e *env) lldpTargets(r *results, what string, each func(t *target, n *node.LLDPNeighbor)) {
	e.ethernetTargets(r, what, false, func(t *target) {
		n := e.snap.LLDP[t.netdev]
		switch {
		case n != nil && n.LinkDown:
			r.skip(t.subject(), Textf("the link of %s is down: its switch port's LLDP (%s) is the last one seen", t.netdev, switchPortText(n)))
		case n != nil:
			each(t, n)
		default:
			if why := e.sourceReason(node.SourceLLDP, Textf("LLDP neighbours")); !why.Empty() {
				r.skip(t.subject(), why)
				return
			}
			r.skip(t.subject(), Textf("no LLDP neighbour on %s: the switch sends no LLDP there, or the NIC's firmware consumes it (DCBX in firmware); `lldpcli show neighbors` shows what lldpd receives", t.netdev))
		}
	})
}

func switchPortText(n *node.LLDPNeighbor) string {
	return n.Switch() + " " + n.SwitchPort()
}

// tagged reports whether the target's RoCE runs on a VLAN device: the GID
// that carries its compute IP is on another netdev than the port's own.
func tagged(t *target) bool {
	g := roceGIDNetdev(t)
	return g != "" && g != t.netdev
}

func checkSwitchPortMTU(e *env, r *results) {
	exp, hasPlan := e.expectations()
	e.lldpTargets(r, "the switch port's MTU", func(t *target, n *node.LLDPNeighbor) {
		subj, sw := t.subject(), switchPortText(n)
		if n.MaxFrameSize == 0 {
			r.skip(subj, Textf("the switch port (%s) sends no maximum frame size TLV, so its MTU is unknown from the host (switches that run lldpd, such as SONiC and Cumulus, never send it): check it on the switch", sw))
			return
		}
		mtu, whose := 0, ""
		if t.iface != nil && t.iface.MTU > 0 {
			mtu, whose = t.iface.MTU, fmt.Sprintf("%s's MTU %d", t.netdev, t.iface.MTU)
		}
		if hasPlan && exp.MTU > mtu {
			mtu, whose = exp.MTU, fmt.Sprintf("the plan's MTU %d", exp.MTU)
		}
		if mtu == 0 {
			r.skip(subj, Textf("the MTU of %s is unknown and the plan sets none", t.netdev))
			return
		}
		need, tag := mtu+ethernetFrameOverhead, Textf("")
		if tagged(t) {
			need, tag = need+vlanTagBytes, Textf(" and VLAN tag")
		}
		mfs := n.MaxFrameSize
		frames := Textf("%s needs frames of %d bytes (with the 18 bytes of Ethernet header and FCS%s)", whose, need, tag)
		fix := Textf("raise the MTU of %s port %s to the fabric's on the switch (9216 is usual on a RoCE fabric), or, if the network is meant to run at that MTU, lower the hosts' to match (`ip link set dev %s mtu %d`, persistently in the interface's netplan or NetworkManager profile); `lldpcli show neighbors details ports %s` shows what the switch announces (MFS)",
			n.Switch(), n.SwitchPort(), t.netdev, max(mfs-ethernetFrameOverhead, 0), t.netdev)
		switch {
		case mfs >= need:
			r.ok(subj, Textf("%s takes frames of up to %d bytes; %s", sw, mfs, frames))
		case mfs < mtu:
			r.fail(subj, Textf("%s takes frames of at most %d bytes, less than %s: the switch drops every larger packet, so jumbo frames and RoCE at its full path MTU over this link are lost (small packets, ping and the RDMA connection setup still pass)", sw, mfs, frames), fix)
		default:
			r.warn(subj, Textf("%s takes frames of at most %d bytes, short of the %d %s needs with the 18 bytes of Ethernet header and FCS%s: full-size packets pass only if the switch counts its frame size without them", sw, mfs, need, whose, tag), fix)
		}
	})
}

func vlanList(vs []int) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ", ")
}

// switchVLANText is what the neighbour says of its VLANs.
func switchVLANText(n *node.LLDPNeighbor) string {
	var parts []string
	if n.PVID != 0 {
		parts = append(parts, fmt.Sprintf("port VLAN ID %d", n.PVID))
	}
	if len(n.VLANs) > 0 {
		parts = append(parts, "VLANs "+vlanList(n.VLANs))
	}
	return strings.Join(parts, ", ")
}

func checkSwitchPortVLAN(e *env, r *results) {
	exp, _ := e.expectations()
	e.lldpTargets(r, "the switch port's VLAN", func(t *target, n *node.LLDPNeighbor) {
		subj, sw := t.subject(), switchPortText(n)
		says := switchVLANText(n)
		switch {
		case says == "":
			r.skip(subj, Textf("the switch port (%s) sends no VLAN TLVs (IEEE 802.1 port VLAN ID, VLAN name), so the VLAN it puts this link in is unknown from the host: check it on the switch", sw))
			return
		case exp.VLAN == nil:
			r.skip(subj, Textf("the plan names no compute VLAN (expectations.vlan) to compare with; %s announces %s", sw, says))
			return
		}
		want := *exp.VLAN
		fix := Textf("put %s port %s in VLAN %d on the switch", n.Switch(), n.SwitchPort(), want)
		if tagged(t) {
			if slices.Contains(n.VLANs, want) {
				r.ok(subj, Textf("RoCE leaves %s tagged (on %s) and %s carries VLAN %d (%s)", t.netdev, roceGIDNetdev(t), sw, want, says))
				return
			}
			r.fail(subj, Textf("RoCE leaves %s tagged (on %s) but %s does not carry VLAN %d (it announces %s): the switch drops the tagged frames", t.netdev, roceGIDNetdev(t), sw, want, says),
				Textf("%s as a tagged (trunk) member, or correct expectations.vlan if the fabric uses another", fix))
			return
		}
		switch {
		case n.PVID == 0:
			r.skip(subj, Textf("%s announces %s but no port VLAN ID, so the VLAN the untagged frames of %s land in is unknown", sw, says, t.netdev))
		case n.PVID == want:
			r.ok(subj, Textf("untagged frames of %s land in VLAN %d on %s (%s)", t.netdev, want, sw, says))
		default:
			r.fail(subj, Textf("untagged frames of %s land in VLAN %d on %s (%s), not the plan's compute VLAN %d: this rail cannot reach the nodes in VLAN %d", t.netdev, n.PVID, sw, says, want, want),
				Textf("%s as its untagged (access, native) VLAN, or correct expectations.vlan if the fabric uses another", fix))
		}
	})
}

func checkSwitchPortSpeed(e *env, r *results) {
	e.lldpTargets(r, "the switch port's speed", func(t *target, n *node.LLDPNeighbor) {
		subj, sw := t.subject(), switchPortText(n)
		if n.MACPHY == nil {
			r.skip(subj, Textf("the switch port (%s) sends no MAC/PHY TLV, so its speed is unknown from the host", sw))
			return
		}
		mau, _, _ := strings.Cut(n.MACPHY.MAU, " ")
		farMbps, ok := n.MACPHY.SpeedMbps()
		switch {
		case !ok:
			r.skip(subj, Textf("%s reports its operational MAU type as %q, which names no speed lldpd knows (lldpd has no name for many 200G/400G/800G types)", sw, orPlaceholder(mau, "nothing")))
			return
		case t.iface == nil || t.iface.SpeedMbps <= 0:
			r.skip(subj, Textf("the speed of %s is unknown; %s runs %s", t.netdev, sw, mau))
			return
		}
		autoneg := Textf("auto-negotiation off")
		switch {
		case n.MACPHY.AutonegEnabled:
			autoneg = Textf("auto-negotiation on")
		case !n.MACPHY.AutonegSupported:
			autoneg = Textf("no auto-negotiation")
		}
		local := t.iface.SpeedMbps
		if farMbps == local {
			r.ok(subj, Textf("%s runs %s (%s Gb/s, %s), the speed of %s", sw, mau, num(float64(farMbps)/1000), autoneg, t.netdev))
			return
		}
		r.warn(subj, Textf("%s says it runs %s (%s Gb/s, %s) while %s runs at %s Gb/s: the cable may not go where LLDP says (a patch panel, a breakout), or the switch port is set to another speed", sw, mau, num(float64(farMbps)/1000), autoneg, t.netdev, num(float64(local)/1000)),
			Textf("compare `ethtool %s` with the switch's view of port %s (`show interfaces` on the switch); set both ends to the planned speed, and check that the cable goes to that port", t.netdev, n.SwitchPort()))
	})
}
