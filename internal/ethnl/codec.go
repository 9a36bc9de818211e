// Package ethnl speaks the kernel's ethtool generic netlink family
// (Documentation/networking/ethtool-netlink.rst) for the three read-only
// requests the exporter needs: MODULE_EEPROM_GET (a page of a pluggable
// module's memory), FEC_GET with statistics, and LINKSTATE_GET (the
// extended link-down state). The socket and the family look-up are
// github.com/mdlayher/genetlink's (through internal/nlconn); the messages'
// attributes are encoded and decoded here, since no library decodes FEC
// statistics, module pages or the extended link state (mdlayher/ethtool
// v0.7.0 reads the FEC mode without statistics, only the up/down bit of the
// link state, and no module memory). The codec is pure over attribute
// bytes, without the generic netlink header.
package ethnl

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/mdlayher/netlink"
)

// The family (include/uapi/linux/ethtool_netlink.h: ETHTOOL_GENL_NAME,
// ETHTOOL_GENL_VERSION).
const (
	familyName    = "ethtool"
	familyVersion = 1
)

// Message types: the requests (user to kernel) and their replies (kernel to
// user, a separate enum).
const (
	msgLinkstateGet    = 6
	msgFECGet          = 29
	msgModuleEEPROMGet = 31

	msgLinkstateGetReply    = 6
	msgFECGetReply          = 30
	msgModuleEEPROMGetReply = 32
)

// Attributes.
const (
	aHeaderDevName = 2
	aHeaderFlags   = 3
	flagStats      = 1 << 2 // ETHTOOL_FLAG_STATS

	aHeader = 1 // the header attribute of every request: _A_*_HEADER

	aLinkstateLink        = 2
	aLinkstateExtState    = 5
	aLinkstateExtSubstate = 6
	aLinkstateExtDownCnt  = 7

	aFECActive = 4
	aFECStats  = 5

	aFECStatCorrected = 2
	aFECStatUncorr    = 3
	aFECStatCorrBits  = 4

	aModuleEEPROMOffset  = 2
	aModuleEEPROMLength  = 3
	aModuleEEPROMPage    = 4
	aModuleEEPROMBank    = 5
	aModuleEEPROMI2CAddr = 6
	aModuleEEPROMData    = 7
)

// statNotSet is ETHTOOL_STAT_NOT_SET: a counter the driver does not report.
const statNotSet = ^uint64(0)

// ModuleI2CAddress is the address of a QSFP/QSFP-DD/OSFP module's memory
// (SFF-8636, CMIS: 0x50, the A0h of SFP).
const ModuleI2CAddress = 0x50

// errMalformed marks a reply that does not decode.
var errMalformed = errors.New("malformed ethtool netlink reply")

// encodeRequest encodes the attributes of a GET request for ifname.
func encodeRequest(ifname string, flags uint32, extra func(ae *netlink.AttributeEncoder)) ([]byte, error) {
	if ifname == "" || len(ifname) >= 16 {
		return nil, fmt.Errorf("ethnl: invalid interface name %q", ifname)
	}
	ae := netlink.NewAttributeEncoder()
	ae.Nested(aHeader, func(nae *netlink.AttributeEncoder) error {
		nae.String(aHeaderDevName, ifname)
		if flags != 0 {
			nae.Uint32(aHeaderFlags, flags)
		}
		return nil
	})
	if extra != nil {
		extra(ae)
	}
	return ae.Encode()
}

// EncodeModuleEEPROMRequest asks for length bytes at offset of page/bank:
// offsets 0-127 are the lower page, 128-255 the selected upper page; a
// request must not cross the 128-byte boundary.
func EncodeModuleEEPROMRequest(ifname string, page, bank uint8, offset, length uint32) ([]byte, error) {
	if length == 0 || length > 128 || (offset < 128 && offset+length > 128) || offset+length > 256 {
		return nil, fmt.Errorf("ethnl: module EEPROM request offset %d length %d crosses a page", offset, length)
	}
	return encodeRequest(ifname, 0, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(aModuleEEPROMOffset, offset)
		ae.Uint32(aModuleEEPROMLength, length)
		ae.Uint8(aModuleEEPROMPage, page)
		ae.Uint8(aModuleEEPROMBank, bank)
		ae.Uint8(aModuleEEPROMI2CAddr, ModuleI2CAddress)
	})
}

func attrs(b []byte) (*netlink.AttributeDecoder, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errMalformed, err)
	}
	return ad, nil
}

// DecodeModuleEEPROM returns the data of a MODULE_EEPROM_GET reply's
// attributes.
func DecodeModuleEEPROM(b []byte) ([]byte, error) {
	ad, err := attrs(b)
	if err != nil {
		return nil, err
	}
	var data []byte
	for ad.Next() {
		if ad.Type() == aModuleEEPROMData {
			// Not append to nil: a zero-length attribute (a driver that
			// read nothing) is data of length 0, not no data.
			b := ad.Bytes()
			data = make([]byte, len(b))
			copy(data, b)
		}
	}
	if err := ad.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", errMalformed, err)
	}
	if data == nil {
		return nil, fmt.Errorf("%w: no data attribute", errMalformed)
	}
	return data, nil
}

// FECStat is one FEC counter: the total and, when the driver reports them,
// the per-lane values. OK is false when the driver does not count it.
type FECStat struct {
	OK    bool
	Total uint64
	Lanes []uint64
}

// FEC is a FEC_GET reply's statistics.
type FEC struct {
	// ActiveLinkMode is the link mode bit of the active FEC encoding
	// (ETHTOOL_LINK_MODE_FEC_*_BIT), -1 when the reply has none.
	ActiveLinkMode           int
	Corrected, Uncorrectable FECStat
	CorrectedBits            FECStat
}

// FEC link mode bits (include/uapi/linux/ethtool.h) and their names as
// ethtool prints them.
var fecModeNames = map[int]string{49: "None", 50: "RS", 51: "BaseR", 74: "LLRS"}

// FECModeName names ActiveLinkMode, "" when unknown.
func FECModeName(bit int) string { return fecModeNames[bit] }

// FECModeBit is the inverse of FECModeName; -1 for an unknown name.
func FECModeBit(name string) int {
	for b, n := range fecModeNames {
		if n == name {
			return b
		}
	}
	return -1
}

// DecodeFEC decodes the attributes of a FEC_GET reply requested with
// statistics.
func DecodeFEC(b []byte) (*FEC, error) {
	ad, err := attrs(b)
	if err != nil {
		return nil, err
	}
	out := &FEC{ActiveLinkMode: -1}
	for ad.Next() {
		switch ad.Type() {
		case aFECActive:
			out.ActiveLinkMode = int(ad.Uint32())
		case aFECStats:
			ad.Nested(func(nad *netlink.AttributeDecoder) error {
				for nad.Next() {
					var dst *FECStat
					switch nad.Type() {
					case aFECStatCorrected:
						dst = &out.Corrected
					case aFECStatUncorr:
						dst = &out.Uncorrectable
					case aFECStatCorrBits:
						dst = &out.CorrectedBits
					default:
						continue
					}
					*dst = decodeFECStat(nad.Bytes())
				}
				return nil
			})
		}
	}
	if err := ad.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", errMalformed, err)
	}
	return out, nil
}

// decodeFECStat reads an array of u64 in host order: the total, then one
// value per lane (net/ethtool/fec.c fec_put_stats).
func decodeFECStat(b []byte) FECStat {
	n := len(b) / 8
	if n == 0 {
		return FECStat{}
	}
	v := make([]uint64, n)
	for i := range v {
		v[i] = binary.NativeEndian.Uint64(b[8*i:])
	}
	if v[0] == statNotSet {
		return FECStat{}
	}
	st := FECStat{OK: true, Total: v[0]}
	for _, l := range v[1:] {
		if l == statNotSet {
			break
		}
		st.Lanes = append(st.Lanes, l)
	}
	return st
}

// Linkstate is a LINKSTATE_GET reply.
type Linkstate struct {
	// Link is the link as ethtool's "Link detected" reports it.
	Link, LinkKnown bool
	// ExtState and ExtSubstate are the driver's reason for a link that is
	// down (ETHTOOL_LINK_EXT_STATE_*), -1 when not given.
	ExtState, ExtSubstate int
	// DownEvents is ETHTOOL_A_LINKSTATE_EXT_DOWN_CNT, -1 when not given.
	DownEvents int64
}

// DecodeLinkstate decodes the attributes of a LINKSTATE_GET reply.
func DecodeLinkstate(b []byte) (*Linkstate, error) {
	ad, err := attrs(b)
	if err != nil {
		return nil, err
	}
	out := &Linkstate{ExtState: -1, ExtSubstate: -1, DownEvents: -1}
	for ad.Next() {
		switch ad.Type() {
		case aLinkstateLink:
			out.Link, out.LinkKnown = ad.Uint8() != 0, true
		case aLinkstateExtState:
			out.ExtState = int(ad.Uint8())
		case aLinkstateExtSubstate:
			out.ExtSubstate = int(ad.Uint8())
		case aLinkstateExtDownCnt:
			out.DownEvents = int64(ad.Uint32())
		}
	}
	if err := ad.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", errMalformed, err)
	}
	return out, nil
}
