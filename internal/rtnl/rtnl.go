// Package rtnl reads the IPv4 policy rules, routes and neighbour (ARP)
// entries of the host's network namespace: rtnetlink dumps (RTM_GETRULE,
// RTM_GETROUTE, RTM_GETNEIGH, with RTM_GETLINK for the interface names)
// over github.com/mdlayher/netlink, and their captures as
// `ip -j rule show`, `ip -j route show table all` and `ip -j neigh show`
// print them. No library the exporter uses decodes these messages
// (mdlayher/netlink carries bytes; vishvananda/netlink is not a
// dependency), so the decoders are here: pure functions over byte slices,
// tested against the kernel's own dumps.
//
// Sources: include/uapi/linux/fib_rules.h, rtnetlink.h, neighbour.h and
// if_link.h of the Linux kernel; ip/iprule.c, iproute.c and ipneigh.c of
// iproute2 for the names and the JSON.
package rtnl

import "errors"

// Message types (include/uapi/linux/rtnetlink.h).
const (
	rtmNewLink  = 16
	rtmGetLink  = 18
	rtmNewRoute = 24
	rtmGetRoute = 26
	rtmNewNeigh = 28
	rtmGetNeigh = 30
	rtmNewRule  = 32
	rtmGetRule  = 34
)

const afInet = 2 // AF_INET

// struct fib_rule_hdr {family, dst_len, src_len, tos, table, res1, res2,
// action; u32 flags} and its attributes (enum FRA_*).
const (
	sizeofFibRuleHdr = 12

	fraDst               = 1
	fraSrc               = 2
	fraIifname           = 3
	fraGoto              = 4
	fraPriority          = 6
	fraFwmark            = 10
	fraFlow              = 11
	fraSuppressIfgroup   = 13
	fraSuppressPrefixlen = 14
	fraTable             = 15
	fraFwmask            = 16
	fraOifname           = 17
	fraL3mdev            = 19
	fraUIDRange          = 20
	fraIPProto           = 22
	fraSportRange        = 23
	fraDportRange        = 24

	fibRuleInvert = 0x2 // FIB_RULE_INVERT

	frActToTbl = 1 // FR_ACT_TO_TBL
	frActGoto  = 2
	frActNop   = 3
)

// struct rtmsg {family, dst_len, src_len, tos, table, protocol, scope,
// type; u32 flags} and its attributes (enum rtattr_type_t).
const (
	sizeofRtmsg = 12

	rtaDst       = 1
	rtaOif       = 4
	rtaGateway   = 5
	rtaPriority  = 6
	rtaPrefsrc   = 7
	rtaMultipath = 9
	rtaTable     = 15

	sizeofRtnexthop = 8 // struct rtnexthop {u16 len; u8 flags, hops; int ifindex}
)

// struct ndmsg {family, pad1, u16 pad2, s32 ifindex, u16 state, u8 flags,
// u8 type} and its attributes (enum NDA_*).
const (
	sizeofNdmsg = 12

	ndaDst    = 1
	ndaLladdr = 2
)

// struct ifinfomsg {family, pad, u16 type, s32 index, u32 flags, u32
// change} and IFLA_IFNAME.
const (
	sizeofIfinfomsg = 16
	iflaIfname      = 3
)

// Route types (enum RTN_*), as ip names them (rtnl_rtntype_n2a).
var routeTypes = map[uint8]string{
	0: "none", 1: "unicast", 2: "local", 3: "broadcast", 4: "anycast", 5: "multicast",
	6: "blackhole", 7: "unreachable", 8: "prohibit", 9: "throw", 10: "nat", 11: "xresolve",
}

// Route tables with names of their own (rt_tables).
var tableNames = map[uint32]string{253: "default", 254: "main", 255: "local"}

// NUD states in the order ip prints them (ipneigh.c print_neigh_state).
var nudStates = []struct {
	bit  uint16
	name string
}{
	{0x01, "INCOMPLETE"}, {0x02, "REACHABLE"}, {0x04, "STALE"}, {0x08, "DELAY"},
	{0x10, "PROBE"}, {0x20, "FAILED"}, {0x40, "NOARP"}, {0x80, "PERMANENT"},
}

// errMalformed is wrapped by every error about a message or capture that
// cannot be decoded.
var errMalformed = errors.New("rtnl: malformed input")

// ErrMalformed reports whether err is about input that could not be decoded.
func ErrMalformed(err error) bool { return errors.Is(err, errMalformed) }
