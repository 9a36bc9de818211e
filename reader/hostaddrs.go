package reader

import (
	"bufio"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
)

// HostAddresses returns the addresses of every interface of the node o
// reads, not only those behind RDMA ports (plan init drafts the management
// address from them): from the replay directory's ip-addr.txt when there is
// one, from this machine's kernel when o reads its live sysfs, else none
// (false): a copied tree must not take this machine's addresses.
func HostAddresses(o Options) (map[string][]netip.Prefix, bool) {
	if o.ReplayDir != "" {
		f, err := os.Open(filepath.Join(o.ReplayDir, "ip-addr.txt"))
		if err != nil {
			return nil, false
		}
		defer f.Close()
		all, err := parseIPAddr(bufio.NewScanner(f))
		return all, err == nil
	}
	if !isLiveSysfs(sysPathOf(o)) {
		return nil, false
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, false
	}
	out := map[string][]netip.Prefix{}
	for _, ifi := range ifaces {
		addrs, err := ifi.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				out[ifi.Name] = append(out[ifi.Name], p)
			}
		}
	}
	return out, true
}

// DefaultRouteInterface names the interface of the IPv4 default route
// (/proc/net/route under o.ProcPath, or /proc on a live sysfs); "" when it
// cannot be known.
func DefaultRouteInterface(o Options) string {
	root := o.ProcPath
	if root == "" {
		if !isLiveSysfs(sysPathOf(o)) {
			return ""
		}
		root = "/proc"
	}
	raw, err := os.ReadFile(filepath.Join(root, "net", "route"))
	if err != nil {
		return ""
	}
	return defaultRouteInterface(string(raw))
}

// defaultRouteInterface reads /proc/net/route: a tab-separated table whose
// default route has destination and mask 00000000; the lowest metric wins.
func defaultRouteInterface(table string) string {
	best, bestMetric := "", -1
	for i, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 8 || f[1] != "00000000" || f[7] != "00000000" {
			continue
		}
		metric := 0
		for _, c := range f[6] {
			if c < '0' || c > '9' {
				metric = -1
				break
			}
			metric = metric*10 + int(c-'0')
		}
		if metric >= 0 && (bestMetric < 0 || metric < bestMetric) {
			best, bestMetric = f[0], metric
		}
	}
	return best
}

func sysPathOf(o Options) string {
	if o.SysPath == "" {
		return "/sys"
	}
	return o.SysPath
}
