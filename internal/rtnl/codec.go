package rtnl

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/mdlayher/netlink"

	"github.com/roce-exporter/roce_exporter/node"
)

// The kernel lays out rtnetlink structs and attribute headers in host byte
// order; addresses are in network order.
var native = binary.NativeEndian

func attrs(b []byte, hdr int, what string) (*netlink.AttributeDecoder, error) {
	if len(b) < hdr {
		return nil, fmt.Errorf("%w: %s of %d bytes, shorter than its %d-byte header", errMalformed, what, len(b), hdr)
	}
	ad, err := netlink.NewAttributeDecoder(b[hdr:])
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errMalformed, what, err)
	}
	ad.ByteOrder = native
	return ad, nil
}

func ipv4(b []byte) (netip.Addr, error) {
	if len(b) != 4 {
		return netip.Addr{}, fmt.Errorf("IPv4 address of %d bytes", len(b))
	}
	return netip.AddrFrom4([4]byte(b)), nil
}

func prefix(b []byte, bits uint8) (netip.Prefix, error) {
	a, err := ipv4(b)
	if err != nil {
		return netip.Prefix{}, err
	}
	if bits > 32 {
		return netip.Prefix{}, fmt.Errorf("prefix length %d", bits)
	}
	return netip.PrefixFrom(a, int(bits)), nil
}

func tableName(id uint32) string {
	if n, ok := tableNames[id]; ok {
		return n
	}
	return strconv.FormatUint(uint64(id), 10)
}

// decodeRule decodes the body of an RTM_NEWRULE message; ok is false for
// a rule of another family than IPv4.
func decodeRule(b []byte) (r node.PolicyRule, ok bool, err error) {
	ad, err := attrs(b, sizeofFibRuleHdr, "RTM_NEWRULE")
	if err != nil {
		return r, false, err
	}
	if b[0] != afInet {
		return r, false, nil
	}
	dstLen, srcLen, tos, table, action, flags := b[1], b[2], b[3], uint32(b[4]), b[7], native.Uint32(b[8:])
	r = node.PolicyRule{Action: node.RuleLookup, SuppressPrefixLen: -1, Invert: flags&fibRuleInvert != 0}
	var selectors []string
	if tos != 0 {
		selectors = append(selectors, fmt.Sprintf("tos %#x", tos))
	}
	for ad.Next() {
		switch ad.Type() {
		case fraSrc:
			ad.Do(func(v []byte) (err error) { r.Src, err = prefix(v, srcLen); return err })
		case fraDst:
			selectors = append(selectors, "to a destination")
		case fraPriority:
			r.Priority = int(ad.Uint32())
		case fraTable:
			table = ad.Uint32()
		case fraSuppressPrefixlen:
			r.SuppressPrefixLen = int(int32(ad.Uint32()))
		case fraIifname:
			// Locally generated packets come in on lo: such a rule is
			// every packet the node sends.
			if iif := strings.TrimRight(ad.String(), "\x00"); iif != "lo" {
				selectors = append(selectors, "iif "+iif)
			}
		case fraOifname:
			selectors = append(selectors, "oif "+strings.TrimRight(ad.String(), "\x00"))
		case fraFwmark, fraFwmask:
			selectors = append(selectors, "fwmark")
		case fraL3mdev:
			selectors = append(selectors, "l3mdev")
		case fraUIDRange:
			selectors = append(selectors, "uidrange")
		case fraIPProto, fraSportRange, fraDportRange:
			selectors = append(selectors, "ipproto/ports")
		case fraGoto, fraFlow, fraSuppressIfgroup, 5 /* FRA_UNUSED2 */, 21 /* FRA_PROTOCOL */, 12 /* FRA_TUN_ID */, 18 /* FRA_PAD */ :
		default:
			selectors = append(selectors, fmt.Sprintf("attribute %d", ad.Type()))
		}
	}
	if err := ad.Err(); err != nil {
		return r, false, fmt.Errorf("%w: RTM_NEWRULE: %v", errMalformed, err)
	}
	if dstLen != 0 && !contains(selectors, "to a destination") {
		selectors = append(selectors, "to a destination")
	}
	r.Selective, r.SelectorText = len(selectors) > 0, strings.Join(selectors, ", ")
	switch action {
	case frActToTbl:
		r.Table = tableName(table)
	case frActGoto:
		r.Action = node.RuleGoto
	case frActNop:
		r.Action = node.RuleNop
	default:
		r.Action = routeTypes[action]
		if r.Action == "" {
			r.Action = fmt.Sprintf("action %d", action)
		}
	}
	return r, true, nil
}

func contains(ss []string, s string) bool {
	for _, v := range ss {
		if v == s {
			return true
		}
	}
	return false
}

// decodeRoute decodes the body of an RTM_NEWROUTE message; ok is false for
// a route of another family than IPv4. oif is the interface index it
// leaves by (the first next hop's of a multipath route), 0 for none.
func decodeRoute(b []byte) (r node.Route, oif int, ok bool, err error) {
	ad, err := attrs(b, sizeofRtmsg, "RTM_NEWROUTE")
	if err != nil {
		return r, 0, false, err
	}
	if b[0] != afInet {
		return r, 0, false, nil
	}
	dstLen, table, typ := b[1], uint32(b[4]), b[7]
	r.Type = routeTypes[typ]
	if r.Type == "" {
		r.Type = fmt.Sprintf("type %d", typ)
	}
	r.Dst = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
	for ad.Next() {
		switch ad.Type() {
		case rtaDst:
			ad.Do(func(v []byte) (err error) { r.Dst, err = prefix(v, dstLen); return err })
		case rtaOif:
			oif = int(int32(ad.Uint32()))
		case rtaGateway:
			ad.Do(func(v []byte) (err error) { r.Gateway, err = ipv4(v); return err })
		case rtaPrefsrc:
			ad.Do(func(v []byte) (err error) { r.PrefSrc, err = ipv4(v); return err })
		case rtaPriority:
			r.Metric = int(ad.Uint32())
		case rtaTable:
			table = ad.Uint32()
		case rtaMultipath:
			ad.Do(func(v []byte) error {
				if oif != 0 {
					return nil
				}
				if len(v) < sizeofRtnexthop {
					return fmt.Errorf("RTA_MULTIPATH of %d bytes", len(v))
				}
				oif = int(int32(native.Uint32(v[4:])))
				// The first hop's own attributes follow its header.
				hopLen := int(native.Uint16(v))
				if hopLen < sizeofRtnexthop || hopLen > len(v) {
					return fmt.Errorf("rtnexthop of length %d in %d bytes", hopLen, len(v))
				}
				hop, err := netlink.NewAttributeDecoder(v[sizeofRtnexthop:hopLen])
				if err != nil {
					return err
				}
				hop.ByteOrder = native
				for hop.Next() {
					if hop.Type() == rtaGateway {
						hop.Do(func(g []byte) (err error) { r.Gateway, err = ipv4(g); return err })
					}
				}
				return hop.Err()
			})
		}
	}
	if err := ad.Err(); err != nil {
		return r, 0, false, fmt.Errorf("%w: RTM_NEWROUTE: %v", errMalformed, err)
	}
	r.Table = tableName(table)
	return r, oif, true, nil
}

// decodeNeigh decodes the body of an RTM_NEWNEIGH message; ok is false for
// an entry of another family than IPv4.
func decodeNeigh(b []byte) (n node.Neighbor, ifindex int, ok bool, err error) {
	ad, err := attrs(b, sizeofNdmsg, "RTM_NEWNEIGH")
	if err != nil {
		return n, 0, false, err
	}
	if b[0] != afInet {
		return n, 0, false, nil
	}
	ifindex = int(int32(native.Uint32(b[4:])))
	n.State = nudText(native.Uint16(b[8:]))
	for ad.Next() {
		switch ad.Type() {
		case ndaDst:
			ad.Do(func(v []byte) (err error) { n.IP, err = ipv4(v); return err })
		case ndaLladdr:
			n.MAC = macText(ad.Bytes())
		}
	}
	if err := ad.Err(); err != nil {
		return n, 0, false, fmt.Errorf("%w: RTM_NEWNEIGH: %v", errMalformed, err)
	}
	if !n.IP.IsValid() {
		return n, 0, false, fmt.Errorf("%w: RTM_NEWNEIGH without NDA_DST", errMalformed)
	}
	return n, ifindex, true, nil
}

func nudText(state uint16) string {
	var names []string
	for _, s := range nudStates {
		if state&s.bit != 0 {
			names = append(names, s.name)
		}
	}
	if len(names) == 0 {
		return "NONE"
	}
	return strings.Join(names, ",")
}

// macText writes a link-layer address as ip does: lower-case hex bytes
// joined by colons (20 bytes on IPoIB).
func macText(b []byte) string {
	const hex = "0123456789abcdef"
	out := make([]byte, 0, 3*len(b))
	for i, c := range b {
		if i > 0 {
			out = append(out, ':')
		}
		out = append(out, hex[c>>4], hex[c&0xf])
	}
	return string(out)
}

// decodeLink returns the index and name of an RTM_NEWLINK message.
func decodeLink(b []byte) (int, string, error) {
	ad, err := attrs(b, sizeofIfinfomsg, "RTM_NEWLINK")
	if err != nil {
		return 0, "", err
	}
	index := int(int32(native.Uint32(b[4:])))
	name := ""
	for ad.Next() {
		if ad.Type() == iflaIfname {
			name = strings.TrimRight(ad.String(), "\x00")
		}
	}
	if err := ad.Err(); err != nil {
		return 0, "", fmt.Errorf("%w: RTM_NEWLINK: %v", errMalformed, err)
	}
	return index, name, nil
}
