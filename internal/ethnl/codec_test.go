package ethnl

import (
	"encoding/binary"
	"testing"

	"github.com/mdlayher/netlink"
)

func u64s(v ...uint64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.NativeEndian.PutUint64(b[8*i:], x)
	}
	return b
}

// A FEC_GET reply laid out as net/ethtool/fec.c builds it: the active mode
// as a u32 link mode bit, statistics as arrays of u64 (total, then lanes),
// ETHTOOL_STAT_NOT_SET for what the driver does not count.
func TestDecodeFEC(t *testing.T) {
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(aFECActive, 50)
	ae.Nested(aFECStats, func(n *netlink.AttributeEncoder) error {
		n.Bytes(aFECStatCorrected, u64s(256, 255, 1))
		n.Bytes(aFECStatUncorr, u64s(145))
		n.Bytes(aFECStatCorrBits, u64s(statNotSet))
		return nil
	})
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	f, err := DecodeFEC(append(genlHeader(30), b...))
	if err != nil {
		t.Fatal(err)
	}
	if FECModeName(f.ActiveLinkMode) != "RS" || !f.Corrected.OK || f.Corrected.Total != 256 || len(f.Corrected.Lanes) != 2 || f.Corrected.Lanes[1] != 1 {
		t.Errorf("fec = %+v", f)
	}
	if !f.Uncorrectable.OK || f.Uncorrectable.Total != 145 || len(f.Uncorrectable.Lanes) != 0 {
		t.Errorf("uncorrectable = %+v", f.Uncorrectable)
	}
	if f.CorrectedBits.OK {
		t.Errorf("not-set corrected bits read as %+v", f.CorrectedBits)
	}
	if _, err := DecodeFEC([]byte{1, 2}); err == nil {
		t.Error("short payload accepted")
	}
}

func TestDecodeLinkstate(t *testing.T) {
	ae := netlink.NewAttributeEncoder()
	ae.Uint8(aLinkstateLink, 0)
	ae.Uint8(aLinkstateExtState, 4)
	b, _ := ae.Encode()
	ls, err := DecodeLinkstate(append(genlHeader(6), b...))
	if err != nil {
		t.Fatal(err)
	}
	if !ls.LinkKnown || ls.Link || ls.ExtState != 4 || ls.ExtSubstate != -1 || ls.DownEvents != -1 {
		t.Errorf("linkstate = %+v", ls)
	}
}

func TestEncodeModuleEEPROMRequest(t *testing.T) {
	for _, c := range []struct{ off, n uint32 }{{0, 129}, {100, 29}, {200, 57}, {0, 0}} {
		if _, err := EncodeModuleEEPROMRequest("eth0", 0, 0, c.off, c.n); err == nil {
			t.Errorf("offset %d length %d accepted", c.off, c.n)
		}
	}
	if _, err := EncodeModuleEEPROMRequest("a-name-far-too-long", 0, 0, 0, 128); err == nil {
		t.Error("long name accepted")
	}
	b, err := EncodeModuleEEPROMRequest("eth0", 0x11, 0, 128, 128)
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != msgModuleEEPROMGet {
		t.Errorf("cmd %d", b[0])
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(append(genlHeader(30), 8, 0, 4, 0, 50, 0, 0, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		DecodeFEC(b)
		DecodeLinkstate(b)
		DecodeModuleEEPROM(b)
	})
}
