package collector

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
)

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// settle waits for goroutines of finished work to exit.
func settle(want int) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(3 * time.Second); n > want && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(20 * time.Millisecond)
	}
	return n
}

// TestHotUnplugDuringContinuousScrapes removes and re-adds a device, makes
// counter files vanish, fail with EIO and block, while scrapes keep
// running: the other devices keep reporting, the vanished device's series
// go away, and no goroutines or file descriptors leak.
func TestHotUnplugDuringContinuousScrapes(t *testing.T) {
	root := writeNode(t, sysfixture.HealthyCX7(4))
	ffs := newFaultFS()
	cfg := testConfig(root, "rdma", "netdev", "pcie")
	cfg.ro.FS = ffs
	cfg.ro.Timeout = 300 * time.Millisecond
	e, _ := newTestExporter(t, cfg)
	scrape(t, e) // warm: files open, goroutines started

	goroutines, fds := runtime.NumGoroutine(), openFDs(t)

	stop := make(chan struct{})
	var scrapes, bad atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				out := scrape(t, e)
				scrapes.Add(1)
				// mlx5_0 is never touched: it must always report.
				if len(series(out, "roce_port_up", `device="mlx5_0"`)) != 1 {
					bad.Add(1)
				}
			}
		}()
	}

	link := filepath.Join(root, "sys/class/infiniband/mlx5_1")
	target, _ := os.Readlink(link)
	for i := 0; i < 10; i++ {
		os.Remove(link)
		time.Sleep(20 * time.Millisecond)
		os.Symlink(target, link)
		time.Sleep(20 * time.Millisecond)
	}
	ffs.setErr("mlx5_2/ports/1/hw_counters/out_of_sequence", syscall.EIO)
	ffs.setErr("mlx5_2/ports/1/counters/port_rcv_data", syscall.ENOENT)
	time.Sleep(100 * time.Millisecond)
	release := ffs.setHang("mlx5_3/ports/1/state")
	time.Sleep(700 * time.Millisecond) // at least one scrape times out
	close(release)
	ffs.setErr("mlx5_2/ports/1/hw_counters/out_of_sequence", nil)
	ffs.setErr("mlx5_2/ports/1/counters/port_rcv_data", nil)
	os.Remove(link) // leave mlx5_1 unplugged
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()

	if bad.Load() > 0 {
		t.Errorf("%d of %d scrapes lost the untouched device", bad.Load(), scrapes.Load())
	}
	if scrapes.Load() < 10 {
		t.Fatalf("only %d scrapes ran", scrapes.Load())
	}
	out := scrape(t, e)
	if len(series(out, "roce_device_info", `device="mlx5_1"`)) != 0 || len(series(out, "roce_port_up", `device="mlx5_1"`)) != 0 {
		t.Error("series of the unplugged device remain")
	}
	if n := len(series(out, "roce_device_info")); n != 3 {
		t.Errorf("%d devices report, want 3", n)
	}
	if v := value(t, mustSeries(t, out, "roce_scrape_collector_success", `collector="rdma"`)); v != "1" {
		t.Errorf("rdma success = %s after faults cleared", v)
	}
	if n := settle(goroutines); n > goroutines {
		t.Errorf("goroutines: %d before, %d after", goroutines, n)
	}
	if n := openFDs(t); n > fds {
		t.Errorf("file descriptors: %d before, %d after (the unplugged device's files must be closed)", fds, n)
	}
}

func TestHandlerLimitsConcurrentRequests(t *testing.T) {
	root := writeNode(t, sysfixture.HealthyCX7(1))
	ffs := newFaultFS()
	release := ffs.setHang("mlx5_0/ports/1/state")
	cfg := testConfig(root, "rdma")
	cfg.ro.FS = ffs
	e, _ := newTestExporter(t, cfg)
	srv := httptest.NewServer(NewHandler(e, HandlerOpts{MaxRequests: 2}))
	defer srv.Close()
	codes := make(chan int, 3)
	for i := 0; i < 3; i++ {
		go func() {
			resp, err := http.Get(srv.URL)
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
		time.Sleep(50 * time.Millisecond)
	}
	first := <-codes // the third request is refused at once
	close(release)
	got := []int{first, <-codes, <-codes}
	n503 := 0
	for _, c := range got {
		if c == http.StatusServiceUnavailable {
			n503++
		}
	}
	if first != http.StatusServiceUnavailable || n503 != 1 {
		t.Errorf("status codes %v: want exactly the third request refused with 503", got)
	}
}

func TestPermissionErrorsAreCountedNotFatal(t *testing.T) {
	root := writeNode(t, sysfixture.HealthyCX7(2))
	ffs := newFaultFS()
	ffs.setErr("mlx5_0/ports/1/hw_counters/np_cnp_sent", syscall.EACCES)
	ffs.setErr("mlx5_1/ports/1/counters", syscall.EACCES)
	cfg := testConfig(root, "rdma", "netdev", "pcie")
	cfg.ro.FS = ffs
	e, logs := newTestExporter(t, cfg)
	out := scrape(t, e)
	if v := value(t, mustSeries(t, out, "roce_scrape_read_errors_total", `collector="rdma"`)); v != "2" {
		t.Errorf("read errors = %s, want 2", v)
	}
	if v := value(t, mustSeries(t, out, "roce_scrape_collector_success", `collector="rdma"`)); v != "1" {
		t.Errorf("success = %s", v)
	}
	if !strings.Contains(logs.String(), "permission denied") {
		t.Error("permission error not logged")
	}
}
