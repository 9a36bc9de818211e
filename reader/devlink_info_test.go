package reader

import (
	"os"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/node"
)

func readCapture(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Text captures replay like JSON ones: `devlink health show` without -j
// (real mlx5 text) and `devlink dev info` (real mlx5 text), the info read
// once per refresh interval.
func TestDevlinkTextAndInfoReplay(t *testing.T) {
	o := fixtureOptions("mlx5-8x400g-healthy", node.SourceDevlink)
	o.ReplayDir = replayCopy(t, map[string]string{
		devlinkTextReplayFile: readCapture(t, "../internal/devlinknl/testdata/health-text-mlx5-vnic-ports.txt"),
		devlinkInfoTextFile:   readCapture(t, "../internal/devlinknl/testdata/info-text-mlx5-cx7.txt"),
	})
	o.Refresh = time.Hour
	r := newTestReader(t, o)
	res := r.Read()
	if st := res.Snapshot.Sources[node.SourceDevlink]; st != node.SourceOK {
		t.Fatalf("status %s: %v", st, res.Sources)
	}
	if n := len(res.Snapshot.HealthReporters); n != 10 {
		t.Errorf("%d reporters from the text capture, want 10", n)
	}
	infos := res.Snapshot.DevlinkInfo
	if len(infos) != 2 {
		t.Fatalf("dev info %+v, want the two PCI functions (auxiliary instances have no versions)", infos)
	}
	i := res.Snapshot.DevlinkInfoOfPCI("0000:08:00.1")
	if i == nil || i.Handle != "pci/0000:08:00.1" || i.Driver != "mlx5_core" || i.Fixed["fw.psid"] != "MT_0000000894" {
		t.Fatalf("0000:08:00.1: %+v", i)
	}
	if c, v := i.Firmware(); c != "fw" || v != "28.41.1000" {
		t.Errorf("firmware %s %s", c, v)
	}
	// A changed capture is not read again before the refresh interval.
	os.WriteFile(o.ReplayDir+"/"+devlinkInfoTextFile, []byte("garbage\n"), 0o644)
	if got := r.Read().Snapshot.DevlinkInfo; len(got) != 2 {
		t.Errorf("info read again before the interval: %+v", got)
	}
	if n := r.ReadErrors(node.SourceDevlink); n != 0 {
		t.Errorf("%d read errors", n)
	}
}

// A dev info capture that does not parse is a read error; the health
// reporters are still reported.
func TestDevlinkInfoBrokenKeepsReporters(t *testing.T) {
	o := fixtureOptions("mlx5-8x400g-healthy", node.SourceDevlink)
	o.ReplayDir = replayCopy(t, map[string]string{
		devlinkReplayFile:     `{"health":{"pci/0000:18:00.0":[{"reporter":"fw","state":"healthy","error":0,"recover":0}]}}`,
		devlinkInfoReplayFile: readCapture(t, "../internal/devlinknl/testdata/info-text-mlx5-kernel-answers.txt"),
	})
	r := newTestReader(t, o)
	res := r.Read()
	if len(res.Snapshot.HealthReporters) != 1 || res.Snapshot.DevlinkInfo != nil {
		t.Errorf("reporters %v, info %v", res.Snapshot.HealthReporters, res.Snapshot.DevlinkInfo)
	}
	if n := r.ReadErrors(node.SourceDevlink); n != 1 {
		t.Errorf("%d read errors, want 1", n)
	}
}
