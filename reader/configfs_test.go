package reader

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

func TestRDMACMGroupsCreatedForSelectedDevicesAndOnlyThoseRemoved(t *testing.T) {
	root := t.TempDir()
	base := filepath.Join(root, "kernel", "config", "rdma_cm")
	class := filepath.Join(root, "class", "infiniband")
	for _, d := range []string{filepath.Join(base, "mlx5_1"), filepath.Join(class, "mlx5_0"), filepath.Join(class, "mlx5_1"), filepath.Join(class, "mlx5_2")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// mlx5_1's group is the operator's; mlx5_2 is excluded.
	selection := &Reader{opts: Options{DeviceExclude: regexp.MustCompile("^mlx5_2$")}}
	created := createRDMACMGroups(base, class, selection.deviceSelected)
	if want := []string{filepath.Join(base, "mlx5_0")}; !slices.Equal(created, want) {
		t.Fatalf("created %v, want %v", created, want)
	}
	if _, err := os.Stat(filepath.Join(base, "mlx5_2")); err == nil {
		t.Error("a group made for an excluded device")
	}
	removeDirs(created)
	if _, err := os.Stat(filepath.Join(base, "mlx5_0")); !os.IsNotExist(err) {
		t.Errorf("the group it created is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(base, "mlx5_1")); err != nil {
		t.Errorf("the operator's group was removed: %v", err)
	}

	// Without rdma_cm's configfs directory nothing is made.
	if got := createRDMACMGroups(filepath.Join(root, "absent"), class, selection.deviceSelected); got != nil {
		t.Errorf("created %v without the rdma_cm directory", got)
	}
}

// A copied sysfs tree is another machine: its configfs is never touched,
// even as root.
func TestRDMACMConfigfsOnlyOnTheLiveSys(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{filepath.Join(root, "kernel", "config", "rdma_cm"), filepath.Join(root, "class", "infiniband", "mlx5_0")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	closeConfigfs := OpenRDMACMConfigfs(Options{SysPath: root})
	defer closeConfigfs()
	if _, err := os.Stat(filepath.Join(root, "kernel", "config", "rdma_cm", "mlx5_0")); err == nil {
		t.Error("a group made in a copied tree")
	}
}
