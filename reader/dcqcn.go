package reader

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/roce-exporter/roce_exporter/node"
)

// readDCQCN reads an interface's DCQCN parameters (node.DCQCNParams): from
// MLNX_OFED's ecn/roce_rp and ecn/roce_np files, else from upstream mlx5's
// debugfs cc_params of its PCI function. Both are settings the driver asks
// the firmware for at every read, so they are read with the ECN enables, on
// the refresh interval. cnpDSCP and cnpPrio are roce_np's two files the ECN
// read already took. Nil when neither place shows a parameter: unknown, not
// default.
func (c *dcbSource) readDCQCN(sc *scan, iface string, cnpDSCP, cnpPrio *int) *node.DCQCNParams {
	p := &node.DCQCNParams{Source: node.DCQCNSourceSysfs, Values: map[string]uint64{}}
	for i, name := range node.DCQCNParamNames {
		role := "roce_rp"
		if i >= node.DCQCNReactionPointParams {
			role = "roce_np"
		}
		switch name {
		case "cnp_dscp":
			if cnpDSCP != nil {
				p.Values[name] = uint64(*cnpDSCP)
			}
			continue
		case "cnp_802p_prio":
			if cnpPrio != nil {
				p.Values[name] = uint64(*cnpPrio)
			}
			continue
		}
		if v, ok := c.readSetting(sc, c.r.sys("class", "net", iface, "ecn", role, name), false); ok {
			p.Values[name] = v
		}
	}
	if len(p.Values) > 0 {
		return p
	}
	return c.readCCParams(sc, iface)
}

// readCCParams reads upstream mlx5's /sys/kernel/debug/mlx5/<bdf>/cc_params
// of the interface's PCI function. debugfs is often not mounted, and its
// files are root's: either way the parameters are unknown, and that is not an
// error of the source.
func (c *dcbSource) readCCParams(sc *scan, iface string) *node.DCQCNParams {
	pci, err := c.r.fs.Realpath(c.r.sys("class", "net", iface, "device"))
	if err != nil {
		return nil
	}
	bdf := filepath.Base(pci)
	if !node.BDF.MatchString(bdf) {
		return nil
	}
	dir := c.r.sys("kernel", "debug", "mlx5", bdf, "cc_params")
	p := &node.DCQCNParams{Source: node.DCQCNSourceDebugfs, Values: map[string]uint64{}}
	for _, name := range node.DCQCNParamNames {
		if v, ok := c.readSetting(sc, joinPath(dir, node.DebugfsCCParamFile(name)), true); ok {
			p.Values[name] = v
		}
	}
	if len(p.Values) == 0 {
		return nil
	}
	return p
}

// readSetting reads one decimal setting file. A file that does not exist is
// not an error; with quietDenied, neither is one this process may not read
// (debugfs as a user).
func (c *dcbSource) readSetting(sc *scan, path string, quietDenied bool) (uint64, bool) {
	text, err := readSysfsFile(c.r.fs, path)
	if err != nil {
		switch {
		case isVanished(err):
		case quietDenied && errors.Is(err, fs.ErrPermission):
			c.r.logger.Debug("DCQCN parameter not readable (debugfs is root's)", "path", path, "err", err)
		default:
			sc.readError(node.SourceDCB, path, err)
		}
		return 0, false
	}
	v, err := parseCounterAt(path, []byte(text))
	if err != nil {
		sc.readError(node.SourceDCB, path, err)
		return 0, false
	}
	return v, true
}
