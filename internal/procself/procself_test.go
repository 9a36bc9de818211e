//go:build linux

package procself

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
)

func gather(t testing.TB, c prometheus.Collector) map[string]float64 {
	t.Helper()
	r := prometheus.NewPedanticRegistry()
	r.MustRegister(c)
	mfs, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		m := mf.GetMetric()[0]
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			out[mf.GetName()] = m.GetCounter().GetValue()
		default:
			out[mf.GetName()] = m.GetGauge().GetValue()
		}
	}
	return out
}

// The cheap collector exports what client_golang's does, with the same
// values, read in the same process.
func TestMatchesClientGolang(t *testing.T) {
	var files []*os.File
	for i := 0; i < 100; i++ {
		f, err := os.Open("/proc/self/stat")
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	ours := New(nil)
	want := gather(t, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	got := gather(t, ours)
	if len(got) != len(want) {
		t.Errorf("metrics: got %v, want %v", got, want)
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		tol := 0.0
		switch name {
		case "process_cpu_seconds_total":
			tol = 0.05
		case "process_resident_memory_bytes", "process_virtual_memory_bytes":
			tol = 0.1 * w // the heap may move between the two reads
		case "process_start_time_seconds":
			tol = 0.011 // both round to clock ticks
		case "process_open_fds":
			tol = 2 // the other collector's descriptors
		case "process_network_receive_bytes_total", "process_network_transmit_bytes_total":
			tol = 1e6 // the namespace's traffic between the reads
		}
		if math.Abs(g-w) > tol {
			t.Errorf("%s = %v, client_golang says %v", name, g, w)
		}
	}
	if got["process_open_fds"] < 100 {
		t.Errorf("open fds %v, want at least the 100 this test holds", got["process_open_fds"])
	}
}

// Before Linux 6.2 the count is the reader's kept-open files now plus the
// others counted at most a minute ago.
func TestOpenFDsWithoutFastPath(t *testing.T) {
	var kept int64
	c := New(func() int64 { return kept }).(*Collector)
	c.fastFDs = false
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	base, ok := c.openFDs()
	if !ok {
		t.Fatal("no count")
	}
	real := countFDs(t)
	if d := base - real; d < -1 || d > 1 {
		t.Errorf("count %d, directory lists %d", base, real)
	}
	// The reader opens 50 counter files: counted at once, without a listing.
	var files []*os.File
	for i := 0; i < 50; i++ {
		f, _ := os.Open("/proc/self/stat")
		files = append(files, f)
	}
	kept = 50
	if n, _ := c.openFDs(); n != base+50 {
		t.Errorf("after the reader opened 50: %d, want %d", n, base+50)
	}
	// Other descriptors are seen at the next recount.
	extra, _ := os.Open("/proc/self/stat")
	if n, _ := c.openFDs(); n != base+50 {
		t.Errorf("within the minute: %d, want %d", n, base+50)
	}
	now = now.Add(otherFDsMaxAge)
	if n, _ := c.openFDs(); n != base+51 {
		t.Errorf("after a minute: %d, want %d", n, base+51)
	}
	extra.Close()
	for _, f := range files {
		f.Close()
	}
}

func countFDs(t *testing.T) int64 {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	return int64(len(names) - 1)
}

func BenchmarkCollect(b *testing.B) {
	for i := 0; i < 480; i++ {
		f, _ := os.Open("/proc/self/stat")
		b.Cleanup(func() { f.Close() })
	}
	for _, bc := range []struct {
		name string
		c    prometheus.Collector
	}{{"procself", New(nil)}, {"client_golang", collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})}} {
		r := prometheus.NewRegistry()
		r.MustRegister(bc.c)
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				r.Gather()
			}
		})
	}
}
