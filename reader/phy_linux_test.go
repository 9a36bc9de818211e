//go:build linux

package reader

import (
	"regexp"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/node"
)

// Against this machine's kernel: the loopback's link state comes over
// ethtool netlink; it has no FEC and no module, which leaves those absent
// (not zero, not an error).
func TestLiveLoopback(t *testing.T) {
	o := Options{SysPath: "/sys", Timeout: 5 * time.Second, Sources: []string{node.SourcePHY, node.SourceTransceiver},
		NetdevInclude: regexp.MustCompile("^lo$")}
	r := newTestReader(t, o)
	if !r.live() {
		t.Skip("/sys is not this kernel's sysfs")
	}
	res := r.Read()
	p := res.Snapshot.PHY["lo"]
	if p == nil {
		t.Skipf("no link state for lo (kernel without ethtool netlink?): %+v", res.Sources)
	}
	if !p.LinkKnown || !p.Link || p.FECCorrected != nil || p.ExtState != "" {
		t.Errorf("lo = %+v", p)
	}
	if res.Snapshot.Sources[node.SourceTransceiver] != node.SourceAbsent || res.Snapshot.Transceivers != nil {
		t.Errorf("transceiver source %s %v", res.Snapshot.Sources[node.SourceTransceiver], res.Snapshot.Transceivers)
	}
	if n := r.ReadErrors(node.SourcePHY) + r.ReadErrors(node.SourceTransceiver); n != 0 {
		t.Errorf("%d read errors for a port without FEC or module", n)
	}
}
