// Package nicstats turns the text and string tables that `ethtool` exposes
// (-S statistics, -i driver info, -a pause parameters) into typed values, and
// maps vendor-specific statistic names (mlx5, bnxt_en, ice) onto the
// driver-neutral metric families of roce_exporter.
//
// The parsers and the mapping are pure (an io.Reader or a slice in, values
// out), so the same code serves the live path and replays of text recorded
// on another machine. Reader is the live path, the exporter's one ethtool
// ioctl socket: the ETHTOOL_GSTRINGS / ETHTOOL_GSTATS ioctls, with each
// interface's string table kept between calls, and GDRVINFO, GPAUSEPARAM
// and the module EEPROM.
package nicstats

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxLine bounds a single input line. Real ethtool lines are < 100 bytes
// (ETH_GSTRING_LEN is 32); the bound only protects against hostile input.
const maxLine = 64 * 1024

// Stats is one `ethtool -S` snapshot as parallel slices in kernel order.
// Keeping names and values apart lets a caller cache the string table (and a
// Mapping built from it) and only refresh Values on every scrape.
type Stats struct {
	Names  []string
	Values []uint64
	// Skipped counts lines that looked like neither a header nor a
	// "name: value" pair. They are tolerated because drivers and ethtool
	// versions add odd lines, but a non-zero count is worth logging.
	Skipped int
}

// Len returns the number of statistics.
func (s Stats) Len() int { return len(s.Names) }

// Get returns the first value recorded under name. It is a linear scan meant
// for tests and one-off lookups, not for the scrape path (use Mapping there).
func (s Stats) Get(name string) (uint64, bool) {
	for i, n := range s.Names {
		if n == name {
			return s.Values[i], true
		}
	}
	return 0, false
}

// ErrNoStatistics is returned when a document holds no parsable statistic.
var ErrNoStatistics = errors.New("nicstats: no statistics found")

// ParseStatistics parses the text printed by `ethtool -S <if>`:
//
//	NIC statistics:
//	     rx_packets: 1832214
//	     [3]: tx_bytes: 42
//	     rx_priority_3_xoff.nic: 0
//
// A name may itself contain ": " (bnx2x/bnxt per-ring "[0]: rx_bytes",
// be2net "rxq0: rx_bytes"), so the value is whatever follows the LAST ": ".
// Lines that do not parse are counted in Stats.Skipped rather than failing
// the whole document; a document without the header or without a single
// statistic is an error.
func ParseStatistics(r io.Reader) (Stats, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)

	var (
		st         Stats
		sawHeader  bool
		lineNumber int
	)
	for sc.Scan() {
		lineNumber++
		raw := sc.Text()
		line := strings.TrimSpace(raw)
		if line == "" {
			continue
		}
		if !sawHeader {
			if line != "NIC statistics:" {
				return Stats{}, fmt.Errorf("nicstats: line %d: expected \"NIC statistics:\" header, got %q", lineNumber, truncate(line))
			}
			sawHeader = true
			continue
		}
		// ethtool indents every statistic; an unindented line ending in ':'
		// is another section header (a repeated "NIC statistics:" from a
		// concatenated capture, or "Standard stats for X:" from
		// --all-groups) and carries no value of its own.
		if raw[0] != ' ' && raw[0] != '\t' && strings.HasSuffix(line, ":") {
			continue
		}
		name, value, ok := splitStat(line)
		if !ok {
			st.Skipped++
			continue
		}
		st.Names = append(st.Names, name)
		st.Values = append(st.Values, value)
	}
	if err := sc.Err(); err != nil {
		return Stats{}, fmt.Errorf("nicstats: reading statistics: %w", err)
	}
	if !sawHeader {
		return Stats{}, fmt.Errorf("nicstats: empty document: %w", ErrNoStatistics)
	}
	if len(st.Names) == 0 {
		return Stats{}, fmt.Errorf("nicstats: header but no parsable line (%d skipped): %w", st.Skipped, ErrNoStatistics)
	}
	return st, nil
}

// splitStat splits "name: value" at the last ": ". The value must be a
// decimal uint64 because ethtool prints every statistic with %llu.
func splitStat(line string) (string, uint64, bool) {
	i := strings.LastIndex(line, ": ")
	if i <= 0 {
		return "", 0, false
	}
	name := strings.TrimSpace(line[:i])
	if name == "" {
		return "", 0, false
	}
	v, err := strconv.ParseUint(strings.TrimSpace(line[i+2:]), 10, 64)
	if err != nil {
		return "", 0, false
	}
	return name, v, true
}

// DriverInfo is the text of `ethtool -i <if>`.
type DriverInfo struct {
	Driver              string
	Version             string
	FirmwareVersion     string
	ExpansionROMVersion string
	BusInfo             string
	SupportsStatistics  bool
	SupportsTest        bool
	SupportsEEPROM      bool
	SupportsRegDump     bool
	SupportsPrivFlags   bool
}

// ParseDriverInfo parses `ethtool -i` output. Keys never contain ':' but
// values do (bus-info "0000:17:00.0", firmware "28.39.1002 (MT_0000000838)"),
// so each line is split at its first colon. Unknown keys are ignored so a
// newer ethtool does not break replay; a missing "driver" line is an error.
func ParseDriverInfo(r io.Reader) (DriverInfo, error) {
	var (
		di        DriverInfo
		sawDriver bool
	)
	err := eachKeyValue(r, func(n int, key, val string) error {
		var target *bool
		switch key {
		case "driver":
			if val == "" {
				return fmt.Errorf("line %d: empty driver", n)
			}
			di.Driver, sawDriver = val, true
		case "version":
			di.Version = val
		case "firmware-version":
			di.FirmwareVersion = val
		case "expansion-rom-version":
			di.ExpansionROMVersion = val
		case "bus-info":
			di.BusInfo = val
		case "supports-statistics":
			target = &di.SupportsStatistics
		case "supports-test":
			target = &di.SupportsTest
		case "supports-eeprom-access":
			target = &di.SupportsEEPROM
		case "supports-register-dump":
			target = &di.SupportsRegDump
		case "supports-priv-flags":
			target = &di.SupportsPrivFlags
		}
		if target != nil {
			b, err := parseBool(val, "yes", "no")
			if err != nil {
				return fmt.Errorf("line %d: %s: %w", n, key, err)
			}
			*target = b
		}
		return nil
	})
	if err != nil {
		return DriverInfo{}, fmt.Errorf("nicstats: ethtool -i: %w", err)
	}
	if !sawDriver {
		return DriverInfo{}, errors.New("nicstats: ethtool -i: no \"driver:\" line")
	}
	return di, nil
}

// Pause is the text of `ethtool -a <if>` (802.3x link-level pause).
type Pause struct {
	Interface string
	Autoneg   bool
	RX        bool
	TX        bool
	// RXNegotiated/TXNegotiated are only printed when autonegotiation is on
	// and the link partner's abilities are known; nil means "not printed".
	RXNegotiated *bool
	TXNegotiated *bool
	// RXPauseFrames/TXPauseFrames come from `ethtool -I -a` (netlink pause
	// statistics); nil when the "Statistics:" block is absent.
	RXPauseFrames *uint64
	TXPauseFrames *uint64
}

// ParsePause parses `ethtool -a` output from both the ioctl-era and the
// netlink implementation (they differ only in whitespace and in the optional
// "negotiated" and "Statistics:" lines). RX and TX are required: without them
// the document says nothing about pause.
func ParsePause(r io.Reader) (Pause, error) {
	var (
		p              Pause
		sawRX, sawTX   bool
		sawHeader      bool
		onOff          = func(v string) (bool, error) { return parseBool(v, "on", "off") }
		optionalOnOff  = func(v string) (*bool, error) { b, err := onOff(v); return &b, err }
		optionalUint64 = func(v string) (*uint64, error) {
			u, err := strconv.ParseUint(v, 10, 64)
			return &u, err
		}
	)
	err := eachKeyValue(r, func(n int, key, val string) error {
		var err error
		switch {
		case strings.HasPrefix(key, "Pause parameters for "):
			if val != "" {
				return fmt.Errorf("line %d: unexpected text after header", n)
			}
			p.Interface = strings.TrimPrefix(key, "Pause parameters for ")
			sawHeader = true
		case key == "Autonegotiate":
			p.Autoneg, err = onOff(val)
		case key == "RX":
			p.RX, err = onOff(val)
			sawRX = true
		case key == "TX":
			p.TX, err = onOff(val)
			sawTX = true
		case key == "RX negotiated":
			p.RXNegotiated, err = optionalOnOff(val)
		case key == "TX negotiated":
			p.TXNegotiated, err = optionalOnOff(val)
		case key == "rx_pause_frames":
			p.RXPauseFrames, err = optionalUint64(val)
		case key == "tx_pause_frames":
			p.TXPauseFrames, err = optionalUint64(val)
		}
		if err != nil {
			return fmt.Errorf("line %d: %s: %w", n, key, err)
		}
		return nil
	})
	if err != nil {
		return Pause{}, fmt.Errorf("nicstats: ethtool -a: %w", err)
	}
	if !sawHeader || !sawRX || !sawTX {
		return Pause{}, errors.New("nicstats: ethtool -a: need the \"Pause parameters for\" header and RX/TX lines")
	}
	return p, nil
}

// eachKeyValue calls fn for every non-blank line split at its first ':',
// with both halves trimmed. A line without ':' is an error: both -i and -a
// print nothing else.
func eachKeyValue(r io.Reader, fn func(line int, key, val string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1024), maxLine)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			return fmt.Errorf("line %d: no ':' in %q", n, truncate(line))
		}
		if err := fn(n, strings.TrimSpace(key), strings.TrimSpace(val)); err != nil {
			return err
		}
	}
	return sc.Err()
}

func parseBool(v, yes, no string) (bool, error) {
	switch v {
	case yes:
		return true, nil
	case no:
		return false, nil
	}
	return false, fmt.Errorf("want %q or %q, got %q", yes, no, truncate(v))
}

// truncate keeps error messages readable when the input is garbage.
func truncate(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
