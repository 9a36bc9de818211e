//go:build linux

package procself

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// userHZ is the unit of the times in /proc/<pid>/stat: USER_HZ, 100 on
// every Linux architecture (what procfs and ps assume too).
const userHZ = 100

// otherFDsMaxAge is how old the count of descriptors that are not kept-open
// sysfs files may grow on kernels before 6.2 (see openFDs).
const otherFDsMaxAge = time.Minute

// Collector is the process collector. keptOpen returns how many sysfs files
// the reader holds open now (reader.FileBudget), exact at every scrape.
type Collector struct {
	keptOpen func() int64

	mu        sync.Mutex
	stat      *os.File // /proc/self/stat, kept open
	netstat   *os.File // /proc/self/net/netstat, kept open
	buf       []byte
	startTime float64 // seconds since the epoch; 0 when unknown
	pageSize  float64
	fdDir     string
	// fastFDs is true where stat(2) on /proc/self/fd gives the number of
	// open descriptors (Linux 6.2 and later).
	fastFDs  bool
	others   int64 // descriptors besides the kept-open files, at othersAt
	othersAt time.Time
	now      func() time.Time
}

// New returns the collector. It falls back to nothing: a file it cannot
// open leaves its metrics out, as client_golang's collector does.
func New(keptOpen func() int64) prometheus.Collector {
	if keptOpen == nil {
		keptOpen = func() int64 { return 0 }
	}
	c := &Collector{keptOpen: keptOpen, buf: make([]byte, 8192), pageSize: float64(os.Getpagesize()), fdDir: "/proc/self/fd", now: time.Now}
	c.stat, _ = os.Open("/proc/self/stat")
	c.netstat, _ = os.Open("/proc/self/net/netstat")
	if st, err := os.Stat(c.fdDir); err == nil && st.Size() > 0 {
		c.fastFDs = true
	}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		if btime, ok := field(b, "btime "); ok {
			if fields := c.statFields(); len(fields) > 19 {
				if ticks, err := strconv.ParseFloat(string(fields[19]), 64); err == nil {
					c.startTime = btime + ticks/userHZ
				}
			}
		}
	}
	return c
}

// Describe sends the descriptors of every metric.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

// Collect reads the process's state.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.statFields(); len(f) > 21 {
		utime, _ := strconv.ParseFloat(string(f[11]), 64)
		stime, _ := strconv.ParseFloat(string(f[12]), 64)
		vsize, _ := strconv.ParseFloat(string(f[20]), 64)
		rss, _ := strconv.ParseFloat(string(f[21]), 64)
		ch <- prometheus.MustNewConstMetric(cpuDesc, prometheus.CounterValue, (utime+stime)/userHZ)
		ch <- prometheus.MustNewConstMetric(vsizeDesc, prometheus.GaugeValue, vsize)
		ch <- prometheus.MustNewConstMetric(rssDesc, prometheus.GaugeValue, rss*c.pageSize)
	}
	if c.startTime > 0 {
		ch <- prometheus.MustNewConstMetric(startDesc, prometheus.GaugeValue, c.startTime)
	}
	if n, ok := c.openFDs(); ok {
		ch <- prometheus.MustNewConstMetric(openFDsDesc, prometheus.GaugeValue, float64(n))
	}
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil {
		ch <- prometheus.MustNewConstMetric(maxFDsDesc, prometheus.GaugeValue, float64(rl.Cur))
	}
	if syscall.Getrlimit(syscall.RLIMIT_AS, &rl) == nil {
		ch <- prometheus.MustNewConstMetric(maxVsizeDesc, prometheus.GaugeValue, float64(rl.Cur))
	}
	if in, out, ok := c.ipOctets(); ok {
		ch <- prometheus.MustNewConstMetric(inDesc, prometheus.CounterValue, in)
		ch <- prometheus.MustNewConstMetric(outDesc, prometheus.CounterValue, out)
	}
}

// openFDs counts the open descriptors. From Linux 6.2 stat(2) on
// /proc/self/fd returns the count as the directory's size: one system call,
// exact. Before 6.2 counting means listing the directory, one entry per
// descriptor: ~480 on an 8-port node, nearly all of them the sysfs files the
// reader keeps open, which the reader counts exactly as it opens and closes
// them. So the count is the reader's kept-open files now, plus the other
// descriptors (listener, connections, sockets, logs) as counted at most a
// minute ago: exact for the part that grows with the node, at most a
// minute old for the few others.
func (c *Collector) openFDs() (int64, bool) {
	if c.fastFDs {
		if st, err := os.Stat(c.fdDir); err == nil && st.Size() > 0 {
			return st.Size(), true
		}
		c.fastFDs = false
	}
	kept := c.keptOpen()
	if c.othersAt.IsZero() || c.now().Sub(c.othersAt) >= otherFDsMaxAge {
		d, err := os.Open(c.fdDir)
		if err != nil {
			return 0, false
		}
		names, err := d.Readdirnames(-1)
		d.Close()
		if err != nil {
			return 0, false
		}
		// The listing saw its own descriptor, which is closed now.
		c.others = max(0, int64(len(names))-1-kept)
		c.othersAt = c.now()
	}
	return kept + c.others, true
}

// statFields returns the fields of /proc/self/stat after the command name
// (which may hold spaces and parentheses): fields[0] is the state (field 3
// of proc(5)), so field N is fields[N-3].
func (c *Collector) statFields() [][]byte {
	b, ok := c.read(c.stat)
	if !ok {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return bytes.Fields(b[i+1:])
}

// ipOctets returns IpExt InOctets and OutOctets of the process's network
// namespace, what client_golang exports as the process's network bytes.
func (c *Collector) ipOctets() (in, out float64, ok bool) {
	b, ok := c.read(c.netstat)
	if !ok {
		return 0, 0, false
	}
	// Two lines start with "IpExt:": the names, then the values.
	i := bytes.Index(b, []byte("\nIpExt:"))
	if i < 0 {
		return 0, 0, false
	}
	rest := b[i+1:]
	nl := bytes.IndexByte(rest, '\n')
	if nl < 0 {
		return 0, 0, false
	}
	names := bytes.Fields(rest[:nl])
	rest = rest[nl+1:]
	if !bytes.HasPrefix(rest, []byte("IpExt:")) {
		return 0, 0, false
	}
	if nl = bytes.IndexByte(rest, '\n'); nl >= 0 {
		rest = rest[:nl]
	}
	values := bytes.Fields(rest)
	var haveIn, haveOut bool
	for k := 1; k < len(names) && k < len(values); k++ {
		switch string(names[k]) {
		case "InOctets":
			in, _ = strconv.ParseFloat(string(values[k]), 64)
			haveIn = true
		case "OutOctets":
			out, _ = strconv.ParseFloat(string(values[k]), 64)
			haveOut = true
		}
	}
	return in, out, haveIn || haveOut
}

// read reads a whole kept-open /proc file from offset 0 (the kernel makes
// it anew for each read from 0).
func (c *Collector) read(f *os.File) ([]byte, bool) {
	if f == nil {
		return nil, false
	}
	n := 0
	for {
		if n == len(c.buf) {
			c.buf = append(c.buf, make([]byte, len(c.buf))...)
		}
		m, err := f.ReadAt(c.buf[n:], int64(n))
		n += m
		if err == io.EOF || (err == nil && m == 0) {
			break
		}
		if err != nil {
			return nil, false
		}
	}
	return c.buf[:n], n > 0
}

// field returns the number after prefix at the start of a line of b.
func field(b []byte, prefix string) (float64, bool) {
	for _, line := range bytes.Split(b, []byte("\n")) {
		if bytes.HasPrefix(line, []byte(prefix)) {
			v, err := strconv.ParseFloat(string(bytes.TrimSpace(line[len(prefix):])), 64)
			return v, err == nil
		}
	}
	return 0, false
}
