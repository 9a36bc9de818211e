package node

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"strconv"
	"strings"
)

// A pluggable module's management memory (SFF-8636 for QSFP/QSFP+/QSFP28,
// CMIS for QSFP-DD, OSFP and QSFP112) is a 128-byte lower page always
// present and 128-byte upper pages selected by page (and, in CMIS, bank)
// number. ModuleEEPROM holds what was read of it; Transceiver is its
// meaning.

// ModulePageLen is the size of the lower page and of each upper page.
const ModulePageLen = 128

// SFF-8024 identifiers the decoder knows (byte 0 of the lower page).
const (
	ModuleIDQSFP     = 0x0c
	ModuleIDQSFPPlus = 0x0d
	ModuleIDQSFP28   = 0x11
	ModuleIDQSFPDD   = 0x18
	ModuleIDOSFP     = 0x19
	// ModuleIDQSFPCMIS is "QSFP+ or later with CMIS": QSFP112 modules.
	ModuleIDQSFPCMIS = 0x1e
)

// Management specifications.
const (
	SpecSFF8636 = "SFF-8636"
	SpecCMIS    = "CMIS"
)

// ModuleEEPROM is the raw memory read from a module: the lower page and the
// upper pages that were read, keyed by ModulePageKey(page, bank).
type ModuleEEPROM struct {
	Lower []byte
	Upper map[uint16][]byte
}

// ModulePageKey keys an upper page of a ModuleEEPROM.
func ModulePageKey(page, bank uint8) uint16 { return uint16(bank)<<8 | uint16(page) }

// page returns upper page (page, bank), nil when it was not read.
func (m *ModuleEEPROM) page(page, bank uint8) []byte {
	if m == nil {
		return nil
	}
	p := m.Upper[ModulePageKey(page, bank)]
	if len(p) != ModulePageLen {
		return nil
	}
	return p
}

// SetPage stores an upper page (128 bytes; shorter is padded with zeros,
// longer truncated).
func (m *ModuleEEPROM) SetPage(page, bank uint8, data []byte) {
	if m.Upper == nil {
		m.Upper = map[uint16][]byte{}
	}
	p := make([]byte, ModulePageLen)
	copy(p, data)
	m.Upper[ModulePageKey(page, bank)] = p
}

// ModuleFromFlat lays out the flat memory the ETHTOOL_GMODULEEEPROM ioctl
// returns (and that `ethtool -m hex on` prints over the ioctl): the lower
// page, upper page 00h, then the optional upper pages in the order the
// kernel's drivers and ethtool agree on: 01h, 02h, 03h for SFF-8636;
// 01h, 02h, 10h, 11h for CMIS. A short read gives only the pages it holds.
func ModuleFromFlat(b []byte) *ModuleEEPROM {
	m := &ModuleEEPROM{}
	if len(b) == 0 {
		return m
	}
	m.Lower = make([]byte, ModulePageLen)
	copy(m.Lower, b)
	order := []uint8{0x00, 0x01, 0x02, 0x03}
	if isCMIS(b[0]) {
		order = []uint8{0x00, 0x01, 0x02, 0x10, 0x11}
	}
	for i, pg := range order {
		off := ModulePageLen * (i + 1)
		if off >= len(b) {
			break
		}
		m.SetPage(pg, 0, b[off:min(off+ModulePageLen, len(b))])
	}
	return m
}

// ModuleReadError is a failed module read as ethtool reported it in a
// capture: "Cannot get Module EEPROM data: Input/output error", or the
// netlink warnings mlx5 sent with a "successful" read of nothing, after
// which ethtool printed bytes that are not the module's (Linux commit
// d1c94bc5b90c, "net/mlx5e: Fix return value in case of module EEPROM read
// error"). It wraps ErrModuleReadFailed.
type ModuleReadError struct {
	// Line is the capture's line number, Message ethtool's words.
	Line    int
	Message string
	// Reason is strerror's text after "Cannot get ...: " (e.g.
	// "Input/output error"), "" for a netlink warning.
	Reason string
}

func (e *ModuleReadError) Error() string {
	return fmt.Sprintf("line %d: ethtool could not read the module: %q", e.Line, e.Message)
}

func (e *ModuleReadError) Unwrap() error { return ErrModuleReadFailed }

// ErrModuleReadFailed means a module's memory could not be read: the
// driver reported a failure, or returned fewer bytes than asked.
var ErrModuleReadFailed = errors.New("module EEPROM read failed")

// ParseModuleHex reads `ethtool -m <if> hex on` output: one dump, or
// several, each after a line holding the command that printed it
// (`$ ethtool -m eth0 page 0x11 hex on`, after whatever prompt the shell
// printed: `# `, `[root@host ~]# `, `user@host:~$ sudo `). A dump with no
// page in its command is flat memory at the offsets ethtool prints (from 0:
// the ioctl layout, or the lower page over netlink); a dump of a page sits
// at offsets 0x80-0xff as ethtool prints it. A failed read that ethtool
// reported (an error, or a netlink warning before bytes that are then not
// the module's) is a *ModuleReadError.
func ParseModuleHex(r io.Reader) (*ModuleEEPROM, error) {
	type dump struct {
		page, bank int
		data       map[int]byte
	}
	var dumps []*dump
	cur := &dump{page: -1, data: map[int]byte{}}
	next := func(args []string, line int) error {
		if len(cur.data) > 0 {
			dumps = append(dumps, cur)
		}
		cur = &dump{page: -1, data: map[int]byte{}}
		for i := 0; i+1 < len(args); i++ {
			switch args[i] {
			case "page", "bank":
				v, err := strconv.ParseUint(args[i+1], 0, 8)
				if err != nil {
					return fmt.Errorf("line %d: %s %q: %w", line, args[i], args[i+1], err)
				}
				if args[i] == "page" {
					cur.page = int(v)
				} else {
					cur.bank = int(v)
				}
			}
		}
		return nil
	}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if args, ok := PromptCommand(s, "ethtool"); ok {
			if err := next(args, line); err != nil {
				return nil, err
			}
			continue
		}
		switch {
		case s == "":
			continue
		case strings.HasPrefix(s, "netlink warning:") || strings.HasPrefix(s, "netlink error:"):
			return nil, &ModuleReadError{Line: line, Message: s}
		case strings.HasPrefix(s, "Cannot get Module EEPROM data:") || strings.HasPrefix(s, "Cannot get module EEPROM information:"):
			_, reason, _ := strings.Cut(s, ": ")
			return nil, &ModuleReadError{Line: line, Message: s, Reason: strings.TrimSpace(reason)}
		case strings.HasPrefix(s, "$") || strings.HasPrefix(s, "#"):
			// A comment, or a command line ethtool did not print.
			if err := next(strings.Fields(s), line); err != nil {
				return nil, err
			}
			continue
		case strings.HasPrefix(s, "Offset") || strings.HasPrefix(s, "---"):
			continue
		}
		addr, rest, ok := strings.Cut(s, ":")
		if !ok {
			return nil, fmt.Errorf("line %d: not an ethtool hex dump line: %q", line, s)
		}
		off, err := strconv.ParseUint(strings.TrimSpace(addr), 0, 16)
		if err != nil {
			return nil, fmt.Errorf("line %d: offset %q: %w", line, addr, err)
		}
		for i, h := range strings.Fields(rest) {
			v, err := strconv.ParseUint(h, 16, 8)
			if err != nil {
				return nil, fmt.Errorf("line %d: byte %q: %w", line, h, err)
			}
			o := int(off) + i
			if o >= 64<<10 {
				return nil, fmt.Errorf("line %d: offset %#x beyond a module's memory", line, o)
			}
			cur.data[o] = byte(v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(cur.data) > 0 {
		dumps = append(dumps, cur)
	}
	if len(dumps) == 0 {
		return nil, errors.New("no module EEPROM bytes")
	}
	m := &ModuleEEPROM{}
	// Flat dumps are one memory: several commands may have printed parts
	// of it ("hex on offset 256" after a dump from 0).
	flatData := map[int]byte{}
	for _, d := range dumps {
		if d.page < 0 {
			maps.Copy(flatData, d.data)
		}
	}
	if len(flatData) > 0 {
		// Flat memory is laid out from offset 0; the bytes after the first
		// gap cannot be put on a page.
		end := 0
		for {
			if _, ok := flatData[end]; !ok {
				break
			}
			end++
		}
		if end < ModulePageLen {
			return nil, fmt.Errorf("flat dump without the lower page: %d bytes from offset 0", end)
		}
		flat := make([]byte, end)
		for o := range end {
			flat[o] = flatData[o]
		}
		fm := ModuleFromFlat(flat)
		m.Lower, m.Upper = fm.Lower, fm.Upper
	}
	for _, d := range dumps {
		if d.page < 0 {
			continue
		}
		p := make([]byte, ModulePageLen)
		for o, v := range d.data {
			switch {
			case o < ModulePageLen:
				// The lower page reads the same whatever page is selected.
				if m.Lower == nil {
					m.Lower = make([]byte, ModulePageLen)
				}
				m.Lower[o] = v
			case o < 2*ModulePageLen:
				p[o-ModulePageLen] = v
			}
		}
		m.SetPage(uint8(d.page), uint8(d.bank), p)
	}
	if m.Lower == nil {
		return nil, errors.New("no lower page (offsets 0x00-0x7f) in the dump")
	}
	return m, nil
}

// Limits are a module's own alarm and warning thresholds for one monitor.
type Limits struct {
	HighAlarm, LowAlarm, HighWarning, LowWarning float64
}

// Lane is one lane's monitors; a NaN is a monitor the module does not
// implement.
type Lane struct {
	// TxPowerWatts and RxPowerWatts are average optical powers (Rx may be
	// OMA on old SFF-8636 modules, see Transceiver.RxPowerOMA).
	TxPowerWatts, RxPowerWatts float64
	// BiasAmperes is the laser bias current.
	BiasAmperes float64
}

// Transceiver is the decoded identity, monitors and thresholds of a module.
type Transceiver struct {
	Interface  string
	Identifier uint8
	// Type is the form factor from the identifier, e.g. "QSFP28", "OSFP".
	Type string
	// Spec is SpecSFF8636 or SpecCMIS.
	Spec                             string
	Vendor, PartNumber, Revision, SN string
	// Media is MediaOptical, MediaCopper, MediaActiveCable or "" when
	// unknown.
	Media string
	// TemperatureCelsius and SupplyVolts are NaN when not monitored.
	TemperatureCelsius, SupplyVolts float64
	Lanes                           []Lane
	// RxPowerOMA: Rx power is optical modulation amplitude, not average.
	RxPowerOMA bool
	// Thresholds are nil when the module does not publish them (flat
	// memory, or the page was not read).
	TempThresholds, VccThresholds, RxPowerThresholds, TxPowerThresholds, BiasThresholds *Limits
}

// Media kinds.
const (
	MediaOptical = "optical"
	MediaCopper  = "copper"
	// MediaActiveCable is a CMIS active cable (AOC or active copper).
	MediaActiveCable = "active_cable"
)

func isCMIS(id byte) bool {
	return id == ModuleIDQSFPDD || id == ModuleIDOSFP || id == ModuleIDQSFPCMIS
}

func isSFF8636(id byte) bool {
	return id == ModuleIDQSFP || id == ModuleIDQSFPPlus || id == ModuleIDQSFP28
}

// ModuleType names an SFF-8024 identifier.
func ModuleType(id uint8) string {
	switch id {
	case ModuleIDQSFP:
		return "QSFP"
	case ModuleIDQSFPPlus:
		return "QSFP+"
	case ModuleIDQSFP28:
		return "QSFP28"
	case ModuleIDQSFPDD:
		return "QSFP-DD"
	case ModuleIDOSFP:
		return "OSFP"
	case ModuleIDQSFPCMIS:
		return "QSFP+ CMIS"
	case 0x03:
		return "SFP"
	}
	return fmt.Sprintf("0x%02x", id)
}

// ErrModuleCorrupt means the bytes read cannot be the module's memory: they
// contradict themselves. A NIC's firmware can hand back the wrong page or
// address (bnxt_en read an SFP's A2h diagnostics where its A0h identity
// belongs: "bnxt_en: Invalid data read from SFP EEPROM", netdev, 2025-04),
// and such bytes still look like a module.
var ErrModuleCorrupt = errors.New("module EEPROM corrupt")

// moduleIDSFP is SFF-8024's "SFP/SFP+/SFP28" (SFF-8472 memory).
const moduleIDSFP = 0x03

// checkModuleIntegrity refuses memory that contradicts itself. An SFP's
// base identity fields (bytes 0-62) carry a checksum in byte 63 (SFF-8472
// CC_BASE), which the kernel's own SFP driver checks before it trusts a
// module (drivers/net/phy/sfp.c); SFF-8636 and CMIS repeat the identifier
// in byte 128, upper page 00h. Their checksums are not checked: cheap
// modules with a wrong one are common and are still read by ethtool.
func checkModuleIntegrity(m *ModuleEEPROM) error {
	id := m.Lower[0]
	switch {
	case id == moduleIDSFP:
		var sum byte
		for _, b := range m.Lower[:63] {
			sum += b
		}
		if sum != m.Lower[63] {
			return fmt.Errorf("%w: SFP base checksum (byte 63) is 0x%02x, bytes 0-62 sum to 0x%02x", ErrModuleCorrupt, m.Lower[63], sum)
		}
	case isSFF8636(id) || isCMIS(id):
		if p := m.page(0, 0); p != nil && p[0] != 0 && p[0] != id {
			return fmt.Errorf("%w: identifier 0x%02x in byte 0 but 0x%02x in byte 128", ErrModuleCorrupt, id, p[0])
		}
	}
	return nil
}

// ErrModuleUnsupported is returned for a module the decoder does not know
// (SFP's SFF-8472, an empty cage's zeros).
var ErrModuleUnsupported = errors.New("module management interface not supported")

// DecodeModule decodes a module's memory. Values it cannot read (a page
// not read, a monitor not implemented) are NaN or nil, never 0.
func DecodeModule(m *ModuleEEPROM) (*Transceiver, error) {
	if m == nil || len(m.Lower) < ModulePageLen {
		return nil, errors.New("module EEPROM without a full lower page")
	}
	if err := checkModuleIntegrity(m); err != nil {
		return nil, err
	}
	id := m.Lower[0]
	t := &Transceiver{Identifier: id, Type: ModuleType(id), TemperatureCelsius: math.NaN(), SupplyVolts: math.NaN()}
	switch {
	case isSFF8636(id):
		t.Spec = SpecSFF8636
		decodeSFF8636(m, t)
	case isCMIS(id):
		t.Spec = SpecCMIS
		decodeCMIS(m, t)
	default:
		return nil, fmt.Errorf("%w: identifier %s", ErrModuleUnsupported, t.Type)
	}
	return t, nil
}

func u16(b []byte, off int) uint16 { return binary.BigEndian.Uint16(b[off:]) }

// The units of SFF-8636 and CMIS monitors.
func tempC(b []byte, off int) float64 { return float64(int16(u16(b, off))) / 256 }

// Dividing (not multiplying by 100e-6) gives the double nearest the
// decimal reading, so 32912 reads 3.2912 V, not 3.2912000000000003.
func volts(b []byte, off int) float64  { return float64(u16(b, off)) / 1e4 }
func watts(b []byte, off int) float64  { return float64(u16(b, off)) / 1e7 }
func ampere(b []byte, off int) float64 { return float64(u16(b, off)) / 5e5 }

func limits(b []byte, off int, conv func([]byte, int) float64) *Limits {
	return &Limits{
		HighAlarm:   conv(b, off),
		LowAlarm:    conv(b, off+2),
		HighWarning: conv(b, off+4),
		LowWarning:  conv(b, off+6),
	}
}

// text returns a space-padded ASCII field with the padding and any
// non-printable byte removed (label values must be valid UTF-8).
func text(b []byte) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c >= 0x20 && c < 0x7f {
			out = append(out, c)
		}
	}
	return strings.TrimSpace(string(out))
}

// SFF-8636 offsets (lower page 00h, upper page 00h at 128-255, page 03h).
const (
	sffStatus      = 2 // bit 2: flat memory (no page 03h)
	sffTemp        = 22
	sffVcc         = 26
	sffRxPower     = 34
	sffBias        = 42
	sffTxPower     = 50
	sffTransmitter = 147 - 128 // upper page 00h: bits 7-4 transmitter technology
	sffVendor      = 148 - 128
	sffPN          = 168 - 128
	sffRev         = 184 - 128
	sffSN          = 196 - 128
	sffDiagType    = 220 - 128 // bit 3: Rx average power, bit 2: Tx power supported
	sffThrTemp     = 128 - 128 // page 03h
	sffThrVcc      = 144 - 128
	sffThrRx       = 176 - 128
	sffThrBias     = 184 - 128
	sffThrTx       = 192 - 128
)

func decodeSFF8636(m *ModuleEEPROM, t *Transceiver) {
	lo := m.Lower
	// The module-level monitors are always present in the lower page;
	// ethtool prints them unconditionally, as does this decoder.
	t.TemperatureCelsius = tempC(lo, sffTemp)
	t.SupplyVolts = volts(lo, sffVcc)
	txPower := true
	if up := m.page(0, 0); up != nil {
		t.Vendor = text(up[sffVendor : sffVendor+16])
		t.PartNumber = text(up[sffPN : sffPN+16])
		t.Revision = text(up[sffRev : sffRev+2])
		t.SN = text(up[sffSN : sffSN+16])
		// Transmitter technology 0xA-0xF is copper: a DAC has no lasers,
		// its lane "powers" are zeros that would read as a dark fibre.
		if up[sffTransmitter]>>4 >= 0x0a {
			t.Media = MediaCopper
		} else {
			t.Media = MediaOptical
		}
		t.RxPowerOMA = up[sffDiagType]&0x08 == 0
		txPower = up[sffDiagType]&0x04 != 0
	}
	// Without upper page 00h the media is unknown: a DAC's zeros must not
	// read as dark fibre, so lanes need a known optical module.
	if t.Media == MediaOptical {
		for i := 0; i < 4; i++ {
			l := Lane{
				RxPowerWatts: watts(lo, sffRxPower+2*i),
				BiasAmperes:  ampere(lo, sffBias+2*i),
				TxPowerWatts: math.NaN(),
			}
			if txPower {
				l.TxPowerWatts = watts(lo, sffTxPower+2*i)
			}
			t.Lanes = append(t.Lanes, l)
		}
	}
	if lo[sffStatus]&0x04 != 0 {
		return // flat memory: no page 03h
	}
	if p3 := m.page(3, 0); p3 != nil {
		t.TempThresholds = limits(p3, sffThrTemp, tempC)
		t.VccThresholds = limits(p3, sffThrVcc, volts)
		if t.Media == MediaOptical {
			t.RxPowerThresholds = limits(p3, sffThrRx, watts)
			t.BiasThresholds = limits(p3, sffThrBias, ampere)
			if txPower {
				t.TxPowerThresholds = limits(p3, sffThrTx, watts)
			}
		}
	}
}

// CMIS offsets (lower page, upper page 00h, 01h, 02h, 11h bank 0).
const (
	cmisFlat        = 2 // bit 7: flat memory (only page 00h)
	cmisTemp        = 14
	cmisVcc         = 16
	cmisModuleType  = 85 // 1 MMF, 2 SMF, 3 passive copper, 4 active cable, 5 BASE-T
	cmisApp1Lanes   = 88 // host lane count (bits 7-4), media lane count (3-0)
	cmisVendor      = 129 - 128
	cmisPN          = 148 - 128
	cmisRev         = 164 - 128
	cmisSN          = 166 - 128
	cmisMonitors    = 159 - 128 // page 01h: bit 0 temperature, bit 1 Vcc
	cmisLaneMon     = 160 - 128 // page 01h: bit 0 bias, 1 Tx power, 2 Rx power; bits 4-3 bias scale
	cmisThrTemp     = 128 - 128 // page 02h
	cmisThrVcc      = 136 - 128
	cmisThrTxPower  = 176 - 128
	cmisThrBias     = 184 - 128
	cmisThrRxPower  = 192 - 128
	cmisLaneTxPower = 154 - 128 // page 11h
	cmisLaneBias    = 170 - 128
	cmisLaneRxPower = 186 - 128
	cmisMaxLanes    = 8
)

func decodeCMIS(m *ModuleEEPROM, t *Transceiver) {
	lo := m.Lower
	switch lo[cmisModuleType] {
	case 1, 2:
		t.Media = MediaOptical
	case 3:
		t.Media = MediaCopper
	case 4:
		t.Media = MediaActiveCable
	}
	if up := m.page(0, 0); up != nil {
		t.Vendor = text(up[cmisVendor : cmisVendor+16])
		t.PartNumber = text(up[cmisPN : cmisPN+16])
		t.Revision = text(up[cmisRev : cmisRev+2])
		t.SN = text(up[cmisSN : cmisSN+16])
	}
	flat := lo[0x02]&0x80 != 0
	p1 := m.page(1, 0)
	// Page 01h says which monitors exist; without it (flat memory, or not
	// read) a passive cable's zeros must not read as 0 degrees.
	tempOK, vccOK := t.Media != MediaCopper, t.Media != MediaCopper
	if p1 != nil && !flat {
		tempOK = p1[cmisMonitors]&0x01 != 0
		vccOK = p1[cmisMonitors]&0x02 != 0
	}
	if tempOK {
		t.TemperatureCelsius = tempC(lo, cmisTemp)
	}
	if vccOK {
		t.SupplyVolts = volts(lo, cmisVcc)
	}
	if flat || p1 == nil {
		return
	}
	biasOK := p1[cmisLaneMon]&0x01 != 0
	txOK := p1[cmisLaneMon]&0x02 != 0
	rxOK := p1[cmisLaneMon]&0x04 != 0
	// Tx bias is in 2 uA units times 1, 2 or 4 (CMIS 5 8.4.4, page 01h
	// byte 160 bits 4-3).
	biasScale := float64(int(1) << ((p1[cmisLaneMon] >> 3) & 0x03))
	if p2 := m.page(2, 0); p2 != nil {
		if tempOK {
			t.TempThresholds = limits(p2, cmisThrTemp, tempC)
		}
		if vccOK {
			t.VccThresholds = limits(p2, cmisThrVcc, volts)
		}
		if txOK {
			t.TxPowerThresholds = limits(p2, cmisThrTxPower, watts)
		}
		if biasOK {
			t.BiasThresholds = limits(p2, cmisThrBias, ampere)
			scaleLimits(t.BiasThresholds, biasScale)
		}
		if rxOK {
			t.RxPowerThresholds = limits(p2, cmisThrRxPower, watts)
		}
	}
	p11 := m.page(0x11, 0)
	if p11 == nil || !(biasOK || txOK || rxOK) {
		return
	}
	// Only the media lanes of the module's first application carry light:
	// a 400GBASE-DR4 module reports 8 lanes, 4 of them forever dark.
	n := int(lo[cmisApp1Lanes] & 0x0f)
	if n == 0 || n > cmisMaxLanes {
		n = cmisMaxLanes
	}
	for i := 0; i < n; i++ {
		l := Lane{TxPowerWatts: math.NaN(), RxPowerWatts: math.NaN(), BiasAmperes: math.NaN()}
		if txOK {
			l.TxPowerWatts = watts(p11, cmisLaneTxPower+2*i)
		}
		if rxOK {
			l.RxPowerWatts = watts(p11, cmisLaneRxPower+2*i)
		}
		if biasOK {
			l.BiasAmperes = ampere(p11, cmisLaneBias+2*i) * biasScale
		}
		t.Lanes = append(t.Lanes, l)
	}
}

func scaleLimits(l *Limits, f float64) {
	l.HighAlarm *= f
	l.LowAlarm *= f
	l.HighWarning *= f
	l.LowWarning *= f
}

// Levels of a monitor against its module's thresholds.
const (
	LevelOK      = "ok"
	LevelWarning = "warning"
	LevelAlarm   = "alarm"
)

// Level says where v stands against l: LevelAlarm past an alarm threshold,
// LevelWarning past a warning one, LevelOK otherwise (and when v or l is
// unknown). dir is "high", "low" or "" for which side was crossed.
func (l *Limits) Level(v float64) (level, dir string) {
	if l == nil || math.IsNaN(v) {
		return LevelOK, ""
	}
	// A module that leaves every threshold at zero publishes none.
	if *l == (Limits{}) {
		return LevelOK, ""
	}
	switch {
	case v > l.HighAlarm:
		return LevelAlarm, "high"
	case v < l.LowAlarm:
		return LevelAlarm, "low"
	case v > l.HighWarning:
		return LevelWarning, "high"
	case v < l.LowWarning:
		return LevelWarning, "low"
	}
	return LevelOK, ""
}
