package dcbnl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/mdlayher/netlink"
)

// The kernel lays out dcbnl structs and netlink attribute headers in host
// byte order.
var native = binary.NativeEndian

// getCommands are the commands encodeGetRequest accepts. It is an allow
// list, not a deny list, because dcb_doit dispatches on the command alone:
// a SET command sent as RTM_GETDCB by root would be executed.
var getCommands = map[uint8]bool{
	cmdGState: true, cmdPFCGCfg: true, cmdGPermHWAddr: true, cmdGCap: true,
	cmdGNumTCs: true, cmdPFCGState: true, cmdBCNGCfg: true, cmdGApp: true,
	cmdIEEEGet: true, cmdGDCBX: true, cmdGFeatCfg: true, cmdCEEGet: true,
}

// encodeGetRequest builds the body of an RTM_GETDCB request (everything after
// the netlink header): struct dcbmsg {AF_UNSPEC, cmd, pad} followed by
// DCB_ATTR_IFNAME as a NUL-terminated string, padded to 4 bytes.
func encodeGetRequest(cmd uint8, ifname string) ([]byte, error) {
	if !getCommands[cmd] {
		return nil, fmt.Errorf("dcbnl: command %d is not a GET command", cmd)
	}
	if err := validIfname(ifname); err != nil {
		return nil, err
	}
	ae := netlink.NewAttributeEncoder()
	ae.ByteOrder = native
	ae.String(attrIfname, ifname)
	attrs, err := ae.Encode()
	if err != nil {
		return nil, fmt.Errorf("dcbnl: encoding request for %q: %w", ifname, err)
	}
	const afUnspec = 0
	return append([]byte{afUnspec, cmd, 0, 0}, attrs...), nil
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

// attrFunc handles the attribute an AttributeDecoder points at. It reports a
// bad payload through the decoder (Do, Uint8, Nested), which ends the walk.
type attrFunc func(ad *netlink.AttributeDecoder)

// walkAttrs calls fn on every attribute of ad, in order. in names the
// container for error messages; an attribute's error is reported as
// "in[type]: ...", so a nested error reads like a path.
//
// The decoder already refuses a header that claims less than itself
// (lengths 1 to 3), one that overruns the buffer and fewer than 4 trailing
// bytes; like the kernel's nla_ok, it accepts a last attribute whose padding
// the sender cut. It does hand out an attribute whose length field is 0 as
// an empty one, which the kernel's nla_ok would stop at: such an attribute
// is not counted by Len, so a count that differs from Len finds it.
func walkAttrs(ad *netlink.AttributeDecoder, in string, fn attrFunc) error {
	n := 0
	for ad.Next() {
		n++
		fn(ad)
		if err := ad.Err(); err != nil {
			return fmt.Errorf("%s[%d]: %w", in, ad.Type(), err)
		}
	}
	if err := ad.Err(); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if n != ad.Len() {
		return fmt.Errorf("%s: attribute with length 0, shorter than its own header", in)
	}
	return nil
}

// nested walks the nest ad points at; the nested decoder inherits ad's byte
// order.
func nested(ad *netlink.AttributeDecoder, in string, fn attrFunc) {
	ad.Nested(func(nad *netlink.AttributeDecoder) error { return walkAttrs(nad, in, fn) })
}

// dcbmsgAttrs checks the struct dcbmsg at the start of payload and returns a
// decoder over the attributes after it.
func dcbmsgAttrs(payload []byte, cmd uint8) (*netlink.AttributeDecoder, error) {
	if len(payload) < sizeofDcbmsg {
		return nil, fmt.Errorf("%d bytes, shorter than struct dcbmsg", len(payload))
	}
	if payload[0] != 0 {
		return nil, fmt.Errorf("dcb_family %d, want AF_UNSPEC", payload[0])
	}
	if payload[1] != cmd {
		return nil, fmt.Errorf("reply to command %d, want %d", payload[1], cmd)
	}
	ad, err := netlink.NewAttributeDecoder(payload[sizeofDcbmsg:])
	if err != nil {
		return nil, err
	}
	ad.ByteOrder = native
	return ad, nil
}

// decodeIEEE decodes the body of the kernel's reply to DCB_CMD_IEEE_GET
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
// least as long as their struct (exactly one byte for a u8), or the result
// is an errMalformed error.
func decodeIEEE(payload []byte) (*IEEE, error) {
	out, err := parseIEEE(payload)
	if err != nil {
		// Every decoding error, the library's included, is errMalformed.
		return nil, fmt.Errorf("%w: %w", errMalformed, err)
	}
	return out, nil
}

func parseIEEE(payload []byte) (*IEEE, error) {
	ad, err := dcbmsgAttrs(payload, cmdIEEEGet)
	if err != nil {
		return nil, err
	}
	out := &IEEE{}
	sawIEEE := false
	err = walkAttrs(ad, "RTM_GETDCB", func(ad *netlink.AttributeDecoder) {
		switch ad.Type() {
		case attrIfname:
			out.Ifname = cString(ad.Bytes())
		case attrDCBX:
			v := ad.Uint8()
			out.DCBX = &v
		case attrIEEE:
			sawIEEE = true
			nested(ad, "DCB_ATTR_IEEE", func(ad *netlink.AttributeDecoder) { decodeIEEEAttr(ad, out) })
		}
	})
	if err != nil {
		return nil, err
	}
	if !sawIEEE {
		return nil, errors.New("reply has no DCB_ATTR_IEEE")
	}
	return out, nil
}

func decodeIEEEAttr(ad *netlink.AttributeDecoder, out *IEEE) {
	switch ad.Type() {
	case ieeeAttrPFC:
		ad.Do(func(b []byte) (err error) { out.PFC, err = decodePFC(b); return err })
	case ieeeAttrPeerPFC:
		ad.Do(func(b []byte) (err error) { out.PeerPFC, err = decodePFC(b); return err })
	case ieeeAttrETS:
		ad.Do(func(b []byte) (err error) { out.ETS, err = decodeETS(b); return err })
	case ieeeAttrDCBBuffer:
		ad.Do(func(b []byte) (err error) { out.Buffer, err = decodeBuffer(b); return err })
	case ieeeAttrAppTable:
		out.Apps = []App{}
		nested(ad, "DCB_ATTR_IEEE_APP_TABLE", func(ad *netlink.AttributeDecoder) {
			if isAppEntry(ad) {
				ad.Do(func(b []byte) error {
					a, err := decodeApp(b)
					out.Apps = append(out.Apps, a)
					return err
				})
			}
		})
	case ieeeAttrAppTrustTable:
		out.AppTrust = []uint8{}
		nested(ad, "DCB_ATTR_DCB_APP_TRUST_TABLE", func(ad *netlink.AttributeDecoder) {
			// dcbnl_ieee_fill puts each selector with nla_put_u8.
			if isAppEntry(ad) {
				out.AppTrust = append(out.AppTrust, ad.Uint8())
			}
		})
	}
}

// isAppEntry reports whether ad points at an entry of an APP-style table;
// other types are skipped so that a future entry type is not an error.
func isAppEntry(ad *netlink.AttributeDecoder) bool {
	t := ad.Type()
	return t == appAttrIEEE || t == appAttrDCB
}

// decodePFC reads struct ieee_pfc; offsets include the compiler's padding
// (pfc_cap 0, pfc_en 1, mbc 2, delay 4, requests 8, indications 72). mlnx_qos
// reads pfc_en and delay at the same offsets.
func decodePFC(d []byte) (*PFC, error) {
	if len(d) < sizeofPFC {
		return nil, fmt.Errorf("struct ieee_pfc is %d bytes, want %d", len(d), sizeofPFC)
	}
	p := &PFC{Cap: d[0], MBC: d[2], Delay: native.Uint16(d[4:])}
	for i := 0; i < numPriorities; i++ {
		p.Enabled[i] = d[1]&(1<<i) != 0
		p.Requests[i] = native.Uint64(d[8+8*i:])
		p.Indications[i] = native.Uint64(d[72+8*i:])
	}
	return p, nil
}

func decodeETS(d []byte) (*ETS, error) {
	if len(d) < sizeofETS {
		return nil, fmt.Errorf("struct ieee_ets is %d bytes, want %d", len(d), sizeofETS)
	}
	e := &ETS{Willing: d[0], Cap: d[1], CBS: d[2]}
	for i, dst := range []*[numPriorities]uint8{&e.TCTxBW, &e.TCRxBW, &e.TSA, &e.PrioTC, &e.RecoTCBW, &e.RecoTSA, &e.RecoPrioTC} {
		copy(dst[:], d[3+8*i:])
	}
	return e, nil
}

func decodeBuffer(d []byte) (*Buffer, error) {
	if len(d) < sizeofBuffer {
		return nil, fmt.Errorf("struct dcbnl_buffer is %d bytes, want %d", len(d), sizeofBuffer)
	}
	buf := &Buffer{TotalSize: native.Uint32(d[40:])}
	copy(buf.Prio2Buffer[:], d)
	for i := range buf.Size {
		buf.Size[i] = native.Uint32(d[8+4*i:])
	}
	return buf, nil
}

func decodeApp(d []byte) (App, error) {
	if len(d) < sizeofApp {
		return App{}, fmt.Errorf("struct dcb_app is %d bytes, want %d", len(d), sizeofApp)
	}
	return App{Selector: d[0], Priority: d[1], Protocol: native.Uint16(d[2:])}, nil
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
