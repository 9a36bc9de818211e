package reader

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/roce-exporter/roce_exporter/node"
)

// verbsFS serves a fixture's sysfs through the reader's seam, failing the
// ibdev files it names with an error and counting the ones it serves.
type verbsFS struct {
	OSFS
	fail   map[string]error // path suffix → error
	listed int
}

func (f *verbsFS) OpenAttr(path string) (AttrFile, error) {
	for suffix, err := range f.fail {
		if strings.HasSuffix(path, suffix) {
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
	}
	return f.OSFS.OpenAttr(path)
}

func (f *verbsFS) ReadDirNames(path string) ([]string, error) {
	if strings.HasSuffix(path, "/class/infiniband_verbs") {
		f.listed++
	}
	return f.OSFS.ReadDirNames(path)
}

// Each device's uverbs node comes from sysfs (the class entry whose ibdev
// names it) read through the reader's filesystem seam, and is present
// when it exists under the /dev root.
func TestVerbsDevicesThroughTheReader(t *testing.T) {
	fsys := &verbsFS{fail: map[string]error{"/uverbs5/ibdev": syscall.EIO}}
	o := fixtureOptions("mlx5-8x400g-healthy", node.SourceRDMA)
	o.FS = fsys
	r := newTestReader(t, o)
	res := r.Read()
	if len(res.Snapshot.Devices) != 8 {
		t.Fatalf("%d devices: %+v", len(res.Snapshot.Devices), res.Sources)
	}
	if fsys.listed != 1 {
		t.Errorf("infiniband_verbs listed %d times for 8 devices, want once", fsys.listed)
	}
	dev := filepath.Join(o.DevPath, "infiniband")
	missing := 0
	for _, d := range res.Snapshot.Devices {
		if len(d.VerbsDevices) == 0 {
			missing++ // the one whose ibdev failed
			continue
		}
		if len(d.VerbsDevices) != 1 || filepath.Dir(d.VerbsDevices[0]) != dev || !slices.Equal(d.VerbsDevices, d.VerbsPresent) {
			t.Errorf("%s: expected %v, present %v", d.Name, d.VerbsDevices, d.VerbsPresent)
		}
	}
	if missing != 1 {
		t.Errorf("%d devices without a uverbs node, want the one whose ibdev failed", missing)
	}
	if n := r.ReadErrors(node.SourceRDMA); n != 1 {
		t.Errorf("%d read errors, want 1 (the EIO on uverbs5/ibdev)", n)
	}
}

// uverbs3's ibdev names mlx5_3 in the fixture; with no /dev/infiniband (a
// container without the device nodes) it is expected but not present.
func TestVerbsDevicesWithoutDevNodes(t *testing.T) {
	o := fixtureOptions("mlx5-8x400g-healthy", node.SourceRDMA)
	o.DevPath = t.TempDir()
	r := newTestReader(t, o)
	for _, d := range r.Read().Snapshot.Devices {
		if d.Name != "mlx5_3" {
			continue
		}
		if want := filepath.Join(o.DevPath, "infiniband", "uverbs3"); !slices.Equal(d.VerbsDevices, []string{want}) || len(d.VerbsPresent) != 0 {
			t.Errorf("mlx5_3: expected %v, present %v; want [%s], none", d.VerbsDevices, d.VerbsPresent, want)
		}
		return
	}
	t.Fatal("no mlx5_3")
}
