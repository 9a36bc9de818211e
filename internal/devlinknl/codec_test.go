package devlinknl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/mdlayher/genetlink"
)

// Netlink attributes laid out by hand (include/uapi/linux/netlink.h:
// struct nlattr {u16 nla_len; u16 nla_type}, payload padded to 4 bytes), so
// the decoder is not tested against the encoder of the same library.
func nla(typ uint16, payload []byte) []byte {
	n := 4 + len(payload)
	b := make([]byte, (n+3)&^3)
	binary.NativeEndian.PutUint16(b[0:], uint16(n))
	binary.NativeEndian.PutUint16(b[2:], typ)
	copy(b[4:], payload)
	return b
}

func str(s string) []byte { return append([]byte(s), 0) }

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.NativeEndian.PutUint64(b, v)
	return b
}

func u32(v uint32) []byte {
	b := make([]byte, 4)
	binary.NativeEndian.PutUint32(b, v)
	return b
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// reporterMsg is a HEALTH_REPORTER_GET reply as devlink_nl_health_reporter_fill
// builds it on Linux 6.x: genl header, handle, optional port index, then
// the nested reporter with name, state, counts, grace period (u64, with a
// DEVLINK_ATTR_PAD before it on 32-bit alignment), auto recover, dump
// timestamps and auto dump.
func reporterMsg(port int64, name string, state uint8, errs, recs uint64) []byte {
	handle := cat(nla(attrBusName, str("pci")), nla(attrDevName, str("0000:18:00.0")))
	if port >= 0 {
		handle = append(handle, nla(attrPortIndex, u32(uint32(port)))...)
	}
	rep := cat(
		nla(attrHealthReporterName, str(name)),
		nla(attrHealthReporterState, []byte{state}),
		nla(attrHealthReporterErrCount, u64(errs)),
		nla(attrHealthReporterRecoverCount, u64(recs)),
		nla(119, u64(123456)),       // DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS
		nla(120, u64(500)),          // GRACEFUL_PERIOD
		nla(121, []byte{1}),         // AUTO_RECOVER
		nla(137, u64(1700000000e9)), // DUMP_TS_NS
		nla(141, []byte{1}),         // AUTO_DUMP
	)
	return cat([]byte{cmdHealthReporterGet, familyVersion, 0, 0}, handle, nla(attrHealthReporter|0x8000, rep))
}

// decodeRaw decodes a message as it comes off the socket: genetlink splits
// off the generic netlink header, decodeReporter reads the rest.
func decodeRaw(b []byte) (Reporter, error) {
	var m genetlink.Message
	if err := m.UnmarshalBinary(b); err != nil {
		return Reporter{}, fmt.Errorf("%w: %v", errMalformed, err)
	}
	return decodeReporter(m)
}

func TestDecodeReporter(t *testing.T) {
	got, err := decodeRaw(reporterMsg(65535, "tx", 1, 7, 6))
	if err != nil {
		t.Fatal(err)
	}
	want := Reporter{Bus: "pci", Device: "0000:18:00.0", Port: 65535, Name: "tx", State: StateError, Errors: 7, Recoveries: 6}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if h := got.Handle(); h != "pci/0000:18:00.0/65535" {
		t.Errorf("Handle() = %q", h)
	}
	dev, err := decodeRaw(reporterMsg(-1, "fw_fatal", 0, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if dev.Port != -1 || dev.Handle() != "pci/0000:18:00.0" || dev.State.String() != "healthy" {
		t.Fatalf("device reporter: %+v", dev)
	}
}

func TestDecodeReporterRejects(t *testing.T) {
	hdr := []byte{cmdHealthReporterGet, 1, 0, 0}
	handle := cat(nla(attrBusName, str("pci")), nla(attrDevName, str("0000:18:00.0")))
	full := cat(nla(attrHealthReporterName, str("rx")), nla(attrHealthReporterState, []byte{0}),
		nla(attrHealthReporterErrCount, u64(1)), nla(attrHealthReporterRecoverCount, u64(1)))
	for name, msg := range map[string][]byte{
		"empty":           nil,
		"other command":   cat([]byte{1, 1, 0, 0}, handle),
		"no reporter":     cat(hdr, handle),
		"no counts":       cat(hdr, handle, nla(attrHealthReporter, nla(attrHealthReporterName, str("rx")))),
		"no bus":          cat(hdr, nla(attrDevName, str("x")), nla(attrHealthReporter, full)),
		"short u64":       cat(hdr, handle, nla(attrHealthReporter, cat(nla(attrHealthReporterName, str("rx")), nla(attrHealthReporterErrCount, []byte{1, 2})))),
		"overrun":         cat(hdr, []byte{0xff, 0, 1, 0}),
		"control in name": cat(hdr, handle, nla(attrHealthReporter, cat(nla(attrHealthReporterName, str("r\nx")), full[8:]))),
	} {
		t.Run(name, func(t *testing.T) {
			r, err := decodeRaw(msg)
			if err == nil {
				t.Fatalf("accepted: %+v", r)
			}
			if !errors.Is(err, errMalformed) {
				t.Fatalf("%v is not errMalformed", err)
			}
		})
	}
}

func TestDecodeDump(t *testing.T) {
	var msgs []genetlink.Message
	for _, name := range []string{"fw", "fw_fatal"} {
		var m genetlink.Message
		if err := m.UnmarshalBinary(reporterMsg(-1, name, 0, 0, 0)); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	got, err := decodeDump(msgs)
	if err != nil || len(got) != 2 || got[1].Name != "fw_fatal" {
		t.Fatalf("got %+v, %v", got, err)
	}
	msgs[1].Data = msgs[1].Data[:2]
	if _, err := decodeDump(msgs); err == nil {
		t.Fatal("a corrupt message in a dump was accepted")
	}
}

func FuzzDecodeReporter(f *testing.F) {
	f.Add(reporterMsg(-1, "fw_fatal", 0, 0, 0))
	f.Add(reporterMsg(65535, "tx", 1, 3, 2))
	f.Add([]byte{cmdHealthReporterGet, 1, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := decodeRaw(in)
		if err != nil {
			if !errors.Is(err, errMalformed) {
				t.Fatalf("error %v is not errMalformed", err)
			}
			if r != (Reporter{}) {
				t.Fatal("result and error together")
			}
			return
		}
		for _, s := range []string{r.Bus, r.Device, r.Name} {
			if checkName("x", s) != nil {
				t.Fatalf("accepted a bad name %q", s)
			}
		}
	})
}
