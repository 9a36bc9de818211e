package reader

import (
	"bufio"
	"errors"
	"net/netip"
	"strings"
)

// parseIPAddr parses a capture of `ip -br addr` or `ip -o addr` into
// interface -> prefixes.
func parseIPAddr(sc *bufio.Scanner) (map[string][]netip.Prefix, error) {
	out := map[string][]netip.Prefix{}
	lines := 0
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		lines++
		if strings.HasSuffix(fields[0], ":") && len(fields) >= 4 {
			// ip -o addr: "2: ens1f0np0    inet 192.168.100.11/24 brd ..."
			name := strings.TrimSuffix(fields[1], ":")
			name, _, _ = strings.Cut(name, "@")
			if fields[2] == "inet" || fields[2] == "inet6" {
				if p, err := netip.ParsePrefix(fields[3]); err == nil {
					out[name] = append(out[name], p)
				}
			}
			continue
		}
		// ip -br addr: "ens1f0np0  UP  192.168.100.11/24 fe80::1/64"
		name, _, _ := strings.Cut(fields[0], "@")
		if _, ok := out[name]; !ok {
			out[name] = nil
		}
		for _, a := range fields[2:] {
			if p, err := netip.ParsePrefix(a); err == nil {
				out[name] = append(out[name], p)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if lines == 0 {
		return nil, errors.New("no interfaces in address capture")
	}
	return out, nil
}
