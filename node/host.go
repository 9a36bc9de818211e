package node

import (
	"net/netip"
	"slices"
)

// SourceHost reads the host configuration RDMA traffic and jobs depend on
// besides the NICs: the IPv4 ARP and reverse-path sysctls of the compute
// interfaces, the policy rules, routes and neighbour entries, and the
// memlock limits jobs start with.
const SourceHost = "host"

// HostState is the host's side of RDMA: how the kernel answers ARP and
// routes for the compute interfaces, and how much memory jobs may pin. A nil
// part was not read.
type HostState struct {
	// IPv4Conf holds net.ipv4.conf.<name> of "all" and of each interface
	// read, by name.
	IPv4Conf map[string]*IPv4Conf
	// Rules, Routes and Neighbors are the IPv4 policy rules (in priority
	// order), routes of every table and neighbour (ARP) entries; nil when
	// not read, empty when there are none.
	Rules     []PolicyRule
	Routes    []Route
	Neighbors []Neighbor
	// Memlock is what decides RLIMIT_MEMLOCK for jobs; nil when not read.
	Memlock *Memlock
}

// IPv4Conf is one interface's (or "all"'s) IPv4 sysctls that decide which
// NIC answers ARP and which packets reverse-path filtering drops; -1 when
// unreadable.
type IPv4Conf struct {
	ARPIgnore, ARPAnnounce, RPFilter int
}

// Effective is the value the kernel applies on an interface for a sysctl
// whose rule is "the max value from conf/{all,interface}" (ip-sysctl.rst:
// arp_ignore, arp_announce, rp_filter); ok is false when either is unknown.
func Effective(all, iface int) (int, bool) {
	if all < 0 || iface < 0 {
		return 0, false
	}
	return max(all, iface), true
}

// Route tables by the names iproute2 gives the kernel's fixed ones
// (/etc/iproute2/rt_tables); others are numbers, or the names a capture's
// rt_tables gave them.
const (
	TableLocal   = "local"
	TableMain    = "main"
	TableDefault = "default"
)

// Rule actions other than a table lookup ("lookup").
const (
	RuleLookup = "lookup"
	RuleGoto   = "goto"
	RuleNop    = "nop"
)

// PolicyRule is one IPv4 policy routing rule (`ip rule`).
type PolicyRule struct {
	Priority int
	// Src is the source prefix the rule matches; invalid for "from all".
	Src netip.Prefix
	// Invert: the rule matches what does not match its selectors ("not").
	Invert bool
	// Selective: the rule has a selector besides the source (destination,
	// tos, fwmark, iif, oif, uid, ports, l3mdev), so it does not apply to
	// every packet from Src; SelectorText names them.
	Selective    bool
	SelectorText string
	// Action is RuleLookup, RuleGoto, RuleNop or a route type the rule
	// ends the lookup with ("unreachable", "blackhole", "prohibit").
	Action string
	Table  string
	// SuppressPrefixLen rejects a lookup's result whose prefix is this
	// long or shorter (-1: none; wg-quick's "suppress_prefixlength 0").
	SuppressPrefixLen int
}

// Route is one IPv4 route.
type Route struct {
	Table string
	// Dst is 0.0.0.0/0 for the default route.
	Dst netip.Prefix
	// Type is "unicast", "local", "broadcast", "unreachable", "blackhole",
	// "prohibit", "throw", ...
	Type    string
	Dev     string
	Gateway netip.Addr
	PrefSrc netip.Addr
	Metric  int
}

// Neighbor is one IPv4 neighbour (ARP) entry.
type Neighbor struct {
	Dev string
	IP  netip.Addr
	// MAC is "" for an entry without a link-layer address (INCOMPLETE,
	// FAILED).
	MAC string
	// State is the entry's NUD state as ip prints it (REACHABLE, STALE,
	// DELAY, PROBE, FAILED, INCOMPLETE, NOARP, PERMANENT).
	State string
}

// RouteDecision is where the kernel would send a packet.
type RouteDecision struct {
	// Rule is the rule whose lookup decided (nil: no rule matched, or the
	// lookup failed); Route the route it found.
	Rule  *PolicyRule
	Route *Route
	// Refused is the action of a rule that ended the lookup without a
	// route ("unreachable", "blackhole", "prohibit"), or the type of such a
	// route.
	Refused string
}

// Lookup follows the policy rules the way the kernel's FIB does for a
// locally generated IPv4 packet from src to dst (fib_rules_lookup,
// fib_table_lookup): rules in priority order, each matching by its source;
// a lookup rule searches its table for the longest prefix holding dst and
// ends the walk when it finds one (unless suppress_prefixlength rejects
// it); a route of type throw goes on to the next rule. Rules with other
// selectors (a destination, fwmark, iif, oif, uid, ports, l3mdev) and goto
// rules are not modelled and are passed over: they select traffic the
// checks do not send. Routes of equal prefix go by lowest metric, then
// table order.
func (h *HostState) Lookup(src, dst netip.Addr) RouteDecision {
	rules := slices.Clone(h.Rules)
	slices.SortStableFunc(rules, func(a, b PolicyRule) int { return a.Priority - b.Priority })
	for i := range rules {
		r := &rules[i]
		match := !r.Src.IsValid() || r.Src.Contains(src)
		if r.Invert {
			match = !match
		}
		if !match || r.Selective {
			continue
		}
		switch r.Action {
		case RuleLookup:
		case RuleGoto, RuleNop:
			continue
		default:
			return RouteDecision{Rule: r, Refused: r.Action}
		}
		rt := h.longestMatch(r.Table, dst)
		if rt == nil || (r.SuppressPrefixLen >= 0 && rt.Dst.Bits() <= r.SuppressPrefixLen) {
			continue
		}
		switch rt.Type {
		case "throw":
			continue
		case "unreachable", "blackhole", "prohibit":
			return RouteDecision{Rule: r, Route: rt, Refused: rt.Type}
		}
		return RouteDecision{Rule: r, Route: rt}
	}
	return RouteDecision{}
}

func (h *HostState) longestMatch(table string, dst netip.Addr) *Route {
	var best *Route
	for i := range h.Routes {
		rt := &h.Routes[i]
		if rt.Table != table || !rt.Dst.Contains(dst) {
			continue
		}
		if rt.Type == "broadcast" || rt.Type == "local" || rt.Type == "multicast" || rt.Type == "anycast" {
			// Local and broadcast routes hold only their own addresses.
			if rt.Dst.Addr() != dst {
				continue
			}
		}
		if best == nil || rt.Dst.Bits() > best.Dst.Bits() || rt.Dst.Bits() == best.Dst.Bits() && rt.Metric < best.Metric {
			best = rt
		}
	}
	return best
}

// Memlock is what decides how much memory an RDMA job may pin
// (RLIMIT_MEMLOCK; ib_umem_get fails with ENOMEM past it unless the process
// has CAP_IPC_LOCK): the host's defaults, where the exporter sees the
// host's /etc, and the exporter's own limit.
type Memlock struct {
	// HostConfig is false when the exporter runs in a container without the
	// host's root (--path.rootfs): the files below are then the container's.
	HostConfig bool
	// Container says why HostConfig is false ("/.dockerenv", the cgroup).
	Container string
	// SystemdDefault is systemd's DefaultLimitMEMLOCK= (system.conf and its
	// drop-ins), nil when none sets it: systemd's own default (8M) applies to
	// every service, and the containers of docker and containerd with them.
	SystemdDefault *MemlockSetting
	// Limits are the memlock lines of /etc/security/limits.conf and
	// limits.d/*.conf, in the order pam_limits reads them: what login
	// sessions (ssh, hence mpirun's remote ranks, and Slurm jobs that
	// propagate the submitting shell's limits) start with.
	Limits []MemlockSetting
	// Self is the exporter's own limit and capability, which the probes'
	// ib_write_bw inherit; SelfKnown is false when unreadable.
	SelfKnown      bool
	SelfSoft       MemlockValue
	SelfHard       MemlockValue
	SelfCapIPCLock bool
}

// MemlockValue is a memlock limit in bytes; Unlimited for infinity.
type MemlockValue uint64

// Unlimited is RLIM_INFINITY.
const Unlimited = MemlockValue(1<<64 - 1)

// MemlockSetting is one line that sets a memlock limit.
type MemlockSetting struct {
	// File and Line locate it.
	File string
	Line int
	// Domain and Type are limits.conf's ("*", "@rdma", a user; "soft",
	// "hard", "-" for both); empty for systemd, whose Soft and Hard are
	// both set.
	Domain, Type string
	Soft, Hard   MemlockValue
}

// DefaultMemlock is RLIMIT_MEMLOCK where nothing raises it: 8 MiB since
// Linux 5.16 (commit 9dcc38e2813e) and in systemd (DefaultLimitMEMLOCK=8M,
// commit 852b62507b22).
const DefaultMemlock = MemlockValue(8 << 20)
