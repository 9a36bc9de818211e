package probes

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// NodeInfo is what the runners need to know about the local RDMA devices.
type NodeInfo interface {
	// GIDIndex returns the index of the device's RoCE v2 GID carrying ip.
	GIDIndex(device string, ip netip.Addr) (int, bool)
	// PortRateBitsPerSecond is port 1's signalling rate.
	PortRateBitsPerSecond(device string) (float64, bool)
	// PortUtilization measures how much of the port's rate the existing
	// traffic uses, over window.
	PortUtilization(ctx context.Context, device string, window time.Duration) (float64, error)
}

// SysfsNode reads NodeInfo from sysfs (a live /sys or a fixture).
type SysfsNode struct{ Root string }

func (n SysfsNode) port(device string, parts ...string) string {
	return filepath.Join(append([]string{n.Root, "class", "infiniband", device, "ports", "1"}, parts...)...)
}

func readTrim(path string) (string, error) {
	b, err := os.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}

// GIDIndex scans the GID table for a RoCE v2 entry carrying ip.
func (n SysfsNode) GIDIndex(device string, ip netip.Addr) (int, bool) {
	names, err := os.ReadDir(n.port(device, "gids"))
	if err != nil {
		return 0, false
	}
	var idx []int
	for _, e := range names {
		if i, err := strconv.Atoi(e.Name()); err == nil {
			idx = append(idx, i)
		}
	}
	sort.Ints(idx)
	for _, i := range idx {
		g, err := readTrim(n.port(device, "gids", strconv.Itoa(i)))
		if err != nil {
			continue
		}
		a, err := netip.ParseAddr(g)
		if err != nil || a.Unmap() != ip {
			continue
		}
		if t, err := readTrim(n.port(device, "gid_attrs", "types", strconv.Itoa(i))); err == nil && t == "RoCE v2" {
			return i, true
		}
	}
	return 0, false
}

// PortRateBitsPerSecond parses ports/1/rate.
func (n SysfsNode) PortRateBitsPerSecond(device string) (float64, bool) {
	v, err := readTrim(n.port(device, "rate"))
	if err != nil {
		return 0, false
	}
	num, _, _ := strings.Cut(v, " ")
	g, err := strconv.ParseFloat(num, 64)
	if err != nil || !(g > 0) || g > 1e6 { // also rejects NaN
		return 0, false
	}
	return g * 1e9, true
}

func (n SysfsNode) dataBytes(device string) (uint64, uint64, error) {
	read := func(name string) (uint64, error) {
		v, err := readTrim(n.port(device, "counters", name))
		if err != nil {
			return 0, err
		}
		return strconv.ParseUint(v, 10, 64)
	}
	rx, err := read("port_rcv_data")
	if err != nil {
		return 0, 0, err
	}
	tx, err := read("port_xmit_data")
	if err != nil {
		return 0, 0, err
	}
	// PMA data counters count 4-byte words.
	return rx * 4, tx * 4, nil
}

// PortUtilization samples the RDMA data counters twice.
func (n SysfsNode) PortUtilization(ctx context.Context, device string, window time.Duration) (float64, error) {
	rate, ok := n.PortRateBitsPerSecond(device)
	if !ok {
		return 0, fmt.Errorf("%s: port rate unknown", device)
	}
	rx0, tx0, err := n.dataBytes(device)
	if err != nil {
		return 0, err
	}
	begin := time.Now()
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(window):
	}
	rx1, tx1, err := n.dataBytes(device)
	if err != nil {
		return 0, err
	}
	elapsed := time.Since(begin).Seconds()
	busiest := max(float64(rx1-rx0), float64(tx1-tx0))
	if rx1 < rx0 || tx1 < tx0 {
		return 0, nil // counter reset: no evidence of load
	}
	return busiest / elapsed / (rate / 8), nil
}
