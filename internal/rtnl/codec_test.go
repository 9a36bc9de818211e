package rtnl

import (
	"testing"

	"github.com/mdlayher/netlink"
)

// rule builds an RTM_NEWRULE body: struct fib_rule_hdr then attributes.
func rule(family, srcLen, action uint8, flags uint32, attrs ...netlink.Attribute) []byte {
	hdr := make([]byte, sizeofFibRuleHdr)
	hdr[0], hdr[2], hdr[7] = family, srcLen, action
	native.PutUint32(hdr[8:], flags)
	b, err := netlink.MarshalAttributes(attrs)
	if err != nil {
		panic(err)
	}
	return append(hdr, b...)
}

func u32(v uint32) []byte {
	b := make([]byte, 4)
	native.PutUint32(b, v)
	return b
}

func TestDecodeRule(t *testing.T) {
	r, ok, err := decodeRule(rule(afInet, 24, frActToTbl, 0,
		netlink.Attribute{Type: fraSrc, Data: []byte{10, 1, 2, 0}},
		netlink.Attribute{Type: fraPriority, Data: u32(100)},
		netlink.Attribute{Type: fraTable, Data: u32(1000)}))
	if err != nil || !ok || r.Src.String() != "10.1.2.0/24" || r.Priority != 100 || r.Table != "1000" || r.Selective || r.SuppressPrefixLen != -1 {
		t.Errorf("rule %+v %v %v", r, ok, err)
	}
	r, _, _ = decodeRule(rule(afInet, 0, 7, fibRuleInvert, netlink.Attribute{Type: fraIifname, Data: []byte("eth0\x00")}))
	if r.Action != "unreachable" || !r.Invert || !r.Selective || r.SelectorText != "iif eth0" {
		t.Errorf("unreachable rule %+v", r)
	}
	if _, ok, err := decodeRule(rule(10, 0, frActToTbl, 0)); ok || err != nil {
		t.Errorf("IPv6 rule: %v %v", ok, err)
	}
}

func TestDecodeMalformed(t *testing.T) {
	short := []byte{afInet, 0, 0}
	badAttr := append(make([]byte, 12), 0xff, 0xff, 1, 0)
	badAttr[0] = afInet
	badSrc := rule(afInet, 24, frActToTbl, 0, netlink.Attribute{Type: fraSrc, Data: []byte{10, 1}})
	for name, b := range map[string][]byte{"short": short, "attribute past the end": badAttr, "3-byte source": badSrc} {
		if _, _, err := decodeRule(b); !ErrMalformed(err) {
			t.Errorf("rule %s: err = %v", name, err)
		}
		if _, _, _, err := decodeRoute(b); name != "3-byte source" && !ErrMalformed(err) {
			t.Errorf("route %s: err = %v", name, err)
		}
		if _, _, _, err := decodeNeigh(b); name != "3-byte source" && !ErrMalformed(err) {
			t.Errorf("neigh %s: err = %v", name, err)
		}
	}
	// A neighbour without its address says nothing.
	n := make([]byte, sizeofNdmsg)
	n[0] = afInet
	if _, _, _, err := decodeNeigh(n); !ErrMalformed(err) {
		t.Errorf("neighbour without NDA_DST: %v", err)
	}
	// A multipath route whose first hop claims more than there is.
	rt := make([]byte, sizeofRtmsg)
	rt[0] = afInet
	mp, _ := netlink.MarshalAttributes([]netlink.Attribute{{Type: rtaMultipath, Data: []byte{64, 0, 0, 0, 2, 0, 0, 0}}})
	if _, _, _, err := decodeRoute(append(rt, mp...)); !ErrMalformed(err) {
		t.Errorf("bad rtnexthop: %v", err)
	}
}

// The decoders take bytes from the kernel; whatever they get, they return
// an error or a value, never a panic.
func FuzzDecode(f *testing.F) {
	f.Add(rule(afInet, 24, frActToTbl, 0, netlink.Attribute{Type: fraSrc, Data: []byte{10, 1, 2, 0}}))
	f.Add([]byte{afInet, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 8, 0, 1, 0, 10, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _ = decodeRule(b)
		_, _, _, _ = decodeRoute(b)
		_, _, _, _ = decodeNeigh(b)
		_, _, _ = decodeLink(b)
	})
}
