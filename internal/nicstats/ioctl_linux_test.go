package nicstats

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roce-exporter/roce_exporter/internal/nlconn"
	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// inNetns runs fn on a thread inside the named network namespace: an ioctl
// socket belongs to the namespace of the thread that created it.
func inNetns(t testing.TB, ns string, fn func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		// The thread stays locked and is discarded when the goroutine
		// exits, instead of going back to the pool inside the namespace.
		runtime.LockOSThread()
		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			done <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- err
			return
		}
		fn()
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// readerIn returns a Reader whose socket is opened inside the namespace
// ns, whichever goroutine asks first.
func readerIn(t testing.TB, ns string) *Reader {
	return newReader(func() (s *socket, err error) {
		inNetns(t, ns, func() { s, err = openSocket() })
		return s, err
	}, nlconn.Policy{})
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestReaderMatchesEthtoolOnVeth reads a veth pair in a fresh namespace
// through Reader and compares names, order and values with what
// ethtool(8) prints for the same interface; then changes the channel count,
// which changes the string table, and checks that the names are rebuilt.
func TestReaderMatchesEthtoolOnVeth(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.LookPath(t, "iproute2", "ip")
	testenv.LookPath(t, "ethtool", "ethtool")
	ns := fmt.Sprintf("nicstats-%d-%d", os.Getpid(), time.Now().UnixNano()%100000)
	run(t, "ip", "netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	run(t, "ip", "-n", ns, "link", "add", "vst0", "numtxqueues", "4", "numrxqueues", "4", "type", "veth", "peer", "name", "vst1", "numtxqueues", "4", "numrxqueues", "4")
	run(t, "ip", "-n", ns, "link", "set", "vst0", "up")
	run(t, "ip", "-n", ns, "link", "set", "vst1", "up")

	r := readerIn(t, ns)
	defer r.Close()

	want, err := ParseStatistics(strings.NewReader(run(t, "ip", "netns", "exec", ns, "ethtool", "-S", "vst0")))
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Stats("vst0")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Names, ",") != strings.Join(want.Names, ",") {
		t.Fatalf("names differ from ethtool -S:\n got %q\nwant %q", got.Names, want.Names)
	}
	// veth counts only XDP traffic, and there is none: every value is stable.
	for i := range want.Values {
		if got.Values[i] != want.Values[i] {
			t.Errorf("%s = %d, ethtool -S says %d", want.Names[i], got.Values[i], want.Values[i])
		}
	}

	again, err := r.Stats("vst0")
	if err != nil {
		t.Fatal(err)
	}
	if &again.Names[0] != &got.Names[0] {
		t.Error("an unchanged string table was rebuilt")
	}
	if n := testing.AllocsPerRun(50, func() { r.Stats("vst0") }); n != 0 {
		t.Errorf("a steady read allocates %.0f times", n)
	}

	if _, err := r.Stats("nosuchif0"); !errors.Is(err, syscall.ENODEV) {
		t.Errorf("missing interface: %v, want ENODEV", err)
	}
	if _, err := r.Stats("lo"); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("loopback: %v, want EOPNOTSUPP", err)
	}

	// Fewer channels, fewer per-queue names.
	if out, err := exec.Command("ip", "netns", "exec", ns, "ethtool", "-L", "vst0", "rx", "1", "tx", "1").CombinedOutput(); err != nil {
		t.Skipf("veth channel change not supported here: %v %s", err, bytes.TrimSpace(out))
	}
	after, err := r.Stats("vst0")
	if err != nil {
		t.Fatal(err)
	}
	want, _ = ParseStatistics(strings.NewReader(run(t, "ip", "netns", "exec", ns, "ethtool", "-S", "vst0")))
	t.Logf("names: %d with 4 channels, %d with 1", len(got.Names), len(after.Names))
	if len(after.Names) == len(got.Names) || strings.Join(after.Names, ",") != strings.Join(want.Names, ",") {
		t.Errorf("after ethtool -L: %d names %q, ethtool -S has %d %q", len(after.Names), after.Names, len(want.Names), want.Names)
	}
}

// Driver info, pause parameters and the module EEPROM go through the same
// one socket as the statistics; veth answers driver info as ethtool -i
// prints it, and has no pause settings or module (EOPNOTSUPP, not a value).
func TestDriverInfoPauseModuleOnVeth(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.LookPath(t, "iproute2", "ip")
	testenv.LookPath(t, "ethtool", "ethtool")
	ns := fmt.Sprintf("nicstats-plumbing-%d", os.Getpid())
	run(t, "ip", "netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	run(t, "ip", "-n", ns, "link", "add", "vdi0", "type", "veth", "peer", "name", "vdi1")

	opens := 0
	r := newReader(func() (s *socket, err error) {
		opens++
		inNetns(t, ns, func() { s, err = openSocket() })
		return s, err
	}, nlconn.Policy{})
	defer r.Close()

	want, err := ParseDriverInfo(strings.NewReader(run(t, "ip", "netns", "exec", ns, "ethtool", "-i", "vdi0")))
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.DriverInfo("vdi0")
	if err != nil {
		t.Fatal(err)
	}
	if got != want || got.Driver != "veth" {
		t.Errorf("DriverInfo = %+v\nethtool -i: %+v", got, want)
	}
	if _, err := r.DriverInfo("nosuchif0"); !errors.Is(err, syscall.ENODEV) {
		t.Errorf("missing interface: %v, want ENODEV", err)
	}
	if _, err := r.Pause("vdi0"); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("Pause(veth) = %v, want EOPNOTSUPP", err)
	}
	if _, err := r.ModuleEEPROM("vdi0"); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("ModuleEEPROM(veth) = %v, want EOPNOTSUPP", err)
	}
	if _, err := r.Stats("vdi0"); err != nil {
		t.Error(err)
	}
	if opens != 1 {
		t.Errorf("%d sockets opened for driver info, pause, module and statistics; want one", opens)
	}
}

// A socket() that fails (EMFILE) is retried after the back-off; the
// statistics reader used to keep that first error until the exporter
// restarted.
func TestSocketRetriedAfterFailure(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	opens := 0
	r := newReader(func() (*socket, error) {
		opens++
		if opens == 1 {
			return nil, fmt.Errorf("ethtool socket: %w", syscall.EMFILE)
		}
		return openSocket()
	}, nlconn.Policy{Now: func() time.Time { return now }})
	defer r.Close()
	if _, err := r.Stats("lo"); !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("first call: %v", err)
	}
	if _, err := r.DriverInfo("lo"); !errors.Is(err, nlconn.ErrNotDialled) || opens != 1 {
		t.Fatalf("within the back-off: %v, %d opens", err, opens)
	}
	now = now.Add(nlconn.FirstWait)
	// lo has no statistics: EOPNOTSUPP is the kernel's answer through a
	// working socket.
	if _, err := r.Stats("lo"); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Fatalf("after the back-off: %v", err)
	}
}

// BenchmarkStats is a steady scrape of one interface's statistics (a veth
// in a namespace of its own: 37 counters) through the shared socket.
func BenchmarkStats(b *testing.B) {
	testenv.RequireRoot(b)
	ns := fmt.Sprintf("nicstats-bench-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		b.Skipf("ip netns add: %v %s", err, out)
	}
	b.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	if out, err := exec.Command("ip", "-n", ns, "link", "add", "vbs0", "numtxqueues", "4", "numrxqueues", "4", "type", "veth", "peer", "name", "vbs1").CombinedOutput(); err != nil {
		b.Fatalf("ip link add: %v %s", err, out)
	}
	r := readerIn(b, ns)
	defer r.Close()
	if _, err := r.Stats("vbs0"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Stats("vbs0"); err != nil {
			b.Fatal(err)
		}
	}
}
