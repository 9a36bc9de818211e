package dcbnl

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
)

// The kernel lays out dcbnl structs and netlink attribute headers in host
// byte order.
var native = binary.NativeEndian

const (
	nlaHeaderLen = 4
	nlaTypeMask  = 0x3fff // strips NLA_F_NESTED and NLA_F_NET_BYTEORDER
)

func nlaAlign(n int) int { return (n + 3) &^ 3 }

// getCommands are the commands EncodeGetRequest accepts. It is an allow
// list, not a deny list, because dcb_doit dispatches on the command alone:
// a SET command sent as RTM_GETDCB by root would be executed.
var getCommands = map[uint8]bool{
	CmdGState: true, CmdPFCGCfg: true, CmdGPermHWAddr: true, CmdGCap: true,
	CmdGNumTCs: true, CmdPFCGState: true, CmdBCNGCfg: true, CmdGApp: true,
	CmdIEEEGet: true, CmdGDCBX: true, CmdGFeatCfg: true, CmdCEEGet: true,
}

// EncodeGetRequest builds the body of an RTM_GETDCB request (everything after
// the netlink header): struct dcbmsg {AF_UNSPEC, cmd, pad} followed by
// DCB_ATTR_IFNAME as a NUL-terminated string, padded to 4 bytes.
func EncodeGetRequest(cmd uint8, ifname string) ([]byte, error) {
	if !getCommands[cmd] {
		return nil, fmt.Errorf("dcbnl: command %d is not a GET command", cmd)
	}
	if err := validIfname(ifname); err != nil {
		return nil, err
	}
	attrLen := nlaHeaderLen + len(ifname) + 1
	b := make([]byte, sizeofDcbmsg+nlaAlign(attrLen))
	b[0] = 0 // AF_UNSPEC
	b[1] = cmd
	native.PutUint16(b[4:], uint16(attrLen))
	native.PutUint16(b[6:], AttrIfname)
	copy(b[8:], ifname) // the NUL and the padding are already zero
	return b, nil
}

// validIfname mirrors the kernel's dev_valid_name, so a bad name fails here
// with a clear message instead of as EINVAL from the policy check.
func validIfname(name string) error {
	switch {
	case name == "", name == ".", name == "..":
		return fmt.Errorf("dcbnl: invalid interface name %q", name)
	case len(name) > maxIfnameLen:
		return fmt.Errorf("dcbnl: interface name %q longer than %d bytes", name, maxIfnameLen)
	case strings.ContainsAny(name, "/:\x00 \t\n\r\v\f"):
		return fmt.Errorf("dcbnl: interface name %q contains an invalid character", name)
	}
	return nil
}

type attr struct {
	typ  uint16
	data []byte
}

// parseAttrs splits a buffer of netlink attributes. The returned data slices
// alias b. Any length inconsistency is an error: a truncated attribute must
// not be mistaken for a short but valid one.
func parseAttrs(b []byte) ([]attr, error) {
	var out []attr
	for len(b) > 0 {
		if len(b) < nlaHeaderLen {
			return nil, fmt.Errorf("%w: %d trailing bytes, less than an attribute header", ErrMalformed, len(b))
		}
		l := int(native.Uint16(b[0:2]))
		typ := native.Uint16(b[2:4]) & nlaTypeMask
		if l < nlaHeaderLen || l > len(b) {
			return nil, fmt.Errorf("%w: attribute type %d claims length %d with %d bytes left", ErrMalformed, typ, l, len(b))
		}
		out = append(out, attr{typ: typ, data: b[nlaHeaderLen:l]})
		next := nlaAlign(l)
		if next > len(b) {
			// The last attribute's padding may be cut by the sender.
			next = len(b)
		}
		b = b[next:]
	}
	return out, nil
}

func splitDcbmsg(payload []byte, cmd uint8) ([]attr, error) {
	if len(payload) < sizeofDcbmsg {
		return nil, fmt.Errorf("%w: %d bytes, shorter than struct dcbmsg", ErrMalformed, len(payload))
	}
	if payload[0] != 0 {
		return nil, fmt.Errorf("%w: dcb_family %d, want AF_UNSPEC", ErrMalformed, payload[0])
	}
	if payload[1] != cmd {
		return nil, fmt.Errorf("%w: reply to command %d, want %d", ErrMalformed, payload[1], cmd)
	}
	return parseAttrs(payload[sizeofDcbmsg:])
}

// DecodeIEEE decodes the body of the kernel's reply to DCB_CMD_IEEE_GET
// (struct dcbmsg + attributes), laid out by dcbnl_ieee_fill:
//
//	DCB_ATTR_IFNAME  "ens1f0np0\0"
//	DCB_ATTR_IEEE    nest
//	    DCB_ATTR_IEEE_ETS        struct ieee_ets      (if ieee_getets)
//	    DCB_ATTR_IEEE_PFC        struct ieee_pfc      (if ieee_getpfc)
//	    DCB_ATTR_DCB_BUFFER      struct dcbnl_buffer  (if dcbnl_getbuffer)
//	    DCB_ATTR_IEEE_APP_TABLE  nest of DCB_ATTR_IEEE_APP / DCB_ATTR_DCB_APP
//	    DCB_ATTR_IEEE_PEER_PFC   struct ieee_pfc      (if ieee_peer_getpfc)
//	    ...
//	DCB_ATTR_DCBX    u8                               (if getdcbx)
//
// Attributes it does not use are skipped; attributes it uses must be at
// least as long as their struct, or the result is an ErrMalformed error.
func DecodeIEEE(payload []byte) (*IEEE, error) {
	top, err := splitDcbmsg(payload, CmdIEEEGet)
	if err != nil {
		return nil, err
	}
	out := &IEEE{}
	sawIEEE := false
	for _, a := range top {
		switch a.typ {
		case AttrIfname:
			out.Ifname = cString(a.data)
		case AttrDCBX:
			if len(a.data) < 1 {
				return nil, fmt.Errorf("%w: empty DCB_ATTR_DCBX", ErrMalformed)
			}
			v := a.data[0]
			out.DCBX = &v
		case AttrIEEE:
			sawIEEE = true
			if err := decodeIEEENest(a.data, out); err != nil {
				return nil, err
			}
		}
	}
	if !sawIEEE {
		return nil, fmt.Errorf("%w: reply has no DCB_ATTR_IEEE", ErrMalformed)
	}
	return out, nil
}

func decodeIEEENest(b []byte, out *IEEE) error {
	attrs, err := parseAttrs(b)
	if err != nil {
		return fmt.Errorf("DCB_ATTR_IEEE: %w", err)
	}
	for _, a := range attrs {
		switch a.typ {
		case IEEEAttrPFC, IEEEAttrPeerPFC:
			p, err := decodePFC(a.data)
			if err != nil {
				return err
			}
			if a.typ == IEEEAttrPFC {
				out.PFC = p
			} else {
				out.PeerPFC = p
			}
		case IEEEAttrETS:
			if len(a.data) < sizeofETS {
				return fmt.Errorf("%w: DCB_ATTR_IEEE_ETS is %d bytes, want %d", ErrMalformed, len(a.data), sizeofETS)
			}
			d := a.data
			e := &ETS{Willing: d[0], Cap: d[1], CBS: d[2]}
			for i, dst := range []*[numPriorities]uint8{&e.TCTxBW, &e.TCRxBW, &e.TSA, &e.PrioTC, &e.RecoTCBW, &e.RecoTSA, &e.RecoPrioTC} {
				copy(dst[:], d[3+8*i:])
			}
			out.ETS = e
		case IEEEAttrDCBBuffer:
			if len(a.data) < sizeofBuffer {
				return fmt.Errorf("%w: DCB_ATTR_DCB_BUFFER is %d bytes, want %d", ErrMalformed, len(a.data), sizeofBuffer)
			}
			buf := &Buffer{TotalSize: native.Uint32(a.data[40:])}
			copy(buf.Prio2Buffer[:], a.data)
			for i := range buf.Size {
				buf.Size[i] = native.Uint32(a.data[8+4*i:])
			}
			out.Buffer = buf
		case IEEEAttrAppTable:
			apps, err := decodeAppTable(a.data)
			if err != nil {
				return err
			}
			out.Apps = apps
		case IEEEAttrAppTrustTable:
			entries, err := parseAttrs(a.data)
			if err != nil {
				return fmt.Errorf("DCB_ATTR_DCB_APP_TRUST_TABLE: %w", err)
			}
			out.AppTrust = []uint8{}
			for _, e := range entries {
				if e.typ != AppAttrIEEE && e.typ != AppAttrDCB {
					continue
				}
				if len(e.data) < 1 {
					return fmt.Errorf("%w: empty trust table entry", ErrMalformed)
				}
				out.AppTrust = append(out.AppTrust, e.data[0])
			}
		}
	}
	return nil
}

// decodePFC reads struct ieee_pfc; offsets include the compiler's padding
// (pfc_cap 0, pfc_en 1, mbc 2, delay 4, requests 8, indications 72). mlnx_qos
// reads pfc_en and delay at the same offsets.
func decodePFC(d []byte) (*PFC, error) {
	if len(d) < sizeofPFC {
		return nil, fmt.Errorf("%w: struct ieee_pfc is %d bytes, want %d", ErrMalformed, len(d), sizeofPFC)
	}
	p := &PFC{Cap: d[0], MBC: d[2], Delay: native.Uint16(d[4:])}
	for i := 0; i < numPriorities; i++ {
		p.Enabled[i] = d[1]&(1<<i) != 0
		p.Requests[i] = native.Uint64(d[8+8*i:])
		p.Indications[i] = native.Uint64(d[72+8*i:])
	}
	return p, nil
}

func decodeAppTable(b []byte) ([]App, error) {
	entries, err := parseAttrs(b)
	if err != nil {
		return nil, fmt.Errorf("DCB_ATTR_IEEE_APP_TABLE: %w", err)
	}
	apps := make([]App, 0, len(entries))
	for _, e := range entries {
		if e.typ != AppAttrIEEE && e.typ != AppAttrDCB {
			continue
		}
		if len(e.data) < sizeofApp {
			return nil, fmt.Errorf("%w: struct dcb_app is %d bytes, want %d", ErrMalformed, len(e.data), sizeofApp)
		}
		apps = append(apps, App{Selector: e.data[0], Priority: e.data[1], Protocol: native.Uint16(e.data[2:])})
	}
	return apps, nil
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
