package config

import (
	"encoding/binary"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/roce-exporter/roce_exporter/node"
)

// Checks between fields, run after defaults are filled in. Each value was already checked
// on its own while decoding; a value that failed there was left at its zero value, so the
// checks here skip zero values instead of piling a second error on the same mistake.

func (l *loader) validate(p *Plan) {
	l.validateNetworks(p)
	l.validateExpectations(p.Expectations)
	l.validateNodes(p)
	l.validateProbes(p)
}

func (l *loader) validateNetworks(p *Plan) {
	if !l.isWritten("networks.management") {
		l.errorf("networks.management", "is required: the subnet of the nodes' management IPs, e.g. 10.0.0.0/24 (`ip -br addr` on a node shows its address and prefix)")
	}
	if !l.isWritten("networks.compute") && p.Expectations.LinkLayer == LinkLayerEthernet {
		l.errorf("networks.compute", "is required for RoCE: the subnet (or one per rail) of the compute interfaces, e.g. 192.168.100.0/24")
	}
	management := p.Networks.Management
	for i, compute := range p.Networks.Compute {
		path := l.computePath[i]
		if management.IsValid() && compute.Overlaps(management) {
			l.errorf(path, "%s overlaps the management network %s: with shared addresses the kernel may route RDMA and NCCL traffic over the management NIC, and the checks cannot tell the two networks apart", compute, management)
		}
		for j, earlier := range p.Networks.Compute[:i] {
			if compute.Overlaps(earlier) {
				l.errorf(path, "%s overlaps %s (%s); give each rail its own subnet, or list one network that covers them all", compute, earlier, l.computePath[j])
			}
		}
	}
}

func (l *loader) validateExpectations(e Expectations) {
	switch e.LinkLayer {
	case LinkLayerInfiniBand:
		// These settings are Ethernet QoS; InfiniBand is lossless through credit-based flow
		// control and has neither RoCE versions nor DSCP. Writing them means the plan was
		// meant for the other fabric.
		for _, key := range []string{"roce_mode", "pfc_priority", "trust", "ecn", "roce_dscp", "cnp_dscp", "vlan", "other_rdma_classes"} {
			if path := "expectations." + key; l.isWritten(path) {
				l.errorf(path, "applies to RoCE (link_layer: Ethernet) only; InfiniBand has no %s, remove it", key)
			}
		}
	case LinkLayerEthernet:
		if l.isWritten("expectations.ib_service_level") {
			l.errorf("expectations.ib_service_level", "applies to InfiniBand only; RoCE selects its class by DSCP (roce_dscp) and PFC priority, remove it")
		}
		switch {
		case e.MTU > maxEthernetMTU:
			l.errorf("expectations.mtu", "%d is above %d, the largest Ethernet jumbo frame RoCE NICs and switches take", e.MTU, maxEthernetMTU)
		case e.MTU > 0 && node.RoCEActiveMTU(e.MTU) == 0:
			l.warnf("expectations.mtu", "%d leaves no room for RoCE, which needs the smallest path MTU (256) plus %d bytes of headers; 9000 is usual on a RoCE fabric", e.MTU, node.RoCEHeaderBytes)
		case e.MTU > 0 && e.MTU < node.MinMTUForRoCE4096:
			l.warnf("expectations.mtu", "%d is below %d, so RoCE runs with a %d-byte path MTU instead of 4096 and loses bandwidth to headers; 9000 is usual on a RoCE fabric%s", e.MTU, node.MinMTUForRoCE4096, node.RoCEActiveMTU(e.MTU), droppedDigitHint(e.MTU))
		}
		l.validateRDMAClasses(e)
	}
}

// validateRDMAClasses: each other RDMA class has a name and a priority of
// its own, neither RoCE's nor another class's; rdma_bytes_on_roce_priority
// counts RDMA bytes on a class's priority as the class's.
func (l *loader) validateRDMAClasses(e Expectations) {
	byName := map[string]string{}
	byPriority := map[int]RDMAClass{}
	for i, c := range e.OtherRDMAClasses {
		path := l.rdmaClassPath[i]
		folded := strings.ToLower(c.Name)
		if first, dup := byName[folded]; dup {
			l.errorf(path+".name", "%s is already the name of %s; each class needs a name of its own", c.Name, l.describePath(first))
		} else {
			byName[folded] = path
		}
		switch first, dup := byPriority[c.Priority]; {
		case e.PFCPriority != nil && c.Priority == *e.PFCPriority:
			l.errorf(path+".priority", "%d is the RoCE priority (expectations.pfc_priority): RDMA on it already counts as RoCE's; a class of its own runs on another priority", c.Priority)
		case dup:
			l.errorf(path+".priority", "%d is already the priority of the class %s; one priority carries one class", c.Priority, first.Name)
		default:
			byPriority[c.Priority] = c
			if c.Priority == 0 {
				l.warnf(path+".priority", "0 is where traffic without a marking lands: RoCE that lost its DSCP (an unset NCCL_IB_TC, a wrong DSCP map) is counted as %s there, and rdma_bytes_on_roce_priority no longer sees it", c.Name)
			}
		}
	}
}

// droppedDigitHint asks about a jumbo MTU that lost its last digit (900 for 9000).
func droppedDigitHint(mtu int) string {
	if m := mtu * 10; m >= node.MinMTUForRoCE4096 && m <= maxEthernetMTU {
		return fmt.Sprintf(" (did you mean %d?)", m)
	}
	return ""
}

func (l *loader) validateNodes(p *Plan) {
	if !l.isWritten("nodes") {
		l.errorf("nodes", "is required: list every node with its name, management_ip and compute interfaces")
	}
	// Keyed by the lower-case name: host names are case-insensitive (DNS, /etc/hosts,
	// ssh), so node01 and NODE01 are one machine to everything but a string compare.
	nodeByName := map[string]*Node{}
	nodeByManagementIP := map[netip.Addr]string{}
	interfaceByComputeIP := map[netip.Addr]string{}
	for _, node := range p.Nodes {
		path := l.nodePath[node]
		if node.Name != "" {
			folded := strings.ToLower(node.Name)
			switch first, dup := nodeByName[folded]; {
			case !dup:
				nodeByName[folded] = node
			case first.Name == node.Name:
				l.errorf(path+".name", "%s is already the name of %s; node names must be unique", node.Name, l.describePath(l.nodePath[first]))
			default:
				l.errorf(path+".name", "%s differs from %s, the name of %s, only in letter case; host names are case-insensitive, so both name one machine: node names must be unique", node.Name, first.Name, l.describePath(l.nodePath[first]))
			}
		}
		if ip := node.ManagementIP; ip.IsValid() {
			ipPath := path + ".management_ip"
			if first, dup := nodeByManagementIP[ip]; dup {
				l.errorf(ipPath, "%s is already the management IP of %s", ip, l.describePath(first))
			} else {
				nodeByManagementIP[ip] = path
			}
			if network := p.Networks.Management; network.IsValid() && !network.Contains(ip) {
				l.errorf(ipPath, "%s is outside the management network %s", ip, network)
			} else if what := notAHost(ip, network); what != "" {
				l.errorf(ipPath, "%s is %s, not a host address", ip, what)
			}
		}
		l.validateInterfaces(p, node, interfaceByComputeIP)
	}
}

func (l *loader) validateInterfaces(p *Plan, node *Node, interfaceByComputeIP map[netip.Addr]string) {
	byNetdev := map[string]string{}
	byRDMADevice := map[string]string{}
	for _, iface := range node.Interfaces {
		path := l.interfacePath[iface]
		if iface.Netdev != "" {
			if first, dup := byNetdev[iface.Netdev]; dup {
				l.errorf(path+".netdev", "%s is already listed as %s; each compute interface appears once", iface.Netdev, first)
			} else {
				byNetdev[iface.Netdev] = path
			}
		}
		if iface.RDMADevice != "" {
			if first, dup := byRDMADevice[iface.RDMADevice]; dup {
				l.errorf(path+".rdma_device", "%s is already the RDMA device of %s; each RDMA device port backs one netdev (`rdma link show` or `ibdev2netdev` lists the pairs)", iface.RDMADevice, first)
			} else {
				byRDMADevice[iface.RDMADevice] = path
			}
		}
		ipPath := path + ".ip"
		if !l.isWritten(ipPath) && p.Expectations.LinkLayer == LinkLayerEthernet {
			l.errorf(ipPath, "is required for RoCE: RoCE v2 addresses peers by IP; write it as `ip -br addr show %s` prints it, e.g. 192.168.100.11/24", iface.Netdev)
		}
		if !iface.Address.IsValid() {
			continue
		}
		ip := iface.IP()
		if first, dup := interfaceByComputeIP[ip]; dup {
			l.errorf(ipPath, "%s is already the compute IP of %s", ip, l.describePath(first))
		} else {
			interfaceByComputeIP[ip] = path
		}
		if networks := p.Networks.Compute; len(networks) > 0 && !containsAny(networks, ip) {
			l.errorf(ipPath, "%s is outside the compute %s", iface.Address, describeNetworks(networks))
			continue
		}
		// The interface's own prefix is the one the kernel derives its broadcast from;
		// the compute network catches an address written with a longer prefix.
		for _, network := range append([]netip.Prefix{iface.Address.Masked()}, p.Networks.Compute...) {
			if what := notAHost(ip, network); what != "" {
				l.errorf(ipPath, "%s is %s, not a host address", iface.Address, what)
				break
			}
		}
	}
}

// notAHost says why ip cannot be a host's address in network, or "" when it can: the
// all-zeros host is the network itself (on IPv6 the Subnet-Router anycast address,
// RFC 4291 2.6.1), the all-ones host the IPv4 broadcast. Point-to-point prefixes
// (/31, /32, IPv6 /127, /128) have no such addresses (RFC 3021, RFC 6164).
func notAHost(ip netip.Addr, network netip.Prefix) string {
	if !network.IsValid() || !network.Contains(ip) || ip.BitLen()-network.Bits() < 2 {
		return ""
	}
	base := network.Masked().Addr()
	if ip == base {
		if ip.Is4() {
			return "the network address of " + network.Masked().String()
		}
		return "the Subnet-Router anycast address of " + network.Masked().String()
	}
	if ip.Is4() {
		b := base.As4()
		binary.BigEndian.PutUint32(b[:], binary.BigEndian.Uint32(b[:])|(1<<(32-network.Bits())-1))
		if ip == netip.AddrFrom4(b) {
			return "the broadcast address of " + network.Masked().String()
		}
	}
	return ""
}

func containsAny(networks []netip.Prefix, ip netip.Addr) bool {
	for _, n := range networks {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

func describeNetworks(networks []netip.Prefix) string {
	names := make([]string, len(networks))
	for i, n := range networks {
		names[i] = n.String()
	}
	if len(names) == 1 {
		return "network " + names[0]
	}
	return "networks " + strings.Join(names, ", ")
}

// describePath names an earlier entry with its line, so a duplicate can be found in the file.
func (l *loader) describePath(path string) string {
	if pos := l.positionOf(path); pos.line > 0 {
		return fmt.Sprintf("%s (line %d)", path, pos.line)
	}
	return path
}

func (l *loader) validateProbes(p *Plan) {
	probes := &p.Probes
	// Requirements that only matter for a probe that will run apply when both the master
	// switch and the probe's own switch are on; a plan without probes must not fail on them.
	runs := func(s Schedule) bool { return probes.Enabled && s.Enabled }

	l.validateSchedule("probes.ib_write_bw", probes.IBWriteBW.Schedule)
	l.validateSchedule("probes.ib_write_lat", probes.IBWriteLat.Schedule)
	l.validateSchedule("probes.nccl", probes.NCCL.Schedule)
	l.validateSchedule("probes.ping", probes.Ping.Schedule)
	l.validateSchedule("probes.incast", probes.Incast.Schedule)

	for _, s := range []struct {
		path     string
		schedule Schedule
	}{{"probes.ib_write_bw", probes.IBWriteBW.Schedule}, {"probes.ib_write_lat", probes.IBWriteLat.Schedule},
		{"probes.nccl", probes.NCCL.Schedule}, {"probes.ping", probes.Ping.Schedule}} {
		if runs(s.schedule) {
			l.validateFreshness(s.path, s.schedule, probes.FreshRounds)
		}
	}
	if in := probes.Incast; runs(in.Schedule) && in.Interval > 0 && freshForOverflows(in.Schedule, probes.IncastFreshRounds(), MaxFreshFor) {
		l.errorf(l.firstWritten("probes.incast.interval", "probes.fresh_rounds"),
			"an incast result counts for fresh_rounds × (senders + 1) = %d of its intervals of %s, about %.0f days, more than %.0f: lower the incast interval or fresh_rounds",
			probes.IncastFreshRounds(), in.Interval, float64(probes.IncastFreshRounds())*in.Interval.Hours()/24, MaxFreshFor.Hours()/24)
	}

	l.validatePerftest(p, "probes.ib_write_bw", probes.IBWriteBW, runs(probes.IBWriteBW.Schedule))
	l.validatePerftest(p, "probes.ib_write_lat", probes.IBWriteLat, runs(probes.IBWriteLat.Schedule))
	if lat := probes.IBWriteLat; lat.QueuePairs > 1 {
		l.errorf("probes.ib_write_lat.queue_pairs", "perftest latency tests use one queue pair and refuse -q (\"Multiple QPs only available on bw tests\"); remove queue_pairs")
	}
	bw, lat := probes.IBWriteBW, probes.IBWriteLat
	l.validateFleetRounds(p, "probes.ib_write_bw", bw.Schedule, runs(bw.Schedule))
	l.validateFleetRounds(p, "probes.ib_write_lat", lat.Schedule, runs(lat.Schedule))
	if runs(bw.Schedule) || runs(lat.Schedule) {
		l.warnUntestableRails(p)
	}
	if runs(bw.Schedule) && runs(lat.Schedule) && bw.PortRange.overlaps(lat.PortRange) {
		l.errorf("probes.ib_write_lat.port_range", "%s overlaps ib_write_bw's %s: both responders listen at the same time and each needs its own ports", lat.PortRange, bw.PortRange)
	}

	l.validateIncast(p, runs(probes.Incast.Schedule))

	nccl := probes.NCCL
	if nccl.Leader != "" {
		if _, ok := p.Node(nccl.Leader); !ok {
			l.errorf("probes.nccl.leader", "%s is not a node of this plan; the leader must be one of: %s", nccl.Leader, strings.Join(p.NodeNames(), ", "))
		}
	}
	if runs(nccl.Schedule) {
		// The runner passes `-H <management IP>:<gpus>,…`, and Open MPI (orte and PRRTE
		// dash_host.c alike) splits each entry at its first ':', so fd00::11:8 would be
		// host "fd00" with slots ":11:8"; a bracketed [fd00::11] is not understood either.
		for _, node := range p.Nodes {
			if ip := node.ManagementIP; ip.Is6() {
				l.errorf(l.nodePath[node]+".management_ip", "%s is an IPv6 address, which the NCCL probe cannot hand to mpirun: Open MPI's -H host:slots splits at the first ':'. Give the nodes IPv4 management addresses, or turn the NCCL probe off (probes.nccl.enabled: false)", ip)
			}
		}
		for _, required := range []struct{ key, hint string }{
			{"command", "the absolute path of all_reduce_perf from an MPI build of nccl-tests, e.g. /opt/nccl-tests/build/all_reduce_perf"},
			{"gpus_per_node", "one MPI rank runs per GPU; `nvidia-smi -L` lists them"},
		} {
			if path := "probes.nccl." + required.key; !l.isWritten(path) {
				l.errorf(path, "is required when the NCCL probe is enabled: %s", required.hint)
			}
		}
	}
	if nccl.MinBytes > 0 && nccl.MaxBytes > 0 && nccl.MinBytes > nccl.MaxBytes {
		l.errorf(l.firstWritten("probes.nccl.min_bytes", "probes.nccl.max_bytes"), "min_bytes %v is larger than max_bytes %v", nccl.MinBytes, nccl.MaxBytes)
	}
	// Only a written threshold is an error: with the default and a short sweep the runner
	// judges the largest size and says so in each result.
	maxBytes, maxBytesSaid := nccl.MaxBytes, fmt.Sprint(nccl.MaxBytes)
	if maxBytes == 0 {
		maxBytes, maxBytesSaid = DefaultNCCLMaxBytes, fmt.Sprintf("%v (the most the default, sized from the GPUs' memory, gives)", DefaultNCCLMaxBytes)
	}
	if large := "probes.nccl.large_message_bytes"; l.isWritten(large) && nccl.LargeMessageBytes > maxBytes {
		l.errorf(large, "%v is above max_bytes %s: no message of the sweep reaches it, so every run would be judged on its largest size; lower it or raise max_bytes",
			nccl.LargeMessageBytes, maxBytesSaid)
	}
	for _, name := range slices.Sorted(maps.Keys(nccl.NodeEnv)) {
		if _, ok := p.Node(name); !ok {
			l.errorf("probes.nccl.node_env."+name, "%s is not a node of this plan; node_env is keyed by the nodes' names: %s", name, strings.Join(p.NodeNames(), ", "))
		}
	}
}

// validateIncast checks what an incast needs to run and to prove anything: a lossless
// RoCE priority to prove, enough nodes for a receiver and its senders, ports for every
// sender on every rail of the receiver, and rounds longer than a run.
func (l *loader) validateIncast(p *Plan, runs bool) {
	in := p.Probes.Incast
	path := "probes.incast"
	l.validatePerftest(p, path, in.Perftest, false)
	if !runs {
		return
	}
	if p.Expectations.LinkLayer != LinkLayerEthernet {
		l.errorf(path+".enabled", "the incast probe proves the PFC and ECN of an Ethernet switch; the plan's link layer is %s", p.Expectations.LinkLayer)
	}
	if p.Expectations.PFCPriority == nil {
		l.errorf(path+".enabled", "the incast probe proves that the switch pauses or marks RoCE on the lossless priority, and the plan names none (expectations.pfc_priority): set it, or turn the incast probe off for a fabric that is lossy by design")
	}
	if len(p.Nodes) < in.Senders+1 {
		l.errorf(l.firstWritten(path+".senders", path+".enabled"), "an incast of %s senders needs %d nodes (a receiver and its senders), the plan has %d",
			l.describeValue(path+".senders", in.Senders), in.Senders+1, len(p.Nodes))
	}
	portRange := path + ".port_range"
	if widest := p.widestNode(); widest != nil && in.PortRange.Len() < len(widest.Interfaces)*in.Senders {
		l.errorf(portRange, "%s has %d ports but the receiver runs one server per sender on each rail: node %s has %d compute interfaces × %d senders = %d ports",
			l.describeValue(portRange, in.PortRange), in.PortRange.Len(), widest.Name, len(widest.Interfaces), in.Senders, len(widest.Interfaces)*in.Senders)
	}
	for _, other := range []struct {
		path string
		t    Perftest
	}{{"probes.ib_write_bw", p.Probes.IBWriteBW}, {"probes.ib_write_lat", p.Probes.IBWriteLat}} {
		if p.Probes.Enabled && other.t.Enabled && in.PortRange.overlaps(other.t.PortRange) {
			l.errorf(portRange, "%s overlaps %s's %s: their responders listen while an incast runs, so each needs its own ports", in.PortRange, other.path, other.t.PortRange)
		}
	}
	if in.Interval > 0 {
		rounds := IncastRounds(len(p.Nodes), in.Senders, p.Probes.MaxFabricShare)
		if slot := in.Interval / time.Duration(rounds); slot <= in.Timeout {
			l.errorf(l.firstWritten("probes.max_fabric_share", path+".interval"),
				"max_fabric_share %v splits the incast interval %v into %d rounds of %v for %d nodes in groups of %d, not longer than its timeout %v: raise max_fabric_share or the interval, or lower the timeout",
				p.Probes.MaxFabricShare, in.Interval, rounds, slot, len(p.Nodes), in.Senders+1, in.Timeout)
		}
	}
	// A round holds at least one group (IncastRounds): where the share is less
	// than one group of the plan's nodes, every incast loads more than the share.
	if size, share := in.Senders+1, p.Probes.MaxFabricShare; len(p.Nodes) >= size && share < 1 && float64(size) > share*float64(len(p.Nodes)) {
		l.warnf(l.firstWritten("probes.max_fabric_share", path+".senders", path+".enabled"),
			"max_fabric_share %v of %d nodes is %.1f nodes, less than one incast of a receiver and %d senders: each incast round loads %d nodes (%.0f%%) regardless; lower probes.incast.senders or raise max_fabric_share",
			share, len(p.Nodes), share*float64(len(p.Nodes)), in.Senders, size, 100*float64(size)/float64(len(p.Nodes)))
	}
}

// firstWritten picks the path the operator wrote, so that an error about a pair of values
// points at the one they can see; with both written it picks the first.
func (l *loader) firstWritten(paths ...string) string {
	for _, path := range paths {
		if l.isWritten(path) {
			return path
		}
	}
	return paths[0]
}

// describeValue shows a value and whether it came from the file or from the defaults.
func (l *loader) describeValue(path string, value any) string {
	if l.isWritten(path) {
		return fmt.Sprint(value)
	}
	return fmt.Sprintf("%v (the default)", value)
}

func (l *loader) validateSchedule(path string, s Schedule) {
	interval := path + ".interval"
	if s.Interval <= 0 {
		return
	}
	for _, limit := range []struct {
		key   string
		value time.Duration
		why   string
	}{
		{"timeout", s.Timeout, "a run must end before the next one is due"},
		{"jitter", s.Jitter, "the random delay must leave the run inside its interval"},
	} {
		if limit.value <= 0 || limit.value < s.Interval {
			continue
		}
		limitPath := path + "." + limit.key
		l.errorf(l.firstWritten(limitPath, interval), "%s %s must be shorter than interval %s: %s",
			limit.key, l.describeValue(limitPath, limit.value), l.describeValue(interval, s.Interval), limit.why)
	}
}

// validateFreshness keeps how long a result counts (fresh_rounds intervals plus the
// timeout) within MaxFreshFor. Past it the product wrapped around: 6500h × 100 made the
// store forget every result as it was added.
func (l *loader) validateFreshness(path string, s Schedule, rounds int) {
	if s.Interval <= 0 || rounds <= 0 || !freshForOverflows(s, rounds, MaxFreshFor) {
		return
	}
	interval := path + ".interval"
	if path == "probes.ib_write_bw" || path == "probes.ib_write_lat" {
		interval = l.firstWritten(interval, "probes.nic_test_interval")
	}
	days := float64(rounds) * s.Interval.Hours() / 24
	l.errorf(l.firstWritten("probes.fresh_rounds", interval),
		"probes.fresh_rounds %s × %s's interval %s is about %.0f days: a result would count for more than %.0f days, longer than it says anything about a link; lower fresh_rounds or the interval",
		l.describeValue("probes.fresh_rounds", rounds), path, l.describeValue(interval, s.Interval), days, MaxFreshFor.Hours()/24)
}

func (l *loader) validatePerftest(p *Plan, path string, t Perftest, runs bool) {
	if t.Duration > 0 && t.Timeout > 0 && t.Timeout <= t.Duration {
		timeout, duration := path+".timeout", path+".duration"
		l.errorf(l.firstWritten(timeout, duration), "timeout %s must be longer than duration %s, or every run is killed before it reports",
			l.describeValue(timeout, t.Timeout), l.describeValue(duration, t.Duration))
	}
	if !runs || t.PortRange.Len() == 0 {
		return
	}
	widest := p.widestNode()
	if widest == nil || len(widest.Interfaces) <= t.PortRange.Len() {
		return
	}
	portRange := path + ".port_range"
	l.errorf(portRange, "%s has %d ports but node %s has %d compute interfaces; every interface runs its own responder on its own port",
		l.describeValue(portRange, t.PortRange), t.PortRange.Len(), widest.Name, len(widest.Interfaces))
}

// widestNode is the node with the most compute interfaces, the first one on a tie.
func (p *Plan) widestNode() *Node {
	var widest *Node
	for _, n := range p.Nodes {
		if widest == nil || len(n.Interfaces) > len(widest.Interfaces) {
			widest = n
		}
	}
	return widest
}

// validateFleetRounds checks that the rounds max_fabric_share splits an interval into
// are long enough for a run: a round shorter than the timeout would overlap the next.
func (l *loader) validateFleetRounds(p *Plan, path string, s Schedule, runs bool) {
	if !runs || s.Interval <= 0 {
		return
	}
	rounds := PairRounds(len(p.Nodes), p.Probes.MaxFabricShare)
	slot := s.Interval / time.Duration(rounds)
	where := l.firstWritten("probes.max_fabric_share", path+".interval", "probes.nic_test_interval")
	switch {
	case slot <= s.Timeout:
		l.errorf(where,
			"max_fabric_share %v splits %s's interval %v into %d rounds of %v for %d nodes, not longer than its timeout %v: raise max_fabric_share or the interval (probes.nic_test_interval), or lower the timeout",
			p.Probes.MaxFabricShare, path, s.Interval, rounds, slot, len(p.Nodes), s.Timeout)
	case len(p.Nodes) > 2 && slot < 2*RetestedRunLength(s.Timeout):
		// A run fits, but not its retest and a witness test after the round's own:
		// failures are then recorded unconfirmed or not triangulated, and suspects are
		// named an interval or more later.
		l.warnf(where,
			"max_fabric_share %v splits %s's interval %v into %d rounds of %v for %d nodes: a round needs %v to retest a failure and test it against a witness (each twice the timeout %v plus %v), so a fault found in it is named an interval or more late; raise the interval (probes.nic_test_interval) or max_fabric_share, or lower the timeout",
			p.Probes.MaxFabricShare, path, s.Interval, rounds, slot, len(p.Nodes), 2*RetestedRunLength(s.Timeout), s.Timeout, RetestDelay+runMargin)
	}
}

// warnUntestableRails names the rails that no other node can pair with: the pair
// probes would leave them untested without a word.
func (l *loader) warnUntestableRails(p *Plan) {
	widest, second := -1, -1
	for _, n := range p.Nodes {
		switch w := len(n.Interfaces); {
		case w > widest:
			widest, second = w, widest
		case w > second:
			second = w
		}
	}
	for i, n := range p.Nodes {
		other := widest
		if len(n.Interfaces) == widest {
			other = second // its own count is not a partner; a tie keeps widest
			for _, m := range p.Nodes {
				if m != n && len(m.Interfaces) == widest {
					other = widest
					break
				}
			}
		}
		rails := untestable(n, other)
		if len(rails) == 0 {
			continue
		}
		l.warnf(fmt.Sprintf("nodes[%d].interfaces[%d]", i, rails[0]),
			"node %s has %d compute interfaces but no other node has more than %d: the pair probes pair rail i with rail i, so its rail(s) %s (%s) cannot be tested by any peer (roce_probe_untestable_rails)",
			n.Name, len(n.Interfaces), other, railList(rails), n.Interfaces[rails[0]].Netdev)
	}
}

func railList(rails []int) string {
	parts := make([]string, len(rails))
	for i, r := range rails {
		parts[i] = strconv.Itoa(r)
	}
	return strings.Join(parts, ", ")
}
