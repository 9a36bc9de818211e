package reader

import (
	"errors"
	"io/fs"
	"sort"
	"strconv"
	"syscall"

	"github.com/roce-exporter/roce_exporter/node"
)

// readGIDs reads the port's populated GID slots. An empty slot's type and
// netdev read EINVAL: not an error, just nothing there.
func (c *rdmaSource) readGIDs(sc *scan, tp *topoPort) []node.GID {
	dir := joinPath(tp.Dir, "gids")
	names, err := c.r.fs.ReadDirNames(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			sc.readError(node.SourceRDMA, dir, err)
		}
		return nil
	}
	var gids []node.GID
	for _, n := range names {
		idx, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		g, err := readSysfsFile(c.r.fs, joinPath(dir, n))
		if err != nil {
			if !isVanished(err) && !errors.Is(err, syscall.EINVAL) {
				sc.readError(node.SourceRDMA, joinPath(dir, n), err)
			}
			continue
		}
		if node.EmptyGID(g) || !node.ValidGID(g) {
			continue
		}
		typ, err := readSysfsFile(c.r.fs, joinPath(tp.Dir, "gid_attrs", "types", n))
		if err != nil {
			if !errors.Is(err, syscall.EINVAL) && !isVanished(err) {
				sc.readError(node.SourceRDMA, joinPath(tp.Dir, "gid_attrs", "types", n), err)
			}
			continue
		}
		ndev, err := readSysfsFile(c.r.fs, joinPath(tp.Dir, "gid_attrs", "ndevs", n))
		if err != nil && !errors.Is(err, syscall.EINVAL) && !isVanished(err) {
			sc.readError(node.SourceRDMA, joinPath(tp.Dir, "gid_attrs", "ndevs", n), err)
		}
		gids = append(gids, node.GID{Index: idx, GID: g, Type: node.CleanText(typ), Interface: node.CleanText(ndev)})
	}
	sort.Slice(gids, func(i, j int) bool { return gids[i].Index < gids[j].Index })
	return gids
}
