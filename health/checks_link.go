package health

import (
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strings"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/node"
)

// expectations returns the plan's expectations when the plan applies to this node. A
// plan that does not know the node is treated like no plan, so that a misnamed node
// gets one clear plan_node_known failure instead of checks against the wrong entry.
func (e *env) expectations() (config.Expectations, bool) {
	if e.node == nil {
		return config.Expectations{}, false
	}
	return e.plan.Expectations, true
}

// down reports whether the target's link is down, from the port or the netdev.
func (t *target) down() bool {
	if t.port != nil {
		return !t.port.Up()
	}
	return t.iface != nil && !t.iface.Up()
}

func checkPortActive(e *env, r *results) {
	for _, t := range e.targets {
		subj := t.devSubject()
		p := t.port
		if p == nil {
			r.skip(subj, t.missingReason("RDMA port"))
			continue
		}
		state := Textf("%s port %d: state %s, physical state %s", p.Device, p.Number, stateText(p.State, p.StateName), stateText(p.PhysState, p.PhysStateName))
		if p.Up() {
			r.ok(subj, state)
			continue
		}
		switch {
		case t.ib() && p.PhysState == node.PhysStateLinkUp:
			r.fail(subj, Textf("%s: the link is up but no subnet manager has configured the port", state),
				Textf("an InfiniBand fabric needs exactly one master subnet manager: `sminfo` shows whether one answers. On a fabric managed by UFM or by a managed switch's SM, do not start another: ask whoever runs it (a second SM with a higher priority takes the fabric over and reroutes every port); only on a small unmanaged fabric without one, run it on one node: `apt install opensm && systemctl enable --now opensm`"))
		case t.ib():
			r.fail(subj, Textf("%s: no physical link", state),
				Textf("check the cable and the switch port of %s port %d (`ibstat %s`, `mlxlink -d %s`); reseat or swap the cable", p.Device, p.Number, p.Device, orPlaceholder(t.pciAddress(), "<pci address>")))
		default:
			netdev := orPlaceholder(p.Interface, t.netdev)
			if t.iface != nil && t.iface.OperState != "" {
				state = Textf("%s (%s is %s)", state, netdev, t.iface.OperState)
			}
			state = Textf("%s%s", state, linkDownReason(e.snap.PHY[netdev]))
			r.fail(subj, state,
				Textf("bring the interface up: `ip link set dev %[1]s up`; if it stays down and `ethtool %[1]s` says \"Link detected: no\", check the cable or transceiver (`ethtool -m %[1]s`), that the switch port is enabled with the same speed and FEC, and `mlxlink -d %[2]s` for why the link does not train", netdev, orPlaceholder(t.pciAddress(), "<pci address>")))
		}
	}
}

func checkLinkLayer(e *env, r *results) {
	want := string(e.plan.Expectations.LinkLayer)
	for _, t := range e.targets {
		subj := t.devSubject()
		if t.port == nil {
			r.skip(subj, t.missingReason("RDMA port"))
			continue
		}
		got := t.port.LinkLayer
		if got == want {
			r.ok(subj, Textf("link layer %s, as planned", got))
			continue
		}
		linkType := map[string]int{node.LinkLayerInfiniBand: 1, node.LinkLayerEthernet: 2}[want]
		fix := Textf("expectations.link_layer in the plan says %s; if the plan is right and this is a ConnectX VPI card, switch the port type in firmware: mlxconfig -d %s set LINK_TYPE_P%d=%d (1 = InfiniBand, 2 = Ethernet), then reboot (or mlxfwreset -d %s reset)",
			want, orPlaceholder(t.pciAddress(), "<pci address>"), t.port.Number, linkType, orPlaceholder(t.pciAddress(), "<pci address>"))
		r.fail(subj, Textf("link layer %s, the plan expects %s", orPlaceholder(got, "unknown"), want), fix)
	}
}

func checkLinkRate(e *env, r *results) {
	want := e.plan.Expectations.LinkRateGbps
	if want <= 0 {
		r.skip(SubjectNode, Textf("the plan sets no link rate (expectations.link_rate_gbps)"))
		return
	}
	for _, t := range e.targets {
		subj := t.devSubject()
		switch {
		case t.port == nil:
			r.skip(subj, t.missingReason("RDMA port"))
			continue
		case !t.port.Up():
			r.skip(subj, Textf("port is down, its rate is not meaningful (see port_active)"))
			continue
		case t.port.RateBitsPerSecond <= 0:
			r.skip(subj, Textf("port reports no usable rate (see port_rate_matches_netdev)"))
			continue
		}
		got := t.port.RateBitsPerSecond / 1e9
		switch {
		case math.Abs(got-want) <= want*0.005:
			r.ok(subj, Textf("%s Gb/s, as planned", num(got)))
		case got < want:
			netdev := orPlaceholder(t.netdev, "<netdev>")
			r.fail(subj, Textf("running at %s Gb/s, the plan expects %s Gb/s", num(got), num(want)),
				Textf("the link trained below its planned speed: check that the cable or optic and the switch port are rated %s Gb/s (`ethtool -m %s`, `ethtool %s` for Speed and Supported link modes), that both ends use the same FEC (`ethtool --show-fec %s`), reseat the cable; `mlxlink -d %s` shows the negotiated speed",
					num(want), netdev, netdev, netdev, orPlaceholder(t.pciAddress(), "<pci address>")))
		default:
			r.warn(subj, Textf("running at %s Gb/s, faster than the planned %s Gb/s", num(got), num(want)),
				Textf("if the faster link is intended, update expectations.link_rate_gbps in the plan so bandwidth probes expect the right rate"))
		}
	}
}

func checkRateMatchesNetdev(e *env, r *results) {
	for _, t := range e.targets {
		subj := t.devSubject()
		notEth := t.notEthernet("comparing its rate with a netdev's speed")
		switch {
		case t.port == nil:
			r.skip(subj, t.missingReason("RDMA port"))
			continue
		case !notEth.Empty():
			r.skip(subj, notEth)
			continue
		case !t.port.Up():
			r.skip(subj, Textf("port is down (see port_active)"))
			continue
		case len(t.port.BondSlaves) > 0:
			e.rateMatchesBondSlaves(r, t)
			continue
		case t.iface == nil || t.iface.SpeedMbps <= 0:
			r.skip(subj, Textf("speed of %s unknown", orPlaceholder(t.netdev, "its netdev")))
			continue
		}
		netSpeed := float64(t.iface.SpeedMbps) * 1e6
		rate := t.port.RateBitsPerSecond
		fix := rateFix(t)
		switch {
		case rate <= 0:
			r.warn(subj, Textf("port is up but reports no rate while %s runs at %d Mb/s", t.netdev, t.iface.SpeedMbps), fix)
		case math.Abs(rate-netSpeed) <= netSpeed*0.005:
			r.ok(subj, Textf("rate %s Gb/s matches %s at %d Mb/s", gbps(rate), t.netdev, t.iface.SpeedMbps))
		case rate == 40e9:
			r.warn(subj, Textf("port reports 40 Gb/s (4X QDR), the placeholder mlx5 uses for a link mode it does not know, while %s runs at %d Mb/s", t.netdev, t.iface.SpeedMbps), fix)
		default:
			r.warn(subj, Textf("port reports %s Gb/s while %s runs at %d Mb/s", gbps(rate), t.netdev, t.iface.SpeedMbps), fix)
		}
	}
}

// rateMatchesBondSlaves judges a RoCE LAG port (mlx5_bond_0 behind bond0). The
// bond's speed is the sum of its slaves' (bond_update_speed_duplex), while the
// RDMA port reports the rate of one physical port, so the rate is compared with
// the slaves' speeds.
func (e *env) rateMatchesBondSlaves(r *results, t *target) {
	subj := t.devSubject()
	rate := t.port.RateBitsPerSecond
	bond := t.port.Interface
	var speeds []string
	matched := false
	for _, name := range t.port.BondSlaves {
		s := e.snap.Interfaces[name]
		if s == nil || !s.Up() || s.SpeedMbps <= 0 {
			continue
		}
		speeds = append(speeds, fmt.Sprintf("%s at %d Mb/s", name, s.SpeedMbps))
		netSpeed := float64(s.SpeedMbps) * 1e6
		matched = matched || math.Abs(rate-netSpeed) <= netSpeed*0.005
	}
	sum := bond
	if b := e.snap.Interfaces[bond]; b != nil && b.SpeedMbps > 0 {
		sum = fmt.Sprintf("%s, their sum, at %d Mb/s", bond, b.SpeedMbps)
	}
	switch {
	case len(speeds) == 0:
		r.skip(subj, Textf("no up slave of %s (%s) has a known speed; the bond's own speed is the sum of its slaves', not the rate of one RDMA port", bond, strings.Join(t.port.BondSlaves, ", ")))
	case rate <= 0:
		r.warn(subj, Textf("port is up but reports no rate while the slaves of %s run at %s", bond, strings.Join(speeds, ", ")), rateFix(t))
	case matched:
		r.ok(subj, Textf("rate %s Gb/s matches a slave of the RoCE LAG bond: %s (%s)", gbps(rate), strings.Join(speeds, ", "), sum))
	default:
		r.warn(subj, Textf("port reports %s Gb/s while the slaves of %s run at %s", gbps(rate), bond, strings.Join(speeds, ", ")), rateFix(t))
	}
}

// rateFix is what to do about an RDMA rate that differs from its netdev's speed.
func rateFix(t *target) Text {
	return Textf("the RDMA driver cannot map the link mode the NIC negotiated: update the NIC firmware (`mlxfwmanager --query`) and the kernel or DOCA-OFED driver; until then tools that size themselves from /sys/class/infiniband/%s/ports/%d/rate see the wrong speed", t.port.Device, t.port.Number)
}

// ipFix is how to put an address on an interface now and across reboots.
func ipFix(netdev string, p netip.Prefix) Text {
	return Textf("ip addr add %[2]s dev %[1]s (takes effect now); to keep it across reboots add `addresses: [%[2]s]` under ethernets: %[1]s: in /etc/netplan/*.yaml and run `netplan apply`, or with NetworkManager `nmcli connection modify %[1]s ipv4.method manual ipv4.addresses %[2]s && nmcli connection up %[1]s` (the connection name is the one `nmcli -g NAME,DEVICE connection show` prints for %[1]s)", netdev, p)
}

// addressOwner finds which interface carries addr, for "it is on the other port" hints.
func (e *env) addressOwner(addr netip.Addr) string {
	for _, name := range e.snap.InterfaceNames() {
		for _, a := range e.snap.Interfaces[name].Addresses {
			if a.Addr() == addr {
				return name
			}
		}
	}
	return ""
}

// gidWith finds a GID on the target's port that carries addr on its netdev; v2Only
// restricts it to RoCE v2 entries.
func (t *target) gidWith(addr netip.Addr, v2Only bool) (node.GID, bool) {
	if t.port == nil {
		return node.GID{}, false
	}
	for _, g := range t.port.GIDs {
		if v2Only && g.Type != node.GIDTypeRoCEv2 {
			continue
		}
		if !t.onNetdev(g) {
			continue
		}
		if ip, ok := g.IPv4(); ok && ip == addr {
			return g, true
		}
	}
	return node.GID{}, false
}

// onNetdev reports whether a GID belongs to the target's netdev; a GID without one,
// or a target without one, matches.
func (t *target) onNetdev(g node.GID) bool {
	return g.Interface == "" || t.netdev == "" || g.Interface == t.netdev
}

// v2IPv4GIDs returns the port's RoCE v2 GIDs that carry an IPv4 address on the
// target's netdev, in index order.
func (t *target) v2IPv4GIDs() []node.GID {
	if t.port == nil {
		return nil
	}
	var out []node.GID
	for _, g := range t.port.GIDs {
		if _, ok := g.IPv4(); ok && g.Type == node.GIDTypeRoCEv2 && t.onNetdev(g) {
			out = append(out, g)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

func checkComputeIP(e *env, r *results) {
	for _, t := range e.targets {
		subj := t.subject()
		want := t.planned.Address
		if !want.IsValid() {
			r.skip(subj, Textf("the plan gives %s no address", t.netdev))
			continue
		}
		if t.absent() {
			r.skip(subj, t.missingReason("interface"))
			continue
		}
		// Name the RoCE v2 entry when there is one: it is the index tools use.
		g, inGID := t.gidWith(want.Addr(), true)
		if !inGID {
			g, inGID = t.gidWith(want.Addr(), false)
		}
		if t.iface == nil || !t.iface.AddressesKnown {
			if inGID {
				r.ok(subj, Textf("%s is on %s (seen in GID index %d; the interface addresses were not read)", want.Addr(), t.netdev, g.Index))
			} else {
				r.skip(subj, Textf("the addresses of %s were not read (a replay without ip-addr.txt, or the netdev collector is off) and no GID carries %s", t.netdev, want.Addr()))
			}
			continue
		}
		var found *netip.Prefix
		var have []string
		for i, a := range t.iface.Addresses {
			have = append(have, a.String())
			if a.Addr() == want.Addr() {
				found = &t.iface.Addresses[i]
			}
		}
		haveText := "none"
		if len(have) > 0 {
			haveText = strings.Join(have, ", ")
		}
		switch {
		case found != nil && found.Bits() == want.Bits():
			r.ok(subj, Textf("%s is on %s", want, t.netdev))
		case found != nil:
			r.warn(subj, Textf("%s has %s, the plan says %s: the prefix length differs, so the on-link subnet and routes differ between nodes", t.netdev, *found, want),
				Textf("ip addr del %s dev %s, then %s", *found, t.netdev, ipFix(t.netdev, want)))
		case t.down():
			r.skip(subj, Textf("%s is down and has no %s (addresses: %s); NetworkManager and systemd-networkd remove addresses from a port without carrier, so fix port_active first", t.netdev, want.Addr(), haveText))
		default:
			msg := Textf("%s is not on %s (addresses: %s)", want, t.netdev, haveText)
			if owner := e.addressOwner(want.Addr()); owner != "" && owner != t.netdev {
				msg = Textf("%s; it is on %s instead: swapped cables, names or plan entries?", msg, owner)
			}
			r.fail(subj, msg, ipFix(t.netdev, want))
		}
	}
}

// mtuFix is how to set an MTU now and across reboots.
func mtuFix(netdev string, mtu int) Text {
	return Textf("ip link set dev %[1]s mtu %[2]d (takes effect now); to keep it across reboots add `mtu: %[2]d` under ethernets: %[1]s: in /etc/netplan/*.yaml and run `netplan apply`, or with NetworkManager `nmcli connection modify %[1]s 802-3-ethernet.mtu %[2]d && nmcli connection up %[1]s`; the switch ports must accept %[2]d-byte frames too", netdev, mtu)
}

// mtuTargets yields the Ethernet targets whose netdev MTU was read, reporting the
// rest; roceOnly also skips Ethernet ports that are not RoCE. what names what
// the check judges, for the reason it does not apply.
func (e *env) mtuTargets(r *results, what string, roceOnly bool, each func(t *target)) {
	for _, t := range e.targets {
		subj := t.subject()
		why := t.notEthernet(what)
		if roceOnly {
			why = t.notRoCE(what)
		}
		switch {
		case !why.Empty():
			r.skip(subj, why)
		case t.iface == nil:
			r.skip(subj, t.missingReason("netdev"))
		case t.iface.MTU <= 0:
			r.skip(subj, Textf("MTU of %s could not be read", t.netdev))
		default:
			each(t)
		}
	}
}

func checkMTUPlan(e *env, r *results) {
	want := e.plan.Expectations.MTU
	if want <= 0 {
		r.skip(SubjectNode, Textf("the plan sets no MTU (expectations.mtu)"))
		return
	}
	e.mtuTargets(r, "the planned MTU", false, func(t *target) {
		if t.iface.MTU == want {
			r.ok(t.subject(), Textf("MTU %d, as planned", want))
			return
		}
		if want < node.MinMTUForRoCE4096 && t.iface.MTU >= node.MinMTUForRoCE4096 && t.roce() {
			// The plan is the odd one out (900 for 9000): lowering the port to it
			// would cut RoCE to a small path MTU, so the fix is in the plan.
			r.warn(t.subject(), Textf("MTU %d, the plan expects %d, which is too small for 4096-byte RoCE packets (they need %d): the plan is more likely wrong than the port", t.iface.MTU, want, node.MinMTUForRoCE4096),
				Textf("correct expectations.mtu in the plan (to %d if that is what the fabric uses); setting %s to %d would limit RoCE to a %d-byte path MTU", t.iface.MTU, t.netdev, want, node.RoCEActiveMTU(want)))
			return
		}
		r.fail(t.subject(), Textf("MTU %d, the plan expects %d", t.iface.MTU, want), mtuFix(t.netdev, want))
	})
}

func checkMTU4096(e *env, r *results) {
	e.mtuTargets(r, "the RoCE path MTU", true, func(t *target) {
		subj := t.subject()
		mtu := t.iface.MTU
		active := node.RoCEActiveMTU(mtu)
		if mtu >= node.MinMTUForRoCE4096 {
			r.ok(subj, Textf("MTU %d leaves room for 4096-byte RoCE packets (RoCE path MTU %d)", mtu, active))
			return
		}
		target := 9000
		if exp, ok := e.expectations(); ok && exp.MTU >= node.MinMTUForRoCE4096 {
			target = exp.MTU
		}
		r.warn(subj, Textf("MTU %d limits RoCE to a %d-byte path MTU: RoCE needs %d bytes of headers (GRH 40, UDP 8, BTH 12, XRC 4, AtomicETH 28, ICRC 4) inside the Ethernet MTU, so 4096-byte packets need an MTU of at least %d", mtu, active, node.RoCEHeaderBytes, node.MinMTUForRoCE4096),
			mtuFix(t.netdev, target))
	})
}

func checkMTUConsistent(e *env, r *results) {
	count := map[int]int{}
	var ts []*target
	e.mtuTargets(r, "comparing its netdev's MTU", false, func(t *target) {
		count[t.iface.MTU]++
		ts = append(ts, t)
	})
	if len(ts) == 0 {
		return
	}
	// The majority is what the operator meant; on a tie the larger MTU is, because
	// jumbo frames are set on purpose and 1500 is what a missed interface keeps.
	ref, best := 0, 0
	for mtu, n := range count {
		if n > best || n == best && mtu > ref {
			ref, best = mtu, n
		}
	}
	for _, t := range ts {
		if len(count) == 1 {
			r.ok(t.subject(), Textf("MTU %d on all %d compute interface(s)", ref, len(ts)))
			continue
		}
		if t.iface.MTU == ref {
			r.ok(t.subject(), Textf("MTU %d, like %d of %d compute interfaces", ref, best, len(ts)))
			continue
		}
		r.warn(t.subject(), Textf("MTU %d differs from the %d other compute interface(s) at %d", t.iface.MTU, best, ref), mtuFix(t.netdev, ref))
	}
}

func checkRoCEv2GID(e *env, r *results) {
	for _, t := range e.targets {
		subj := t.subject()
		if t.port == nil {
			r.skip(subj, t.missingReason("RDMA port"))
			continue
		}
		if why := t.notRoCE("a RoCE v2 GID"); !why.Empty() {
			r.skip(subj, why)
			continue
		}
		var want netip.Addr
		if t.planned != nil && t.planned.Address.IsValid() {
			want = t.planned.IP()
		}
		v2 := t.v2IPv4GIDs()
		if want.IsValid() {
			if g, ok := t.gidWith(want, true); ok {
				r.ok(subj, Textf("RoCE v2 GID index %d carries %s on %s", g.Index, want, t.netdev))
				continue
			}
		} else if len(v2) > 0 {
			var parts []Text
			for _, g := range v2 {
				ip, _ := g.IPv4()
				parts = append(parts, Textf("index %d carries %s", g.Index, ip))
			}
			on := ""
			if t.netdev != "" {
				on = " on " + t.netdev
			}
			r.ok(subj, Textf("RoCE v2 GID %s%s", JoinTexts(parts, ", "), on))
			continue
		}
		what := "an IPv4 address"
		if want.IsValid() {
			what = want.String()
		}
		if t.down() {
			r.skip(subj, Textf("no RoCE v2 GID carries %s on %s, which is down (see port_active): GIDs follow the addresses of an up interface", what, orPlaceholder(t.netdev, subj)))
			continue
		}
		if t.netdev == "" {
			// RoCE GIDs are made from a netdev's addresses: a port without one
			// cannot have any, and "on <nothing>" would hide that.
			p := t.port
			r.fail(subj, Textf("%s port %d has no netdev, so no RoCE v2 GID can carry an IPv4 address (%d GIDs in the table): NCCL and perftest cannot reach this port over RoCE v2", p.Device, p.Number, len(p.GIDs)),
				Textf("`rdma link show %[1]s/%[2]d` names the port's netdev: if it names one, the exporter cannot see it (run it in the host's network namespace, hostNetwork: true in Kubernetes, with the host's /sys); if it names none, the NIC's Ethernet driver created no interface for the port (`dmesg | grep -i %[3]s`, `devlink dev show`)", p.Device, p.Number, orPlaceholder(t.dev.Driver, "<driver>")))
			continue
		}
		var others []Text
		for _, g := range v2 {
			ip, _ := g.IPv4()
			others = append(others, Textf("index %d = %s", g.Index, ip))
		}
		msg := Textf("no RoCE v2 GID carries %s on %s (%d GIDs in the table): NCCL and perftest cannot reach this port over RoCE v2", what, t.netdev, len(t.port.GIDs))
		if len(others) > 0 {
			msg = Textf("no RoCE v2 GID carries %s on %s (%d GIDs in the table; RoCE v2 IPv4 GIDs: %s): NCCL and perftest cannot reach this port over RoCE v2", what, t.netdev, len(t.port.GIDs), JoinTexts(others, ", "))
		}
		ipOnIface := false
		if t.iface != nil && want.IsValid() {
			for _, a := range t.iface.Addresses {
				if a.Addr() == want {
					ipOnIface = true
				}
			}
		}
		fix := Textf("the kernel creates RoCE GIDs from the addresses of %s: give it its compute IP (see compute_ip_configured) and bring it up, then check with `show_gids` or `grep . /sys/class/infiniband/%s/ports/%d/gid_attrs/types/*`", t.netdev, t.port.Device, t.port.Number)
		if ipOnIface {
			fix = Textf("%s has %s but no RoCE v2 GID carries it: check that RoCE is enabled (`devlink dev param show pci/%s name enable_roce`) and that the address is not on a VLAN or bond the GID table cannot see; `show_gids` lists the table", t.netdev, want, orPlaceholder(t.pciAddress(), "<pci address>"))
		}
		r.fail(subj, msg, fix)
	}
}

func checkDefaultRoCEMode(e *env, r *results) {
	want, flag := node.GIDTypeRoCEv2, 2
	if exp, ok := e.expectations(); ok && exp.RoCEMode == config.RoCEv1 {
		want, flag = node.GIDTypeRoCEv1, 1
	}
	for _, t := range e.targets {
		subj := t.devSubject()
		switch {
		case t.port == nil:
			r.skip(subj, t.missingReason("RDMA port"))
		case !t.roce():
			r.skip(subj, t.notRoCE("the rdma_cm default RoCE mode"))
		case t.port.DefaultRoCEMode == "":
			r.skip(subj, Textf("the rdma_cm default RoCE mode is in configfs only, in /sys/kernel/config/rdma_cm/%s, which does not exist until someone creates it: the exporter never does, and the doctor creates it for a moment only as root on the node's own /sys with rdma_cm loaded and configfs mounted (`modprobe rdma_cm`, `mount -t configfs none /sys/kernel/config`); `cma_roce_mode -d %s -p %d` (mlnx-tools) shows it by hand. Only rdma_cm users (NVMe-oF, iSER) depend on it, not NCCL", t.port.Device, t.port.Device, t.port.Number))
		case t.port.DefaultRoCEMode == want:
			r.ok(subj, Textf("rdma_cm default RoCE mode is %s", want))
		default:
			r.fail(subj, Textf("rdma_cm default RoCE mode is %s, expected %s: rdma_cm users (NVMe-oF, iSER, MPI over rdmacm) will use the wrong GID type; NCCL is not affected", t.port.DefaultRoCEMode, want),
				Textf("cma_roce_mode -d %[1]s -p %[2]d -m %[3]d (mlnx-tools); by hand: modprobe rdma_cm; mkdir -p /sys/kernel/config/rdma_cm/%[1]s; echo '%[4]s' > /sys/kernel/config/rdma_cm/%[1]s/ports/%[2]d/default_roce_mode; rmdir /sys/kernel/config/rdma_cm/%[1]s. It resets on reboot: run it from a boot-time systemd unit", t.port.Device, t.port.Number, flag, want))
		}
	}
}
