package dcbnl

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// Byte layouts used by the fixtures below (host byte order, as the kernel
// writes them; see include/uapi/linux/dcbnl.h):
//
//	struct dcbmsg      u8 family(=0) | u8 cmd | u16 pad
//	struct nlattr      u16 len (header+payload, unpadded) | u16 type | payload | pad to 4
//	struct ieee_pfc    off 0 u8 pfc_cap | 1 u8 pfc_en | 2 u8 mbc | 3 pad
//	                   4 u16 delay | 6 pad[2] | 8 u64 requests[8] | 72 u64 indications[8]
//	                   = 136 bytes
//	struct ieee_ets    u8 willing, ets_cap, cbs | u8 tc_tx_bw[8] | tc_rx_bw[8] | tc_tsa[8]
//	                   | prio_tc[8] | tc_reco_bw[8] | tc_reco_tsa[8] | reco_prio_tc[8] = 59 bytes
//	struct dcb_app     u8 selector | u8 priority | u16 protocol = 4 bytes
//	struct dcbnl_buffer u8 prio2buffer[8] | u32 buffer_size[8] | u32 total_size = 44 bytes
//
// A reply to DCB_CMD_IEEE_GET (dcbnl_ieee_fill) is
//
//	dcbmsg{0, 21, 0}
//	nlattr{DCB_ATTR_IFNAME=1, "ens1f0np0\0"}
//	nlattr{DCB_ATTR_IEEE=13, nest:
//	    nlattr{DCB_ATTR_IEEE_ETS=1, ieee_ets}
//	    nlattr{DCB_ATTR_IEEE_PFC=2, ieee_pfc}
//	    nlattr{DCB_ATTR_IEEE_APP_TABLE=3, nest: nlattr{DCB_ATTR_IEEE_APP=1, dcb_app}...}}
//	nlattr{DCB_ATTR_DCBX=14, u8}

func nla(typ uint16, payload []byte) []byte {
	l := nlaHeaderLen + len(payload)
	b := make([]byte, nlaAlign(l))
	native.PutUint16(b[0:], uint16(l))
	native.PutUint16(b[2:], typ)
	copy(b[4:], payload)
	return b
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func dcbmsg(cmd uint8, attrs ...[]byte) []byte {
	return cat(append([][]byte{{0, cmd, 0, 0}}, attrs...)...)
}

func pfcBytes(capTC, en, mbc uint8, delay uint16, req, ind [8]uint64) []byte {
	b := make([]byte, sizeofPFC)
	b[0], b[1], b[2] = capTC, en, mbc
	native.PutUint16(b[4:], delay)
	for i := 0; i < 8; i++ {
		native.PutUint64(b[8+8*i:], req[i])
		native.PutUint64(b[72+8*i:], ind[i])
	}
	return b
}

func appBytes(sel, prio uint8, proto uint16) []byte {
	b := []byte{sel, prio, 0, 0}
	native.PutUint16(b[2:], proto)
	return b
}

func appTable(apps ...[]byte) []byte {
	var entries [][]byte
	for _, a := range apps {
		entries = append(entries, nla(appAttrIEEE, a))
	}
	return nla(ieeeAttrAppTable, cat(entries...))
}

func ifname(s string) []byte { return nla(attrIfname, append([]byte(s), 0)) }

// mlx5Reply is what an mlx5 PF with PFC on priority 3 returns: ETS, PFC
// (cable length 7 m in delay, pause counters in requests/indications), an
// empty APP table and DCBX host|ieee.
func mlx5Reply(en uint8, apps ...[]byte) []byte {
	var req, ind [8]uint64
	req[3], ind[3] = 311, 1204
	ets := make([]byte, sizeofETS)
	return dcbmsg(cmdIEEEGet,
		ifname("ens1f0np0"),
		nla(attrIEEE, cat(
			nla(ieeeAttrETS, ets),
			nla(ieeeAttrPFC, pfcBytes(8, en, 0, 7, req, ind)),
			appTable(apps...),
		)),
		nla(attrDCBX, []byte{dcbxHost | dcbxVerIEEE}),
	)
}

func enabledList(p *PFC) []int {
	var out []int
	for i, on := range p.Enabled {
		if on {
			out = append(out, i)
		}
	}
	return out
}

func TestDecodeIEEEPFCPriority3(t *testing.T) {
	got, err := decodeIEEE(mlx5Reply(0x08))
	if err != nil {
		t.Fatal(err)
	}
	if got.Ifname != "ens1f0np0" {
		t.Errorf("Ifname = %q", got.Ifname)
	}
	p := got.PFC
	if p == nil {
		t.Fatal("PFC missing")
	}
	if !reflect.DeepEqual(enabledList(p), []int{3}) || p.Mask() != 0x08 {
		t.Errorf("enabled = %v (mask %#x), want [3]", enabledList(p), p.Mask())
	}
	if p.Cap != 8 || p.Delay != 7 || p.MBC != 0 {
		t.Errorf("cap %d delay %d mbc %d", p.Cap, p.Delay, p.MBC)
	}
	if p.Requests[3] != 311 || p.Indications[3] != 1204 || p.Requests[2] != 0 {
		t.Errorf("requests %v indications %v", p.Requests, p.Indications)
	}
	if got.DCBX == nil || *got.DCBX != dcbxHost|dcbxVerIEEE {
		t.Errorf("DCBX = %v", got.DCBX)
	}
	if got.ETS == nil || got.Trust() != "pcp" || len(got.Apps) != 0 {
		t.Errorf("ETS %v trust %q apps %v", got.ETS, got.Trust(), got.Apps)
	}
}

func TestDecodeIEEEPFCPriorities3And4(t *testing.T) {
	got, err := decodeIEEE(mlx5Reply(0x18))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(enabledList(got.PFC), []int{3, 4}) {
		t.Errorf("enabled = %v, want [3 4]", enabledList(got.PFC))
	}
}

func TestDecodeIEEENoPFC(t *testing.T) {
	// A driver without ieee_getpfc: the nest holds only the APP table.
	got, err := decodeIEEE(dcbmsg(cmdIEEEGet, ifname("eth0"), nla(attrIEEE, appTable())))
	if err != nil {
		t.Fatal(err)
	}
	if got.PFC != nil || got.ETS != nil || got.DCBX != nil {
		t.Errorf("absent objects decoded: PFC %v ETS %v DCBX %v", got.PFC, got.ETS, got.DCBX)
	}
}

func TestDecodeIEEEDSCPTrust(t *testing.T) {
	// mlx5 with trust dscp: all 64 DSCP values, priority = dscp >> 3 (the
	// firmware default mlnx_qos restores).
	var apps [][]byte
	for d := 0; d < 64; d++ {
		apps = append(apps, appBytes(selDSCP, uint8(d>>3), uint16(d)))
	}
	got, err := decodeIEEE(mlx5Reply(0x08, apps...))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Apps) != 64 {
		t.Fatalf("%d apps, want 64", len(got.Apps))
	}
	for d, a := range got.Apps {
		if a.Selector != selDSCP || int(a.Protocol) != d || int(a.Priority) != d>>3 {
			t.Fatalf("app %d = %+v", d, a)
		}
	}
	if got.Trust() != "dscp" {
		t.Errorf("Trust() = %q, want dscp", got.Trust())
	}
	if p := got.PrioritiesForDSCP(26); !reflect.DeepEqual(p, []uint8{3}) {
		t.Errorf("DSCP 26 -> %v, want [3]", p)
	}
}

func TestDecodeIEEEEthertypeOnlyIsPCP(t *testing.T) {
	got, err := decodeIEEE(mlx5Reply(0x08,
		appBytes(selEthertype, 3, 0x8915), // RoCE v1 EtherType
		appBytes(selEthertype, 0, 0),      // default priority
		appBytes(selDgram, 3, 4791),       // RoCE v2 UDP port
	))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Apps) != 3 || got.Apps[0] != (App{selEthertype, 3, 0x8915}) || got.Apps[2] != (App{selDgram, 3, 4791}) {
		t.Errorf("apps = %+v", got.Apps)
	}
	if got.Trust() != "pcp" {
		t.Errorf("Trust() = %q, want pcp", got.Trust())
	}
	got.TrustHint = "dscp"
	if got.Trust() != "dscp" {
		t.Error("TrustHint ignored")
	}
}

func TestDecodeIEEEOtherObjects(t *testing.T) {
	ets := make([]byte, sizeofETS)
	ets[0], ets[1] = 1, 8
	for tc := 0; tc < 8; tc++ {
		ets[3+tc] = []byte{50, 50, 0, 0, 0, 0, 0, 0}[tc] // tc_tx_bw
		ets[19+tc] = tsaETS                              // tc_tsa
		ets[27+tc] = uint8(tc / 4)                       // prio_tc
	}
	buf := make([]byte, sizeofBuffer)
	buf[3] = 1 // priority 3 -> buffer 1
	native.PutUint32(buf[8:], 20016)
	native.PutUint32(buf[12:], 156096)
	native.PutUint32(buf[40:], 176112)
	var peerReq [8]uint64
	peerReq[3] = 9
	trust := cat(nla(appAttrIEEE, []byte{selDSCP}), nla(appAttrDCB, []byte{selPCP}))

	got, err := decodeIEEE(dcbmsg(cmdIEEEGet, ifname("swp1"), nla(attrIEEE, cat(
		nla(ieeeAttrETS, ets),
		nla(ieeeAttrDCBBuffer, buf),
		nla(ieeeAttrPeerPFC, pfcBytes(8, 0x08, 0, 0, peerReq, [8]uint64{})),
		nla(ieeeAttrAppTable, cat(nla(appAttrDCB, appBytes(selPCP, 2, 3)))),
		nla(ieeeAttrAppTrustTable|0x8000, trust), // NLA_F_NESTED as nla_nest_start sets it
	))))
	if err != nil {
		t.Fatal(err)
	}
	e := got.ETS
	if e == nil || e.Willing != 1 || e.Cap != 8 || e.TCTxBW[0] != 50 || e.TCTxBW[1] != 50 || e.TSA[7] != tsaETS || e.PrioTC[3] != 0 || e.PrioTC[4] != 1 {
		t.Errorf("ETS = %+v", e)
	}
	b := got.Buffer
	if b == nil || b.Prio2Buffer[3] != 1 || b.Size[0] != 20016 || b.Size[1] != 156096 || b.TotalSize != 176112 {
		t.Errorf("Buffer = %+v", b)
	}
	if got.PeerPFC == nil || got.PeerPFC.Mask() != 0x08 || got.PeerPFC.Requests[3] != 9 || got.PFC != nil {
		t.Errorf("PeerPFC = %+v, PFC = %+v", got.PeerPFC, got.PFC)
	}
	if !reflect.DeepEqual(got.Apps, []App{{selPCP, 2, 3}}) {
		t.Errorf("apps = %+v", got.Apps)
	}
	if !reflect.DeepEqual(got.AppTrust, []uint8{selDSCP, selPCP}) {
		t.Errorf("AppTrust = %v", got.AppTrust)
	}
}

func TestDecodeIEEEIgnoresUnknownAttributes(t *testing.T) {
	var req, ind [8]uint64
	withUnknown := dcbmsg(cmdIEEEGet,
		nla(99, []byte("future top-level attribute")),
		ifname("eth0"),
		nla(attrIEEE, cat(
			nla(ieeeAttrMaxRate, make([]byte, 64)), // known to the kernel, unused here
			nla(50, []byte{1, 2, 3}),
			nla(ieeeAttrPFC, pfcBytes(8, 0x08, 0, 7, req, ind)),
			nla(ieeeAttrAppTable, cat(nla(7, []byte{9}), nla(appAttrIEEE, appBytes(selDSCP, 3, 26)))),
		)),
		nla(attrDCBX, []byte{dcbxHost}),
	)
	plain := dcbmsg(cmdIEEEGet,
		ifname("eth0"),
		nla(attrIEEE, cat(
			nla(ieeeAttrPFC, pfcBytes(8, 0x08, 0, 7, req, ind)),
			appTable(appBytes(selDSCP, 3, 26)),
		)),
		nla(attrDCBX, []byte{dcbxHost}),
	)
	a, err := decodeIEEE(withUnknown)
	if err != nil {
		t.Fatal(err)
	}
	b, err := decodeIEEE(plain)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("unknown attributes changed the result:\n%+v\n%+v", a, b)
	}
}

func TestDecodeIEEEMalformed(t *testing.T) {
	var zero [8]uint64
	good := mlx5Reply(0x08, appBytes(selDSCP, 3, 26))
	cases := map[string][]byte{
		"empty":           nil,
		"short dcbmsg":    {0, cmdIEEEGet},
		"wrong family":    {2, cmdIEEEGet, 0, 0},
		"wrong command":   dcbmsg(cmdGDCBX, nla(attrIEEE, nil)),
		"no IEEE nest":    dcbmsg(cmdIEEEGet, ifname("eth0")),
		"short PFC":       dcbmsg(cmdIEEEGet, nla(attrIEEE, nla(ieeeAttrPFC, pfcBytes(8, 8, 0, 7, zero, zero)[:100]))),
		"short peer PFC":  dcbmsg(cmdIEEEGet, nla(attrIEEE, nla(ieeeAttrPeerPFC, make([]byte, 8)))),
		"short ETS":       dcbmsg(cmdIEEEGet, nla(attrIEEE, nla(ieeeAttrETS, make([]byte, 30)))),
		"short buffer":    dcbmsg(cmdIEEEGet, nla(attrIEEE, nla(ieeeAttrDCBBuffer, make([]byte, 40)))),
		"short app":       dcbmsg(cmdIEEEGet, nla(attrIEEE, nla(ieeeAttrAppTable, nla(appAttrIEEE, []byte{5, 3})))),
		"empty trust":     dcbmsg(cmdIEEEGet, nla(attrIEEE, nla(ieeeAttrAppTrustTable, nla(appAttrIEEE, nil)))),
		"empty DCBX":      dcbmsg(cmdIEEEGet, nla(attrIEEE, nil), nla(attrDCBX, nil)),
		"attr len < hdr":  dcbmsg(cmdIEEEGet, []byte{2, 0, 13, 0}),
		"attr overruns":   dcbmsg(cmdIEEEGet, []byte{200, 0, 13, 0, 1, 2, 3, 4}),
		"trailing 2 byte": append(dcbmsg(cmdIEEEGet, nla(attrIEEE, nil)), 1, 2),
		"nested overruns": dcbmsg(cmdIEEEGet, nla(attrIEEE, []byte{40, 0, 2, 0, 0, 0, 0, 0})),
		"app table junk":  dcbmsg(cmdIEEEGet, nla(attrIEEE, nla(ieeeAttrAppTable, []byte{1, 0}))),
		"truncated good":  good[:len(good)-10],
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := decodeIEEE(in)
			if err == nil {
				t.Fatalf("no error, got %+v", got)
			}
			if !errors.Is(err, errMalformed) {
				t.Errorf("error %v is not errMalformed", err)
			}
		})
	}
}

// Every prefix of a valid reply must decode or fail cleanly; a prefix that
// cuts into the IEEE nest must fail, because the nest's length then points
// past the end.
func TestDecodeIEEEEveryTruncation(t *testing.T) {
	good := mlx5Reply(0x08, appBytes(selDSCP, 3, 26))
	ieeeStart := sizeofDcbmsg + len(ifname("ens1f0np0"))
	dcbxStart := len(good) - 8
	for n := 0; n < len(good); n++ {
		_, err := decodeIEEE(good[:n])
		if n > ieeeStart && n < dcbxStart && err == nil {
			t.Errorf("prefix of %d bytes (inside the IEEE nest) decoded without error", n)
		}
	}
}

func TestEncodeGetRequest(t *testing.T) {
	got, err := encodeGetRequest(cmdIEEEGet, "eth0")
	if err != nil {
		t.Fatal(err)
	}
	// dcbmsg{AF_UNSPEC, 21, pad} + nlattr{len 9, type 1, "eth0\0", 3 pad bytes}
	want := cat([]byte{0, 21, 0, 0}, nla(attrIfname, []byte("eth0\x00")))
	if !bytes.Equal(got, want) || len(got) != 16 || native.Uint16(got[4:]) != 9 {
		t.Errorf("got % x\nwant % x", got, want)
	}
	got, err = encodeGetRequest(cmdGDCBX, "enp1s0f0np01234")
	if err != nil || got[1] != cmdGDCBX || len(got) != 4+nlaAlign(4+16) {
		t.Errorf("15-byte name: % x, %v", got, err)
	}

	for _, tc := range []struct {
		cmd  uint8
		name string
	}{
		{20, "eth0"}, // DCB_CMD_IEEE_SET
		{23, "eth0"}, // DCB_CMD_SDCBX
		{27, "eth0"}, // DCB_CMD_IEEE_DEL
		{8, "eth0"},  // DCB_CMD_PFC_SCFG
		{0, "eth0"},
		{200, "eth0"},
		{cmdIEEEGet, ""},
		{cmdIEEEGet, "0123456789abcdef"},
		{cmdIEEEGet, "a/b"},
		{cmdIEEEGet, "a b"},
		{cmdIEEEGet, "a\x00b"},
		{cmdIEEEGet, ".."},
	} {
		if b, err := encodeGetRequest(tc.cmd, tc.name); err == nil {
			t.Errorf("encodeGetRequest(%d, %q) = % x, want error", tc.cmd, tc.name, b)
		}
	}
}

func FuzzDecodeIEEE(f *testing.F) {
	var apps [][]byte
	for d := 0; d < 64; d++ {
		apps = append(apps, appBytes(selDSCP, uint8(d>>3), uint16(d)))
	}
	f.Add(mlx5Reply(0x08))
	f.Add(mlx5Reply(0x18, apps...))
	f.Add(dcbmsg(cmdIEEEGet, ifname("eth0"), nla(attrIEEE, appTable())))
	f.Add(dcbmsg(cmdGDCBX, nla(attrDCBX, []byte{1})))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := decodeIEEE(in)
		if err != nil {
			if got != nil {
				t.Fatal("result and error together")
			}
			if !errors.Is(err, errMalformed) {
				t.Fatalf("error %v is not errMalformed", err)
			}
			return
		}
		if tr := got.Trust(); tr != "dscp" && tr != "pcp" {
			t.Fatalf("Trust() = %q", tr)
		}
		// Decoding must not depend on anything but the bytes, and must not
		// keep aliases into them.
		again, err := decodeIEEE(bytes.Clone(in))
		if err != nil || !reflect.DeepEqual(got, again) {
			t.Fatalf("second decode differs: %v", err)
		}
		for i := range in {
			in[i] ^= 0xff
		}
		if !reflect.DeepEqual(got, again) {
			t.Fatal("result aliases the input buffer")
		}
	})
}

// The behaviours below are where mdlayher/netlink's AttributeDecoder could
// differ from the kernel's nla_ok/nla_parse; each pins the choice made.

// A length field of 0 is shorter than the attribute's own header: nla_ok
// stops there, so it is malformed wherever it appears, although the
// library's decoder hands it out as an empty attribute.
func TestDecodeIEEEZeroLengthAttribute(t *testing.T) {
	zero := func(typ uint16) []byte { return []byte{0, 0, byte(typ), byte(typ >> 8)} }
	for name, in := range map[string][]byte{
		"top level":        dcbmsg(cmdIEEEGet, ifname("eth0"), nla(attrIEEE, nil), zero(99)),
		"as the IEEE nest": dcbmsg(cmdIEEEGet, ifname("eth0"), zero(attrIEEE)),
		"in the IEEE nest": dcbmsg(cmdIEEEGet, nla(attrIEEE, cat(zero(50), appTable()))),
		"in the APP table": dcbmsg(cmdIEEEGet, nla(attrIEEE, nla(ieeeAttrAppTable, cat(nla(appAttrIEEE, appBytes(selDSCP, 3, 26)), zero(7))))),
		"zero padding":     append(mlx5Reply(0x08), 0, 0, 0, 0),
	} {
		t.Run(name, func(t *testing.T) {
			if got, err := decodeIEEE(in); !errors.Is(err, errMalformed) {
				t.Errorf("got %+v, %v; want errMalformed", got, err)
			}
		})
	}
}

// The padding of the last attribute, top level or nested, may be cut by the
// sender (nla_ok only needs nla_len bytes); nothing else may be.
func TestDecodeIEEETruncatedLastPadding(t *testing.T) {
	padded := mlx5Reply(0x08)
	want, err := decodeIEEE(padded)
	if err != nil {
		t.Fatal(err)
	}
	// DCB_ATTR_DCBX is last: 5 bytes, then 3 bytes of padding.
	for cut := 1; cut <= 3; cut++ {
		got, err := decodeIEEE(padded[:len(padded)-cut])
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("padding cut by %d: %+v, %v", cut, got, err)
		}
	}
	if _, err := decodeIEEE(padded[:len(padded)-4]); !errors.Is(err, errMalformed) {
		t.Errorf("DCBX value cut: %v, want errMalformed", err)
	}

	// A trust table whose last u8 entry has no padding, inside a nest whose
	// length ends with it.
	entries := cat(nla(appAttrIEEE, []byte{selDSCP}), nla(appAttrDCB, []byte{selPCP})[:5])
	nest := cat([]byte{byte(4 + len(entries)), 0, ieeeAttrAppTrustTable, 0x80}, entries)
	got, err := decodeIEEE(dcbmsg(cmdIEEEGet, nla(attrIEEE, nest)))
	if err != nil || !reflect.DeepEqual(got.AppTrust, []uint8{selDSCP, selPCP}) {
		t.Errorf("unpadded last entry: %+v, %v", got, err)
	}
}

// NLA_F_NESTED and NLA_F_NET_BYTEORDER are masked off the type, as the
// kernel's nla_type does. dcbnl never sets NLA_F_NET_BYTEORDER, and its
// structs are host order by definition, so the flag changes nothing.
func TestDecodeIEEETypeFlags(t *testing.T) {
	const nested, netByteOrder = 0x8000, 0x4000
	var req, ind [8]uint64
	req[3] = 311
	build := func(flags uint16) []byte {
		return dcbmsg(cmdIEEEGet,
			nla(attrIfname|flags, []byte("eth0\x00")),
			nla(attrIEEE|flags, cat(
				nla(ieeeAttrPFC|flags, pfcBytes(8, 0x08, 0, 7, req, ind)),
				nla(ieeeAttrAppTable|flags, nla(appAttrIEEE|flags, appBytes(selDSCP, 3, 26))),
			)),
			nla(attrDCBX|flags, []byte{dcbxHost}),
		)
	}
	want, err := decodeIEEE(build(0))
	if err != nil {
		t.Fatal(err)
	}
	for _, flags := range []uint16{nested, netByteOrder, nested | netByteOrder} {
		got, err := decodeIEEE(build(flags))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("flags %#x: %+v, %v\nwant %+v", flags, got, err, want)
		}
	}
}

// The kernel writes DCB_ATTR_DCBX and the trust table's selectors with
// nla_put_u8, so a u8 attribute of any other length is not one (as under
// the kernel's strict validation); the decoder used to take its first byte.
func TestDecodeIEEEU8Length(t *testing.T) {
	for name, in := range map[string][]byte{
		"DCBX of 2 bytes":  dcbmsg(cmdIEEEGet, nla(attrIEEE, nil), nla(attrDCBX, []byte{dcbxHost, 0})),
		"DCBX of 4 bytes":  dcbmsg(cmdIEEEGet, nla(attrIEEE, nil), nla(attrDCBX, []byte{dcbxHost, 0, 0, 0})),
		"trust of 2 bytes": dcbmsg(cmdIEEEGet, nla(attrIEEE, nla(ieeeAttrAppTrustTable, nla(appAttrIEEE, []byte{selDSCP, 0})))),
	} {
		t.Run(name, func(t *testing.T) {
			if got, err := decodeIEEE(in); !errors.Is(err, errMalformed) {
				t.Errorf("got %+v, %v; want errMalformed", got, err)
			}
		})
	}
}
