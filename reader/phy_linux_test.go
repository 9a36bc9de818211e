//go:build linux

package reader

import (
	"regexp"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mdlayher/genetlink"

	"github.com/roce-exporter/roce_exporter/internal/nlconn"
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

// flakyGenetlink is an ethtool netlink configuration whose first dial fails
// (EMFILE, as at a start-up short of descriptors), on a clock the test
// moves.
type flakyGenetlink struct {
	dials atomic.Int32
	now   atomic.Int64
}

func (f *flakyGenetlink) config() nlconn.FamilyConfig {
	f.now.Store(time.Unix(1_700_000_000, 0).UnixNano())
	return nlconn.FamilyConfig{
		Retry: nlconn.Policy{Now: func() time.Time { return time.Unix(0, f.now.Load()) }},
		Dial: func() (*genetlink.Conn, error) {
			if f.dials.Add(1) == 1 {
				return nil, syscall.EMFILE
			}
			return genetlink.Dial(nil)
		},
	}
}

func (f *flakyGenetlink) advance(d time.Duration) { f.now.Add(int64(d)) }

// flakyReader reads source for lo from this kernel through a flaky ethtool
// netlink socket.
func flakyReader(t *testing.T, source string) (*Reader, *flakyGenetlink) {
	f := &flakyGenetlink{}
	o := Options{SysPath: "/sys", Timeout: 5 * time.Second, Sources: []string{source},
		NetdevInclude: regexp.MustCompile("^lo$"), ethtoolNetlink: f.config()}
	r := newTestReader(t, o)
	if !r.live() {
		t.Skip("/sys is not this kernel's sysfs")
	}
	return r, f
}

// The phy source recovers from a failed first dial of the ethtool netlink
// socket once the back-off has passed; it used to keep that first error
// until the exporter restarted.
func TestPHYRecoversAfterFailedFirstDial(t *testing.T) {
	r, f := flakyReader(t, node.SourcePHY)
	if p := r.Read().Snapshot.PHY["lo"]; p != nil || f.dials.Load() != 1 {
		t.Fatalf("first read, its dial failing: lo = %+v, %d dials", p, f.dials.Load())
	}
	if r.ReadErrors(node.SourcePHY) == 0 {
		t.Error("the failed dial was not counted as a read error")
	}
	r.Read()
	if n := f.dials.Load(); n != 1 {
		t.Fatalf("%d dials within the back-off, want 1", n)
	}
	f.advance(nlconn.FirstWait)
	res := r.Read()
	p := res.Snapshot.PHY["lo"]
	if p == nil {
		t.Fatalf("no link state for lo after the back-off: %+v (%d dials)", res.Sources, f.dials.Load())
	}
	if !p.LinkKnown || !p.Link {
		t.Errorf("lo = %+v", p)
	}
}

// The transceiver source asks ethtool netlink again after a failed first
// dial (lo has no module: the ioctl fallback answers EOPNOTSUPP either
// way, so the dial is what shows it); it used to fall back to the ioctl,
// which reads no paged CMIS memory, until the exporter restarted.
func TestTransceiverRedialsAfterFailedFirstDial(t *testing.T) {
	r, f := flakyReader(t, node.SourceTransceiver)
	r.Read()
	if n := f.dials.Load(); n != 1 {
		t.Fatalf("%d dials in the first read, want 1", n)
	}
	f.advance(nlconn.FirstWait)
	res := r.Read()
	if n := f.dials.Load(); n != 2 {
		t.Fatalf("%d dials after the back-off, want 2: the source gave up on netlink", n)
	}
	if res.Snapshot.Sources[node.SourceTransceiver] != node.SourceAbsent || r.ReadErrors(node.SourceTransceiver) != 0 {
		t.Errorf("lo: transceiver %s, %d read errors", res.Snapshot.Sources[node.SourceTransceiver], r.ReadErrors(node.SourceTransceiver))
	}
}

// One ethtool netlink socket serves phy and transceiver, one ethtool ioctl
// socket serves ethtool, netdev's driver info and the transceiver's
// fallback; the sources using them read concurrently (run with -race).
func TestSourcesShareOneSocketPerKind(t *testing.T) {
	o := Options{SysPath: "/sys", Timeout: 5 * time.Second, NetdevInclude: regexp.MustCompile("^(lo|eth0)$"),
		Sources: []string{node.SourcePHY, node.SourceTransceiver, node.SourceEthtool, node.SourceNetdev}}
	r := newTestReader(t, o)
	k := r.kernel
	phy := r.byName[node.SourcePHY].src.(*phySource).src.(*livePHY)
	mods := r.byName[node.SourceTransceiver].src.(*transceiverSource).src.(*liveModules)
	eth := r.byName[node.SourceEthtool].src.(*ethtoolSource).src.(*liveEthtool)
	drv := r.byName[node.SourceNetdev].src.(*netdevSource).driver
	if phy.c != k.ethtoolNetlink || mods.nl != k.ethtoolNetlink {
		t.Error("phy and transceiver do not share the ethtool netlink socket")
	}
	if eth.h != k.ethtoolIoctl || drv.ioctl != k.ethtoolIoctl || mods.ioctl != k.ethtoolIoctl {
		t.Error("ethtool, driver info and the module fallback do not share the ioctl socket")
	}
	if !r.live() {
		t.Skip("/sys is not this kernel's sysfs")
	}
	for range 3 {
		for _, s := range r.Read().Sources {
			if s.TimedOut || s.Stuck {
				t.Errorf("%s: %+v", s.Name, s)
			}
		}
	}
}
