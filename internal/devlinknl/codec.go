package devlinknl

import (
	"encoding/binary"
	"fmt"
	"unicode/utf8"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

// Netlink attributes are in host byte order.
var native = binary.NativeEndian

// maxNameLen bounds the strings a reply may carry: a bus or device name or
// a reporter name. The kernel's are short (PCI addresses, "fw_fatal"); a
// longer one is a corrupt message, not a label to export.
const maxNameLen = 256

// decodeReporter decodes one DEVLINK_CMD_HEALTH_REPORTER_GET reply: the
// devlink handle (bus, device, optional port) and the nested
// DEVLINK_ATTR_HEALTH_REPORTER. Attributes it does not know (the dump
// timestamp, grace period, auto recover/dump) are skipped, as a newer
// kernel's additions must be. No library decodes these: mdlayher has no
// devlink package, and the devlink clients that exist (vishvananda/netlink)
// have no health reporters.
func decodeReporter(m genetlink.Message) (Reporter, error) {
	r := Reporter{Port: -1}
	if m.Header.Command != cmdHealthReporterGet {
		return Reporter{}, fmt.Errorf("%w: command %d, want HEALTH_REPORTER_GET (%d)", errMalformed, m.Header.Command, cmdHealthReporterGet)
	}
	ad, err := netlink.NewAttributeDecoder(m.Data)
	if err != nil {
		return Reporter{}, fmt.Errorf("%w: %v", errMalformed, err)
	}
	ad.ByteOrder = native
	var haveReporter, haveName, haveState, haveErr, haveRec bool
	for ad.Next() {
		switch ad.Type() {
		case attrBusName:
			r.Bus = ad.String()
		case attrDevName:
			r.Device = ad.String()
		case attrPortIndex:
			r.Port = int64(ad.Uint32())
		case attrHealthReporter:
			haveReporter = true
			ad.Nested(func(nd *netlink.AttributeDecoder) error {
				for nd.Next() {
					switch nd.Type() {
					case attrHealthReporterName:
						r.Name, haveName = nd.String(), true
					case attrHealthReporterState:
						r.State, haveState = State(nd.Uint8()), true
					case attrHealthReporterErrCount:
						r.Errors, haveErr = nd.Uint64(), true
					case attrHealthReporterRecoverCount:
						r.Recoveries, haveRec = nd.Uint64(), true
					}
				}
				return nil
			})
		}
	}
	if err := ad.Err(); err != nil {
		return Reporter{}, fmt.Errorf("%w: %v", errMalformed, err)
	}
	switch {
	case !haveReporter:
		return Reporter{}, fmt.Errorf("%w: no DEVLINK_ATTR_HEALTH_REPORTER", errMalformed)
	case !haveName || !haveState || !haveErr || !haveRec:
		// The kernel always fills all four (devlink_nl_health_reporter_fill
		// fails the message otherwise).
		return Reporter{}, fmt.Errorf("%w: reporter %q lacks name, state or counts", errMalformed, r.Name)
	}
	for what, s := range map[string]string{"bus": r.Bus, "device": r.Device, "reporter": r.Name} {
		if err := checkName(what, s); err != nil {
			return Reporter{}, err
		}
	}
	return r, nil
}

// checkName refuses a name that would make a bad label or a misleading
// handle.
func checkName(what, s string) error {
	if s == "" {
		return fmt.Errorf("%w: empty %s name", errMalformed, what)
	}
	return checkText(what+" name", s)
}

// checkText refuses a string that would make a bad label value: too long,
// not UTF-8, or with a control character.
func checkText(what, s string) error {
	switch {
	case len(s) > maxNameLen:
		return fmt.Errorf("%w: %s of %d bytes", errMalformed, what, len(s))
	case !utf8.ValidString(s):
		return fmt.Errorf("%w: %s %q is not UTF-8", errMalformed, what, s)
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("%w: %s %q has a control character", errMalformed, what, s)
		}
	}
	return nil
}
