package reader

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/roce-exporter/roce_exporter/internal/nicstats"
	"github.com/roce-exporter/roce_exporter/internal/safefile"
)

// driverInfo is what `ethtool -i` reports.
type driverInfo struct {
	Driver, Version, FirmwareVersion, BusInfo string
}

// driverInfoSource answers `ethtool -i` from the kernel (the Reader's
// shared ioctl socket) or from recorded text in the replay directory.
type driverInfoSource struct {
	replayDir string
	ioctl     *nicstats.Reader
}

func newDriverInfoSource(r *Reader) driverInfoSource {
	return driverInfoSource{replayDir: r.opts.ReplayDir, ioctl: r.kernel.ethtoolIoctl}
}

func (d *driverInfoSource) info(iface string) (driverInfo, error) {
	var di nicstats.DriverInfo
	if d.replayDir != "" {
		path := filepath.Join(d.replayDir, iface+".driver.txt")
		data, err := safefile.ReadRegular(path, maxReplayBytes)
		if err != nil {
			return driverInfo{}, err
		}
		if di, err = nicstats.ParseDriverInfo(bytes.NewReader(data)); err != nil {
			return driverInfo{}, fmt.Errorf("%s: %w", path, err)
		}
	} else {
		var err error
		if di, err = d.ioctl.DriverInfo(iface); err != nil {
			return driverInfo{}, err
		}
	}
	return driverInfo{Driver: di.Driver, Version: di.Version, FirmwareVersion: di.FirmwareVersion, BusInfo: di.BusInfo}, nil
}

// close leaves the shared socket to the Reader.
func (d *driverInfoSource) close() error { return nil }
