package health

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/node"
)

// The node's rails in one subnet, 10.226.0.0/24, as in the namespaces of
// internal/rtnl/testdata: rail i at 10.226.0.(11+i), node02's rail i at
// 10.226.0.(21+i).
func sharedIP(i int) netip.Addr   { return netip.AddrFrom4([4]byte{10, 226, 0, byte(11 + i)}) }
func sharedPeer(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 226, 0, byte(21 + i)}) }

func sharedPlan(p *config.Plan) {
	for _, n := range p.Nodes {
		for i, ci := range n.Interfaces {
			a := sharedIP(i)
			if n.Name == "node02" {
				a = sharedPeer(i)
			}
			ci.Address = netip.PrefixFrom(a, 24)
		}
	}
}

// sharedDefaults is the state record-ip-json.sh starts from: default
// sysctls, no policy rules, the subnet's route per rail in main (rail 0's
// first), and both of node02's first rails resolved on rail 0 to one MAC.
func sharedDefaults(s *node.Snapshot) {
	h := healthyHost()
	h.Routes = nil
	for i := 0; i < testRails; i++ {
		nd, ip := netdevName(i), sharedIP(i)
		s.Interfaces[nd].Addresses = []netip.Prefix{netip.PrefixFrom(ip, 24)}
		for j := range port(s, i).GIDs {
			if _, ok := port(s, i).GIDs[j].IPv4(); ok {
				port(s, i).GIDs[j].GID = mappedGID(ip)
			}
		}
		h.Routes = append(h.Routes,
			node.Route{Table: node.TableMain, Dst: netip.MustParsePrefix("10.226.0.0/24"), Type: "unicast", Dev: nd, PrefSrc: ip},
			node.Route{Table: node.TableLocal, Dst: netip.PrefixFrom(ip, 32), Type: "local", Dev: nd, PrefSrc: ip})
	}
	h.Neighbors = []node.Neighbor{
		{Dev: netdevName(0), IP: sharedPeer(0), MAC: peerMAC(0), State: "REACHABLE"},
		{Dev: netdevName(0), IP: sharedPeer(1), MAC: peerMAC(0), State: "REACHABLE"},
	}
	s.Host = h
}

// sharedFixed applies the fixes: the sysctls on conf.all, a table and a
// rule per rail, and node02's rails resolved each on its rail.
func sharedFixed(s *node.Snapshot) {
	sharedDefaults(s)
	h := s.Host
	h.IPv4Conf["all"] = &node.IPv4Conf{ARPIgnore: 1, ARPAnnounce: 2, RPFilter: 2}
	h.Neighbors = nil
	for i := 0; i < testRails; i++ {
		nd, ip := netdevName(i), sharedIP(i)
		table := fmt.Sprint(101 + i)
		h.Rules = append(h.Rules, node.PolicyRule{Priority: 1001 + i, Src: netip.PrefixFrom(ip, 32), Action: node.RuleLookup, Table: table, SuppressPrefixLen: -1})
		h.Routes = append(h.Routes, node.Route{Table: table, Dst: netip.MustParsePrefix("10.226.0.0/24"), Type: "unicast", Dev: nd, PrefSrc: ip})
		h.Neighbors = append(h.Neighbors, node.Neighbor{Dev: nd, IP: sharedPeer(i), MAC: peerMAC(i), State: "REACHABLE"})
	}
}

func then(fs ...func(s *node.Snapshot)) func(s *node.Snapshot) {
	return func(s *node.Snapshot) {
		for _, f := range fs {
			f(s)
		}
	}
}

func TestARPFluxSysctlsCheck(t *testing.T) {
	const id = "arp_flux_sysctls"
	runCases(t, []checkCase{
		{name: "default sysctls", plan: sharedPlan, snap: sharedDefaults, id: id, subject: netdevName(1), want: StatusFail,
			msg:    []string{"ens2f0np0 shares 10.226.0.0/24 with ens1f0np0, ens3f0np0", "arp_ignore 0: the NIC answers ARP for the addresses of the other NICs", "arp_announce 0"},
			notMsg: []string{"rp_filter"},
			fix:    []string{"net.ipv4.conf.all.arp_ignore = 1", "net.ipv4.conf.all.arp_announce = 2", "/etc/sysctl.d/90-roce-multi-nic.conf", "sysctl --system", "ip neigh flush all"}},
		{name: "fixed", plan: sharedPlan, snap: sharedFixed, id: id, subject: netdevName(1), want: StatusOK,
			msg: []string{"arp_ignore 1, arp_announce 2, rp_filter 2 (the larger of conf.all and conf.ens2f0np0)"}},
		// RHEL's strict default.
		{name: "strict rp_filter", plan: sharedPlan, snap: then(sharedFixed, func(s *node.Snapshot) { s.Host.IPv4Conf["all"].RPFilter = 1 }),
			id: id, subject: netdevName(1), want: StatusFail, msg: []string{"rp_filter 1, strict"}, notMsg: []string{"arp_ignore"}, fix: []string{"net.ipv4.conf.all.rp_filter = 2"}},
		// The interface's own value counts when it is the larger.
		{name: "interface's arp_ignore 8", plan: sharedPlan, snap: then(sharedFixed, func(s *node.Snapshot) { s.Host.IPv4Conf[netdevName(1)].ARPIgnore = 8 }),
			id: id, subject: netdevName(1), want: StatusFail, msg: []string{"arp_ignore 8: the NIC does not answer ARP for its own address"}, fix: []string{"net.ipv4.conf.ens2f0np0.arp_ignore = 1"}},
		{name: "interface's value set, all's not", plan: sharedPlan, snap: then(sharedDefaults, func(s *node.Snapshot) {
			*s.Host.IPv4Conf[netdevName(1)] = node.IPv4Conf{ARPIgnore: 2, ARPAnnounce: 2}
		}), id: id, subject: netdevName(1), want: StatusOK},
		{name: "a subnet per rail", id: id, subject: SubjectNode, want: StatusSkipped, msg: []string{"no two compute interfaces share an IPv4 subnet"}},
		{name: "sysctls unread", plan: sharedPlan, snap: then(sharedDefaults, func(s *node.Snapshot) { s.Host.IPv4Conf = nil }),
			id: id, subject: netdevName(1), want: StatusSkipped, msg: []string{"net.ipv4.conf.all could not be read"}},
		{name: "host collector off", plan: sharedPlan, snap: then(sharedDefaults, func(s *node.Snapshot) { s.Host = nil; delete(s.Sources, node.SourceHost) }),
			id: id, subject: SubjectNode, want: StatusSkipped, msg: []string{"--collector.host"}},
		// Without a plan, the interfaces' own addresses tell.
		{name: "no plan", noPlan: true, snap: sharedDefaults, id: id, subject: netdevName(2), want: StatusFail},
	})
}

func TestPerRailRoutingCheck(t *testing.T) {
	const id = "per_rail_source_routing"
	runCases(t, []checkCase{
		{name: "main only: rail 1 leaves by rail 0", plan: sharedPlan, snap: sharedDefaults, id: id, subject: netdevName(1), want: StatusFail,
			msg: []string{"traffic from its address 10.226.0.12 to node02's rail 1 address 10.226.0.22 leaves by ens1f0np0 (rule 32766 (from all lookup main))"},
			fix: []string{"ip route replace 10.226.0.0/24 dev ens2f0np0 src 10.226.0.12 table 101 && ip rule add from 10.226.0.12 table 101 priority 1001", "routing-policy:", "nmcli connection modify", "[RoutingPolicyRule] From=10.226.0.12 Table=101"}},
		{name: "main only: rail 0 by luck", plan: sharedPlan, snap: sharedDefaults, id: id, subject: netdevName(0), want: StatusWarn,
			msg: []string{"leaves by ens1f0np0 only because table main lists this NIC's route for the subnet first (rule 32766 (from all lookup main))"}},
		{name: "per-rail tables", plan: sharedPlan, snap: sharedFixed, id: id, subject: netdevName(1), want: StatusOK,
			msg: []string{"leaves by ens2f0np0 (rule 1002 (from 10.226.0.12 lookup 102))"}},
		{name: "rule to a table routing elsewhere", plan: sharedPlan, snap: then(sharedFixed, func(s *node.Snapshot) {
			for i := range s.Host.Routes {
				if s.Host.Routes[i].Table == "102" {
					s.Host.Routes[i].Dev = netdevName(2)
				}
			}
		}), id: id, subject: netdevName(1), want: StatusFail, msg: []string{"leaves by ens3f0np0 (rule 1002"}},
		{name: "an unreachable rule first", plan: sharedPlan, snap: then(sharedFixed, func(s *node.Snapshot) {
			s.Host.Rules = append(s.Host.Rules, node.PolicyRule{Priority: 500, Action: "unreachable", SuppressPrefixLen: -1})
		}), id: id, subject: netdevName(1), want: StatusFail, msg: []string{"is refused (unreachable by rule 500"}},
		{name: "without a plan: an address of the subnet", noPlan: true, snap: sharedDefaults, id: id, subject: netdevName(2), want: StatusFail,
			msg: []string{"to 10.226.0.1 in 10.226.0.0/24 leaves by ens1f0np0"}},
		{name: "routing unread", plan: sharedPlan, snap: then(sharedDefaults, func(s *node.Snapshot) { s.Host.Rules = nil }),
			id: id, subject: netdevName(1), want: StatusSkipped, msg: []string{"were not read"}},
	})
}

func TestNeighborEntriesCheck(t *testing.T) {
	const id = "neighbor_entries_on_rail"
	runCases(t, []checkCase{
		{name: "ARP flux: one MAC for two rails", plan: sharedPlan, snap: sharedDefaults, id: id, subject: netdevName(0), want: StatusFail,
			msg: []string{"node02's rail 1 address 10.226.0.22 resolved to 0a:00:00:00:02:00, a MAC node02 also answers for at 10.226.0.21", "reaches the wrong NIC"},
			fix: []string{"arp_ignore 1", "ip neigh flush dev ens1f0np0"}},
		{name: "ARP flux: rail 1's peer only on rail 0", plan: sharedPlan, snap: sharedDefaults, id: id, subject: netdevName(1), want: StatusWarn,
			msg: []string{"node02's rail 1 address 10.226.0.22 was resolved only on ens1f0np0, not on ens2f0np0"}},
		{name: "fixed", plan: sharedPlan, snap: sharedFixed, id: id, subject: netdevName(1), want: StatusOK,
			msg: []string{"1 neighbour entry of peers' compute addresses on ens2f0np0, each with its own MAC"}},
		{name: "a subnet per rail, healthy", id: id, subject: netdevName(2), want: StatusOK},
		{name: "FAILED on the rail", snap: func(s *node.Snapshot) {
			s.Host.Neighbors[1] = node.Neighbor{Dev: netdevName(1), IP: peerIP(1), State: "FAILED"}
		}, id: id, subject: netdevName(1), want: StatusWarn, msg: []string{"node02's rail 1 address 192.168.101.12 does not answer ARP here (FAILED)"}},
		{name: "nothing learnt", snap: func(s *node.Snapshot) { s.Host.Neighbors = []node.Neighbor{} }, id: id, subject: netdevName(1), want: StatusSkipped,
			msg: []string{"no neighbour entry of a peer's compute address on ens2f0np0"}},
		{name: "neighbours unread", snap: func(s *node.Snapshot) { s.Host.Neighbors = nil }, id: id, subject: SubjectNode, want: StatusSkipped,
			msg: []string{"was not read"}},
		{name: "no plan", noPlan: true, id: id, subject: SubjectNode, want: StatusSkipped, msg: []string{SkipNoPlan}},
	})
}

func TestMemlockCheck(t *testing.T) {
	const id = "memlock_for_rdma"
	memlock := func(edit func(m *node.Memlock)) func(s *node.Snapshot) {
		return func(s *node.Snapshot) { edit(s.Host.Memlock) }
	}
	kib8M := node.MemlockValue(8 << 20)
	runCases(t, []checkCase{
		{name: "unlimited everywhere", id: id, subject: SubjectNode, want: StatusOK,
			msg: []string{"login sessions (ssh, mpirun's remote ranks) get an unlimited memlock limit (/etc/security/limits.d/rdma.conf:3", "DefaultLimitMEMLOCK is not set", "exporter's own memlock limit is unlimited", "ulimit -l"}},
		{name: "nothing raised", snap: memlock(func(m *node.Memlock) { m.Limits = nil }), id: id, subject: SubjectNode, want: StatusWarn,
			msg: []string{"get the 8 MiB default (no memlock line for * in limits.conf or limits.d)", "Cannot allocate memory"},
			fix: []string{"* soft memlock unlimited", "/etc/security/limits.d/rdma.conf", "LimitMEMLOCK=infinity", "--ulimit memlock=-1"}},
		{name: "a group only", snap: memlock(func(m *node.Memlock) {
			m.Limits = []node.MemlockSetting{{File: "/etc/security/limits.conf", Line: 60, Domain: "@rdma", Type: "-", Soft: node.Unlimited, Hard: node.Unlimited}}
		}), id: id, subject: SubjectNode, want: StatusOK, msg: []string{"unlimited for @rdma only"}},
		{name: "star at 64 KiB", snap: memlock(func(m *node.Memlock) {
			m.Limits = []node.MemlockSetting{{File: "/etc/security/limits.conf", Line: 1, Domain: "*", Type: "-", Soft: 64 << 10, Hard: 64 << 10}}
		}), id: id, subject: SubjectNode, want: StatusWarn, msg: []string{"get 64 KiB of locked memory"}},
		{name: "systemd default set", snap: memlock(func(m *node.Memlock) {
			m.SystemdDefault = &node.MemlockSetting{File: "/etc/systemd/system.conf.d/memlock.conf", Line: 2, Soft: node.Unlimited, Hard: node.Unlimited}
		}), id: id, subject: SubjectNode, want: StatusOK, msg: []string{"DefaultLimitMEMLOCK is unlimited (/etc/systemd/system.conf.d/memlock.conf:2)"}},
		{name: "probes without CAP_IPC_LOCK", snap: memlock(func(m *node.Memlock) {
			m.SelfSoft, m.SelfHard, m.SelfCapIPCLock = kib8M, kib8M, false
		}), id: id, subject: SubjectNode, want: StatusFail,
			msg: []string{"the exporter's own memlock limit is 8 MiB (soft), 8 MiB (hard), without CAP_IPC_LOCK", "Couldn't allocate MR"},
			fix: []string{"roce_exporter-probes.conf"}},
		{name: "probes off: the exporter's own limit is no fault", plan: func(p *config.Plan) { p.Probes.Enabled = false }, snap: memlock(func(m *node.Memlock) {
			m.SelfSoft, m.SelfHard, m.SelfCapIPCLock = kib8M, kib8M, false
		}), id: id, subject: SubjectNode, want: StatusOK, msg: []string{"without CAP_IPC_LOCK"}},
		{name: "in a container", snap: memlock(func(m *node.Memlock) {
			m.HostConfig, m.Container, m.Limits = false, "/.dockerenv", nil
			m.SelfSoft, m.SelfHard, m.SelfCapIPCLock = kib8M, kib8M, true
		}), id: id, subject: SubjectNode, want: StatusSkipped,
			msg: []string{"runs in a container (/.dockerenv)", "--ulimit memlock=-1", "IPC_LOCK", "--path.rootfs"}},
		{name: "in a container, probes without IPC_LOCK", snap: memlock(func(m *node.Memlock) {
			m.HostConfig, m.Container = false, "/.dockerenv"
			m.SelfSoft, m.SelfHard = kib8M, kib8M
			m.SelfCapIPCLock = false
		}), id: id, subject: SubjectNode, want: StatusFail, msg: []string{"runs in a container", "Couldn't allocate MR"}},
		{name: "not read", snap: func(s *node.Snapshot) { s.Host.Memlock = nil }, id: id, subject: SubjectNode, want: StatusSkipped},
	})
}

func TestNICModelCheck(t *testing.T) {
	const id = "nic_model_same_on_rails"
	runCases(t, []checkCase{
		{name: "one model", id: id, subject: devName(1), want: StatusOK, msg: []string{"MT4129 MT_0000000838, the model of all 3 rails"}},
		{name: "a ConnectX-6 Dx on rail 2", snap: func(s *node.Snapshot) {
			s.Devices[2].HCAType, s.Devices[2].BoardID = "MT4125", "MT_0000000359"
		}, id: id, subject: devName(2), want: StatusWarn,
			msg: []string{"rail 2 is MT4125 MT_0000000359 while the node's rails differ (MT4129 MT_0000000838 on rail 0, 1; MT4125 MT_0000000359 on rail 2)", "step 5"},
			fix: []string{"ibv_devinfo -d mlx5_2", "RoCENICModelDiffersOnRail"}},
		{name: "the majority stays ok", snap: func(s *node.Snapshot) {
			s.Devices[2].HCAType, s.Devices[2].BoardID = "MT4125", "MT_0000000359"
		}, id: id, subject: devName(0), want: StatusOK, msg: []string{"the model of most rails"}},
		{name: "no plan", noPlan: true, id: id, subject: SubjectNode, want: StatusSkipped},
	})
}
