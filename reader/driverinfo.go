package reader

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/safchain/ethtool"

	"github.com/roce-exporter/roce_exporter/internal/nicstats"
	"github.com/roce-exporter/roce_exporter/internal/safefile"
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

func newDriverInfoSource(replayDir string) driverInfoSource {
	return driverInfoSource{replayDir: replayDir}
}

func (d *driverInfoSource) info(iface string) (driverInfo, error) {
	if d.replayDir != "" {
		path := filepath.Join(d.replayDir, iface+".driver.txt")
		data, err := safefile.ReadRegular(path, maxReplayBytes)
		if err != nil {
			return driverInfo{}, err
		}
		di, err := nicstats.ParseDriverInfo(bytes.NewReader(data))
		if err != nil {
			return driverInfo{}, fmt.Errorf("%s: %w", path, err)
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
