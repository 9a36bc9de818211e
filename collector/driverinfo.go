package collector

import (
	"bufio"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/safchain/ethtool"

	"github.com/roce-exporter/roce_exporter/internal/nicstats"
)

// driverInfo is what `ethtool -i` reports.
type driverInfo struct {
	Driver, Version, FirmwareVersion, BusInfo string
}

// driverInfoSource answers `ethtool -i` from the kernel (one long-lived
// ioctl socket) or from recorded text in the replay directory.
type driverInfoSource struct {
	replayDir string
	mu        sync.Mutex
	handle    *ethtool.Ethtool
	dialErr   error
}

func newDriverInfoSource(cfg *Config) driverInfoSource {
	return driverInfoSource{replayDir: cfg.Ethtool.ReplayDir}
}

func (d *driverInfoSource) info(iface string) (driverInfo, error) {
	if d.replayDir != "" {
		f, err := os.Open(filepath.Join(d.replayDir, iface+".driver.txt"))
		if err != nil {
			return driverInfo{}, err
		}
		defer f.Close()
		di, err := nicstats.ParseDriverInfo(f)
		if err != nil {
			return driverInfo{}, fmt.Errorf("%s: %w", f.Name(), err)
		}
		return driverInfo{Driver: di.Driver, Version: di.Version, FirmwareVersion: di.FirmwareVersion, BusInfo: di.BusInfo}, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.handle == nil && d.dialErr == nil {
		d.handle, d.dialErr = ethtool.NewEthtool()
	}
	if d.dialErr != nil {
		return driverInfo{}, d.dialErr
	}
	di, err := d.handle.DriverInfo(iface)
	if err != nil {
		return driverInfo{}, err
	}
	return driverInfo{Driver: di.Driver, Version: di.Version, FirmwareVersion: di.FwVersion, BusInfo: di.BusInfo}, nil
}

func (d *driverInfoSource) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.handle != nil {
		d.handle.Close()
		d.handle = nil
	}
	return nil
}

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
