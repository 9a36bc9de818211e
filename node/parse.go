package node

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrNotNumeric marks a value that exists but is not a number: garbage from
// a broken driver.
var ErrNotNumeric = errors.New("not a number")

// ErrNotSupported marks a counter file the device cannot fill: the kernel's
// show_pma_counter prints "N/A (no PMA)" when the device has no performance
// management agent (iWARP devices such as i40iw, whose every counters/ file
// reads so on 4.x kernels) or its PMA does not answer (mlx4 virtual functions
// in cloud VMs, node_exporter#966). It is a property of the device, not a
// failed read: such a file yields no value and is not a read error.
var ErrNotSupported = errors.New("not supported by the device")

// pmaNotAvailable is what drivers/infiniband/core/sysfs.c prints for a PMA
// counter it cannot get.
var pmaNotAvailable = []byte("N/A (no PMA)")

// ParseCounter parses a sysfs counter: decimal digits with surrounding white
// space. It never turns an error into 0. "N/A (no PMA)" is ErrNotSupported;
// anything else that is not a number is ErrNotNumeric.
func ParseCounter(b []byte) (uint64, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return 0, fmt.Errorf("empty value: %w", ErrNotNumeric)
	}
	if bytes.Equal(b, pmaNotAvailable) {
		return 0, fmt.Errorf("%q: %w", b, ErrNotSupported)
	}
	var v uint64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, fmt.Errorf("%q: %w", truncate(string(b), 40), ErrNotNumeric)
		}
		d := uint64(ch - '0')
		if v > (^uint64(0)-d)/10 {
			return 0, fmt.Errorf("%q overflows 64 bits: %w", truncate(string(b), 40), ErrNotNumeric)
		}
		v = v*10 + d
	}
	return v, nil
}

// ParseState parses a logical port state file (ports/<n>/state): the
// kernel prints "%d: %s", "4: ACTIVE". A bare name ("DOWN", "ACTIVE", as
// hand-made fixtures of other projects have it) maps to the same number.
func ParseState(s string) (int, string, error) {
	return parseIDState(s, portStateNames, "state")
}

// ParsePhysState parses a physical port state file (ports/<n>/phys_state):
// "5: LinkUp", or a bare name ("Disabled", "LinkUp", "LINK_UP").
func ParsePhysState(s string) (int, string, error) {
	return parseIDState(s, physStateNames, "phys_state")
}

// portStateNames and physStateNames are the kernel's spellings, indexed by
// number: ib_port_state_to_str (include/rdma/ib_verbs.h) and
// phys_state_to_str (drivers/infiniband/core/sysfs.c).
var (
	portStateNames = []string{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}
	physStateNames = []string{"", "Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp", "LinkErrorRecovery", "Phy Test"}
)

// ParseNodeType parses node_type, "1: CA" or "4: RNIC".
func ParseNodeType(s string) (int, string, error) {
	return parseIDState(s, nodeTypeNames, "node_type")
}

// nodeTypeNames are node_type_string's (drivers/infiniband/core/sysfs.c).
var nodeTypeNames = []string{"", "CA", "switch", "router", "RNIC", "usNIC", "usNIC UDP", "unspecified"}

func parseIDState(s string, names []string, what string) (int, string, error) {
	id, text, ok := strings.Cut(s, ":")
	if !ok {
		// No number: accept a known name, compared without case, spaces
		// or underscores ("LINK_UP" is "LinkUp") and without a trailing
		// parenthesised note.
		key := stateKey(s)
		for n, name := range names {
			if name != "" && key == stateKey(name) {
				return n, name, nil
			}
		}
		return 0, "", fmt.Errorf("%s %q: neither \"<n>: <name>\" nor a known name", what, truncate(s, 40))
	}
	n, err := strconv.Atoi(strings.TrimSpace(id))
	if err != nil || n < 0 {
		return 0, "", fmt.Errorf("%s %q: bad number", what, truncate(s, 40))
	}
	return n, strings.TrimSpace(text), nil
}

func stateKey(s string) string {
	if i := strings.IndexByte(s, '('); i >= 0 {
		s = s[:i]
	}
	return strings.ToLower(strings.NewReplacer(" ", "", "_", "", "\t", "").Replace(s))
}

// ParseRate parses the port rate, "400 Gb/sec (4X NDR)" or "2.5 Gb/sec (1X
// SDR)", into bits per second. Kernels before rate_show learnt every speed
// printed "0 GB/sec" for a port with neither speed nor width yet.
func ParseRate(s string) (float64, error) {
	if strings.TrimSpace(s) == "0 GB/sec" {
		return 0, nil
	}
	num, rest, ok := strings.Cut(strings.TrimSpace(s), " ")
	if !ok || !strings.HasPrefix(strings.TrimSpace(rest), "Gb/sec") {
		return 0, fmt.Errorf("rate %q: want \"<n> Gb/sec (...)\"", truncate(s, 40))
	}
	g, err := strconv.ParseFloat(num, 64)
	// !(g >= 0) also rejects NaN, which ParseFloat accepts.
	if err != nil || !(g >= 0) || g > 1e6 {
		return 0, fmt.Errorf("rate %q: bad number", truncate(s, 40))
	}
	return g * 1e9, nil
}

// ValidGID accepts the kernel's %pI6 form of a GID: 8 groups of 4 lower-case
// hex digits.
func ValidGID(g string) bool {
	if len(g) != 39 {
		return false
	}
	for i := 0; i < len(g); i++ {
		ch := g[i]
		if i%5 == 4 {
			if ch != ':' {
				return false
			}
			continue
		}
		if !(ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'f') {
			return false
		}
	}
	return true
}

// EmptyGID reports the GID table's placeholder values: an unused slot reads
// all zeros, and a slot being torn down the bare link-local prefix.
func EmptyGID(g string) bool {
	return g == "0000:0000:0000:0000:0000:0000:0000:0000" || g == "fe80:0000:0000:0000:0000:0000:0000:0000"
}

// CleanText keeps text read from the kernel printable and bounded: sysfs text
// from a broken driver must not carry invalid UTF-8, control characters or
// megabytes into names and messages.
func CleanText(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 128 {
		s = s[:128]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == 0xfffd {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
}

// truncate shortens s to n bytes for an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ValidUTF8 returns s with every byte that is not part of valid UTF-8
// written as the four characters \xNN, for text a person reads (a message,
// a log line). Linux allows any bytes in interface and device names; text
// must be UTF-8, and escaping keeps the name recognisable where dropping or
// replacing would not. Two names can read alike (a byte 0xff and the text
// `\xff`): where a name identifies something, use LabelUTF8.
func ValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return escapeUTF8(s, false)
}

// LabelUTF8 is the valid UTF-8 form of a name that identifies something (a
// label value, a subject): one to one, so that two interfaces whose names
// differ never read the same. A name that is valid UTF-8 and holds no `\x`
// is itself, which is every name in practice; in any other a backslash is
// written `\\` and a byte that is not UTF-8 `\xNN`. A result that holds `\x`
// therefore always came from such a name, whose escapes decode unambiguously.
func LabelUTF8(s string) string {
	if utf8.ValidString(s) && !strings.Contains(s, `\x`) {
		return s
	}
	return escapeUTF8(s, true)
}

func escapeUTF8(s string, backslash bool) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\' && backslash:
			b.WriteString(`\\`)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
