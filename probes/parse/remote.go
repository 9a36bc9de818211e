package parse

import (
	"bufio"
	"bytes"
	"net/netip"
	"strconv"
	"strings"
)

// RemoteGIDAddress finds the peer's IPv4 address in perftest output: after
// the out-of-band exchange both sides print
//
//	remote address: LID 0000 QPN 0x0109 PSN 0x7ba2b4 RKey 0x1fff00 VAddr 0x...
//	GID: 00:00:00:00:00:00:00:00:00:00:255:255:192:168:100:12
//
// with the GID's bytes in decimal. A responder uses it to attribute a test
// to the peer that ran it.
func RemoteGIDAddress(out []byte) (netip.Addr, bool) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	afterRemote := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.Contains(line, "remote address"):
			afterRemote = true
			// Some versions print the GID on the same line.
			if i := strings.Index(line, "GID:"); i >= 0 {
				return parseDecimalGID(line[i+4:])
			}
		case afterRemote && strings.HasPrefix(line, "GID:"):
			return parseDecimalGID(line[4:])
		case afterRemote && line != "":
			afterRemote = false
		}
	}
	return netip.Addr{}, false
}

func parseDecimalGID(s string) (netip.Addr, bool) {
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) != 16 {
		return netip.Addr{}, false
	}
	var b [16]byte
	for i, p := range parts {
		v, err := strconv.ParseUint(strings.TrimSpace(p), 10, 8)
		if err != nil {
			return netip.Addr{}, false
		}
		b[i] = byte(v)
	}
	a := netip.AddrFrom16(b)
	if !a.Is4In6() {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}
