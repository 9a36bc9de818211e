package reader

import (
	"errors"

	"github.com/roce-exporter/roce_exporter/internal/ethnl"
	"github.com/roce-exporter/roce_exporter/internal/nicstats"
)

// kernelSockets are the sockets the sources share, one per kind, each
// opened on first use and kept by the rule of internal/nlconn (a failed
// dial is retried after a back-off, a broken socket redialled). Sources
// run concurrently; both clients serialise their requests, which costs
// little: the kernel runs every ethtool request under RTNL anyway, and a
// request waits at most for another's deadline (nlconn.DefaultTimeout).
// DCB netlink (rtnetlink) and devlink have one user each and keep their
// clients in their source.
type kernelSockets struct {
	// ethtoolNetlink: the phy source (FEC_GET, LINKSTATE_GET) and the
	// transceiver source (MODULE_EEPROM_GET).
	ethtoolNetlink *ethnl.Client
	// ethtoolIoctl: the ethtool source (statistics, pause), the netdev
	// source (driver info) and the transceiver source (the module EEPROM
	// where netlink has no module access).
	ethtoolIoctl *nicstats.Reader
}

func newKernelSockets(opts Options) *kernelSockets {
	return &kernelSockets{ethtoolNetlink: ethnl.New(opts.ethtoolNetlink), ethtoolIoctl: nicstats.NewReader()}
}

func (k *kernelSockets) close() error {
	return errors.Join(k.ethtoolNetlink.Close(), k.ethtoolIoctl.Close())
}
