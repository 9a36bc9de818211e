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
	f, err := DecodeFEC(b)
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
		t.Error("a truncated attribute accepted")
	}
}

func TestDecodeLinkstate(t *testing.T) {
	ae := netlink.NewAttributeEncoder()
	ae.Uint8(aLinkstateLink, 0)
	ae.Uint8(aLinkstateExtState, 4)
	b, _ := ae.Encode()
	ls, err := DecodeLinkstate(b)
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
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		t.Fatal(err)
	}
	got := map[uint16]uint32{}
	var dev string
	for ad.Next() {
		switch ad.Type() {
		case aHeader:
			ad.Nested(func(n *netlink.AttributeDecoder) error {
				for n.Next() {
					if n.Type() == aHeaderDevName {
						dev = n.String()
					}
				}
				return nil
			})
		case aModuleEEPROMOffset, aModuleEEPROMLength:
			got[ad.Type()] = ad.Uint32()
		case aModuleEEPROMPage, aModuleEEPROMBank, aModuleEEPROMI2CAddr:
			got[ad.Type()] = uint32(ad.Uint8())
		}
	}
	if err := ad.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[uint16]uint32{aModuleEEPROMOffset: 128, aModuleEEPROMLength: 128, aModuleEEPROMPage: 0x11, aModuleEEPROMBank: 0, aModuleEEPROMI2CAddr: ModuleI2CAddress}
	if dev != "eth0" || len(got) != len(want) {
		t.Fatalf("request for %q: %v", dev, got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("attribute %d = %d, want %d", k, got[k], v)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte{8, 0, 4, 0, 50, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		DecodeFEC(b)
		DecodeLinkstate(b)
		DecodeModuleEEPROM(b)
	})
}

// eeprom_fill_reply puts the data attribute with the length the driver
// returned: 0 from mlx5 before Linux d1c94bc5b90c when the read failed. That
// is data of length 0 (the reader refuses it as a short read), not a reply
// without data.
func TestDecodeModuleEEPROMEmptyData(t *testing.T) {
	for _, n := range []int{0, 128} {
		ae := netlink.NewAttributeEncoder()
		ae.Bytes(aModuleEEPROMData, make([]byte, n))
		b, err := ae.Encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeModuleEEPROM(b)
		if err != nil || got == nil || len(got) != n {
			t.Errorf("%d bytes: %v (%d), %v", n, got == nil, len(got), err)
		}
	}
	if _, err := DecodeModuleEEPROM(nil); err == nil {
		t.Error("a reply without the data attribute accepted")
	}
}
