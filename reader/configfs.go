package reader

import (
	"os"
	"path/filepath"
)

// OpenRDMACMConfigfs makes the rdma_cm configfs group of every RDMA device
// o selects, as mlnx-tools' cma_roce_mode does, so that the reads that follow
// see each port's default_roce_mode and default_roce_tos; the function it
// returns removes the groups again. This is the one place the package changes
// the system, and only when asked (the doctor): only as root, only on this
// kernel's /sys (configfs belongs to the running kernel, not to a copied
// tree), and it removes only the groups it created, so the caller leaves no
// trace and an operator's own groups stay.
func OpenRDMACMConfigfs(o Options) (closeConfigfs func()) {
	if os.Geteuid() != 0 || filepath.Clean(o.SysPath) != "/sys" {
		return func() {}
	}
	selection := &Reader{opts: o}
	created := createRDMACMGroups(filepath.Join(o.SysPath, "kernel", "config", "rdma_cm"), filepath.Join(o.SysPath, "class", "infiniband"), selection.deviceSelected)
	return func() { removeDirs(created) }
}

// createRDMACMGroups makes base/<device> for every selected device under
// classDir and returns the directories it created (not those that existed).
func createRDMACMGroups(base, classDir string, selected func(string) bool) []string {
	if _, err := os.Stat(base); err != nil {
		return nil // rdma_cm not loaded, or configfs not mounted
	}
	devices, err := os.ReadDir(classDir)
	if err != nil {
		return nil
	}
	var created []string
	for _, d := range devices {
		if !selected(d.Name()) {
			continue
		}
		dir := filepath.Join(base, d.Name())
		if err := os.Mkdir(dir, 0o755); err == nil {
			created = append(created, dir)
		}
	}
	return created
}

func removeDirs(dirs []string) {
	for _, dir := range dirs {
		os.Remove(dir)
	}
}
