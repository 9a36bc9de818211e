package health

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/roce-exporter/roce_exporter/node"
)

// Several compute NICs in one IP subnet: Linux owns addresses per host, not
// per interface, so by default any NIC answers ARP for any local address
// (arp_ignore 0), ARP requests carry whichever local address (arp_announce
// 0), and the main table sends everything for the subnet out of its first
// route's NIC. RoCE GIDs then resolve to the wrong MAC, and traffic leaves
// by the wrong rail or is dropped by strict reverse-path filtering
// (NVIDIA/nccl#1109, openucx/ucx#5598; IBM's RoCE v2 guidance: rp_filter 2,
// arp_ignore 1, arp_announce 2; kernel ip-sysctl.rst).

// railAddr is the IPv4 address and prefix a target's traffic is sent from:
// the plan's when the interface carries it, else the interface's first
// global IPv4 address, else the plan's.
func railAddr(t *target) (netip.Prefix, bool) {
	var planned netip.Prefix
	if t.planned != nil && t.planned.Address.IsValid() && t.planned.Address.Addr().Is4() {
		planned = t.planned.Address
	}
	if t.iface != nil && t.iface.AddressesKnown {
		var first netip.Prefix
		for _, p := range t.iface.Addresses {
			if !p.Addr().Is4() || p.Addr().IsLinkLocalUnicast() || p.Addr().IsLoopback() {
				continue
			}
			if planned.IsValid() && p.Addr() == planned.Addr() {
				return p, true
			}
			if !first.IsValid() {
				first = p
			}
		}
		if first.IsValid() {
			return first, true
		}
	}
	return planned, planned.IsValid()
}

// subnetPeers returns, for each target that shares an IPv4 subnet with
// another, its address and the other targets of that subnet.
type sharedRail struct {
	t      *target
	addr   netip.Prefix
	others []*target
}

func (e *env) sharedSubnets() []sharedRail {
	type rail struct {
		t    *target
		addr netip.Prefix
	}
	var rails []rail
	for _, t := range e.targets {
		if t.iface == nil || !t.ethernet() {
			continue
		}
		if a, ok := railAddr(t); ok {
			rails = append(rails, rail{t, a})
		}
	}
	var out []sharedRail
	for _, a := range rails {
		s := sharedRail{t: a.t, addr: a.addr}
		for _, b := range rails {
			if b.t != a.t && a.addr.Masked().Overlaps(b.addr.Masked()) {
				s.others = append(s.others, b.t)
			}
		}
		if len(s.others) > 0 {
			out = append(out, s)
		}
	}
	return out
}

func netdevs(ts []*target) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.netdev
	}
	return joinNatural(names)
}

// hostRails runs each over the compute interfaces that share a subnet, and
// reports why there is nothing to judge otherwise.
func (e *env) hostRails(r *results, each func(s sharedRail, h *node.HostState)) {
	shared := e.sharedSubnets()
	if len(shared) == 0 {
		r.skip(SubjectNode, Textf("no two compute interfaces share an IPv4 subnet (one subnet per rail, or addresses unknown): each rail answers ARP and routes for its own subnet, so ARP flux and wrong-rail routing cannot happen"))
		return
	}
	h := e.snap.Host
	if h == nil {
		r.skip(SubjectNode, e.hostReason(Textf("the sysctls and routing")))
		return
	}
	for _, s := range shared {
		each(s, h)
	}
}

// hostReason says why the host source's part is missing.
func (e *env) hostReason(what Text) Text {
	if e.snap.Sources[node.SourceHost] == node.SourceAbsent {
		return Textf("%s of this node were not read: a copied node without its procfs (--path.proc), `ip -j` captures (--collector.ethtool.replay-dir) or root filesystem (--path.rootfs)", what)
	}
	if why := e.sourceReason(node.SourceHost, what); !why.Empty() {
		return why
	}
	return Textf("%s of this node were not read", what)
}

const sysctlFile = "/etc/sysctl.d/90-roce-multi-nic.conf"

func checkARPFluxSysctls(e *env, r *results) {
	e.hostRails(r, func(s sharedRail, h *node.HostState) {
		t := s.t
		all, own := h.IPv4Conf["all"], h.IPv4Conf[t.netdev]
		if all == nil || own == nil {
			name := "all"
			if all != nil {
				name = t.netdev
			}
			r.skip(t.subject(), Textf("net.ipv4.conf.%s could not be read from procfs (--path.proc)", name))
			return
		}
		type sysctl struct {
			name     string
			all, own int
			ok       func(int) bool
			bad      func(v int) Text
			want     string
		}
		list := []sysctl{
			{"arp_ignore", all.ARPIgnore, own.ARPIgnore, func(v int) bool { return v == 1 || v == 2 },
				func(v int) Text {
					if v > 2 {
						return Textf("arp_ignore %d: the NIC does not answer ARP for its own address as RoCE needs", v)
					}
					return Textf("arp_ignore %d: the NIC answers ARP for the addresses of the other NICs, so their GIDs resolve to its MAC", v)
				}, "1"},
			{"arp_announce", all.ARPAnnounce, own.ARPAnnounce, func(v int) bool { return v == 2 },
				func(v int) Text {
					return Textf("arp_announce %d: ARP requests sent here may carry another NIC's address, and peers learn the wrong MAC for it", v)
				}, "2"},
			{"rp_filter", all.RPFilter, own.RPFilter, func(v int) bool { return v == 0 || v == 2 },
				func(v int) Text {
					return Textf("rp_filter %d, strict: packets that arrive on a NIC the main table would not answer through are dropped without a trace", v)
				}, "2"},
		}
		var bad []Text
		var good []string
		var fixes []Text
		for _, sc := range list {
			v, known := node.Effective(sc.all, sc.own)
			if !known {
				r.skip(t.subject(), Textf("net.ipv4.conf.{all,%s}.%s could not be read", t.netdev, sc.name))
				return
			}
			if sc.ok(v) {
				good = append(good, fmt.Sprintf("%s %d", sc.name, v))
				continue
			}
			bad = append(bad, sc.bad(v))
			// The kernel takes the larger of all and the interface: lower
			// the interface's own value where it is the one too high.
			if sc.own > sc.all && !sc.ok(sc.own) && sc.name != "arp_announce" {
				fixes = append(fixes, Textf("net.ipv4.conf.%s.%s = %s", t.netdev, sc.name, sc.want))
			}
			fixes = append(fixes, Textf("net.ipv4.conf.all.%s = %s", sc.name, sc.want))
		}
		shares := Textf("%s shares %s with %s", t.netdev, s.addr.Masked(), netdevs(s.others))
		if len(bad) == 0 {
			r.ok(t.subject(), Textf("%s; %s (the larger of conf.all and conf.%s): it answers ARP only for its own address and announces it", shares, strings.Join(good, ", "), t.netdev))
			return
		}
		r.fail(t.subject(), Textf("%s, and %s", shares, JoinTexts(bad, "; ")),
			Textf("write `%s` into %s and run `sysctl --system` (now and at every boot), then `ip neigh flush all` here and on the peers so that no wrong MAC stays cached; every node whose compute NICs share a subnet needs the same", JoinTexts(fixes, "` and `"), sysctlFile))
	})
}

// probeDestination is an address of the shared subnet to route to: the
// same rail's address on a peer of the plan, else one no local interface
// holds.
func (e *env) probeDestination(s sharedRail) (netip.Addr, Text) {
	if e.node != nil && s.t.planned != nil {
		for _, p := range e.plan.Peers(e.nodeName) {
			if s.t.planned.Rail < len(p.Interfaces) {
				if a := p.Interfaces[s.t.planned.Rail].Address; a.IsValid() && s.addr.Masked().Contains(a.Addr()) {
					return a.Addr(), Textf("%s's rail %d address %s", p.Name, s.t.planned.Rail, a.Addr())
				}
			}
		}
	}
	local := map[netip.Addr]bool{}
	for _, t := range e.targets {
		if a, ok := railAddr(t); ok {
			local[a.Addr()] = true
		}
	}
	p := s.addr.Masked()
	for a := p.Addr().Next(); p.Contains(a); a = a.Next() {
		if !local[a] && p.Contains(a.Next()) { // not the broadcast address
			return a, Textf("%s in %s", a, p)
		}
	}
	return netip.Addr{}, Text{}
}

func ruleText(r *node.PolicyRule) Text {
	from := "all"
	if r.Src.IsValid() {
		from = r.Src.String()
		if r.Src.IsSingleIP() {
			from = r.Src.Addr().String()
		}
	}
	return Textf("rule %d (from %s lookup %s)", r.Priority, from, r.Table)
}

func routingFix(e *env, s sharedRail) Text {
	rail := 0
	if s.t.planned != nil {
		rail = s.t.planned.Rail
	} else {
		for i, t := range e.targets {
			if t == s.t {
				rail = i
			}
		}
	}
	table, prio := 100+rail, 1000+rail
	a, subnet, dev := s.t.addr(), s.addr.Masked(), s.t.netdev
	return Textf("give each rail a table that sends its subnet out of its own NIC, and a rule that picks it by source address: now `ip route replace %[2]s dev %[3]s src %[1]s table %[4]d && ip rule add from %[1]s table %[4]d priority %[5]d`; to keep it, with netplan add under %[3]s `routes: [{to: %[2]s, scope: link, from: %[1]s, table: %[4]d}]` and `routing-policy: [{from: %[1]s, table: %[4]d, priority: %[5]d}]` (one file per interface: netplan 0.105 loses routes split across files), with NetworkManager `nmcli connection modify <connection of %[3]s> ipv4.routes \"%[2]s table=%[4]d\" ipv4.routing-rules \"priority %[5]d from %[1]s table %[4]d\"`, with systemd-networkd a [Route] Destination=%[2]s Table=%[4]d and a [RoutingPolicyRule] From=%[1]s Table=%[4]d in its .network file; repeat for every rail with its own address, table and priority",
		a, subnet, dev, table, prio)
}

func (t *target) addr() netip.Addr {
	a, _ := railAddr(t)
	return a.Addr()
}

func checkPerRailRouting(e *env, r *results) {
	e.hostRails(r, func(s sharedRail, h *node.HostState) {
		t := s.t
		if h.Rules == nil || h.Routes == nil {
			r.skip(t.subject(), Textf("the policy rules and routes of this node were not read (rtnetlink, or ip-rule.json and ip-route.json in the replay directory)"))
			return
		}
		dst, dstText := e.probeDestination(s)
		if !dst.IsValid() {
			r.skip(t.subject(), Textf("%s holds no address to route to", s.addr.Masked()))
			return
		}
		src := t.addr()
		d := h.Lookup(src, dst)
		shares := Textf("%s shares %s with %s", t.netdev, s.addr.Masked(), netdevs(s.others))
		switch {
		case d.Refused != "":
			r.fail(t.subject(), Textf("%s, and traffic from %s to %s is refused (%s by %s)", shares, src, dstText, d.Refused, ruleText(d.Rule)), routingFix(e, s))
		case d.Route == nil:
			r.fail(t.subject(), Textf("%s, and no rule finds a route from %s to %s", shares, src, dstText), routingFix(e, s))
		case d.Route.Dev != t.netdev:
			r.fail(t.subject(), Textf("%s, and traffic from its address %s to %s leaves by %s (%s): RoCE of this rail goes out of another NIC, and with strict rp_filter the answers are dropped", shares, src, dstText, orPlaceholder(d.Route.Dev, "no interface"), ruleText(d.Rule)), routingFix(e, s))
		case !d.Rule.Src.IsValid() || d.Rule.Src.Bits() == 0:
			r.warn(t.subject(), Textf("%s; traffic from %s to %s leaves by %s only because table %s lists this NIC's route for the subnet first (%s): the other rails' traffic leaves by it too, and the order changes when a link flaps or the node reboots", shares, src, dstText, t.netdev, d.Rule.Table, ruleText(d.Rule)), routingFix(e, s))
		default:
			r.ok(t.subject(), Textf("%s; traffic from %s to %s leaves by %s (%s)", shares, src, dstText, t.netdev, ruleText(d.Rule)))
		}
	})
}

// peerRail is a peer's compute address on one rail.
type peerRail struct {
	peer string
	rail int
	ip   netip.Addr
}

func checkNeighborEntries(e *env, r *results) {
	h := e.snap.Host
	switch {
	case h == nil:
		r.skip(SubjectNode, e.hostReason(Textf("the neighbour entries")))
		return
	case h.Neighbors == nil:
		r.skip(SubjectNode, Textf("the neighbour (ARP) table of this node was not read (rtnetlink, or ip-neigh.json in the replay directory)"))
		return
	}
	var peers []peerRail
	byIP := map[netip.Addr]peerRail{}
	for _, p := range e.plan.Peers(e.nodeName) {
		for _, ci := range p.Interfaces {
			if ci.Address.IsValid() {
				pr := peerRail{p.Name, ci.Rail, ci.Address.Addr()}
				peers = append(peers, pr)
				byIP[pr.ip] = pr
			}
		}
	}
	if len(peers) == 0 {
		r.skip(SubjectNode, Textf("the plan lists no peer with a compute address"))
		return
	}
	railDev := map[int]string{}
	for _, t := range e.targets {
		if t.planned != nil {
			railDev[t.planned.Rail] = t.netdev
		}
	}
	// The entries of the peers' compute addresses, by local interface.
	onDev := map[string][]node.Neighbor{}
	seenOn := map[netip.Addr][]string{}
	for _, n := range h.Neighbors {
		if _, ok := byIP[n.IP]; ok {
			onDev[n.Dev] = append(onDev[n.Dev], n)
			seenOn[n.IP] = append(seenOn[n.IP], n.Dev)
		}
	}
	// A peer's NICs have a MAC each: one MAC for two of its rail addresses
	// is the peer answering ARP for one NIC with another's.
	type peerMAC struct{ peer, mac string }
	macIPs := map[peerMAC][]netip.Addr{}
	for _, n := range h.Neighbors {
		if pr, ok := byIP[n.IP]; ok && n.MAC != "" && !slices.Contains(macIPs[peerMAC{pr.peer, n.MAC}], n.IP) {
			macIPs[peerMAC{pr.peer, n.MAC}] = append(macIPs[peerMAC{pr.peer, n.MAC}], n.IP)
		}
	}
	for _, t := range e.targets {
		if t.planned == nil || t.iface == nil {
			continue
		}
		var fails []Text
		var warns []Text
		count := 0
		for _, n := range onDev[t.netdev] {
			pr := byIP[n.IP]
			count++
			if ips := macIPs[peerMAC{pr.peer, n.MAC}]; n.MAC != "" && len(ips) > 1 {
				fails = append(fails, Textf("%s's rail %d address %s resolved to %s, a MAC %s also answers for at %s", pr.peer, pr.rail, n.IP, n.MAC, pr.peer, otherIPs(ips, n.IP)))
			}
			if strings.Contains(n.State, "FAILED") && railDev[pr.rail] == t.netdev {
				warns = append(warns, Textf("%s's rail %d address %s does not answer ARP here (FAILED)", pr.peer, pr.rail, n.IP))
			}
		}
		// Rail-matched traffic (NCCL's, the probes') to this rail's peers
		// resolves them here; found only on other NICs, it left by those.
		for _, pr := range peers {
			if railDev[pr.rail] != t.netdev {
				continue
			}
			if devs := seenOn[pr.ip]; len(devs) > 0 && !slices.Contains(devs, t.netdev) {
				warns = append(warns, Textf("%s's rail %d address %s was resolved only on %s, not on %s: traffic to it left by another NIC (see per_rail_source_routing)", pr.peer, pr.rail, pr.ip, joinNatural(devs), t.netdev))
			}
		}
		subj := t.subject()
		switch {
		case len(fails) > 0:
			r.fail(subj, Textf("%s: the peer answers ARP for one NIC with another's MAC, so RoCE to that address reaches the wrong NIC and its queue pairs time out", JoinTexts(append(fails, warns...), "; ")),
				Textf("on the peer, set arp_ignore 1 and arp_announce 2 (its doctor's arp_flux_sysctls shows how), then here `ip neigh flush dev %s` so the entries are learnt again", t.netdev))
		case len(warns) > 0:
			r.warn(subj, JoinTexts(warns, "; "),
				Textf("give each rail its own route table (per_rail_source_routing), then `ip neigh flush dev %s`; for a FAILED entry check that the peer's NIC is up and cabled (`ip -s neigh show dev %s`, the peer's doctor)", t.netdev, t.netdev))
		case count == 0:
			r.skip(subj, Textf("no neighbour entry of a peer's compute address on %s (none learnt, or expired since the last traffic)", t.netdev))
		default:
			entries := Textf("entries")
			if count == 1 {
				entries = Textf("entry")
			}
			r.ok(subj, Textf("%d neighbour %s of peers' compute addresses on %s, each with its own MAC", count, entries, t.netdev))
		}
	}
}

func otherIPs(ips []netip.Addr, not netip.Addr) string {
	var out []string
	for _, a := range ips {
		if a != not {
			out = append(out, a.String())
		}
	}
	return strings.Join(out, ", ")
}
