package reader

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/roce-exporter/roce_exporter/node"
)

// readDevices reads every device with a few workers pulling from a shared
// queue. A device whose read blocks (a firmware command that never returns)
// is abandoned at the deadline, stays marked busy until its read returns,
// and is skipped meanwhile; when a worker stalls, another one is started
// so the devices behind it are still read.
func (c *rdmaSource) readDevices(sc *scan, tds []*topoDevice, states []*rdmaDeviceState) ([]*node.Device, []string) {
	n := len(tds)
	devs := make([]*node.Device, n)
	// status[i] is published after devs[i] is written, so the waiter may
	// read devs[i] once it sees deviceRead. The waiter is woken once, by
	// the last device, not once per device: every wake-up is a futex call.
	status := make([]atomic.Int32, n)
	var next, completed atomic.Int64
	allDone := make(chan struct{})
	finish := func(i int, st int32) {
		status[i].Store(st)
		if completed.Add(1) == int64(n) {
			close(allDone)
		}
	}
	worker := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			st := states[i]
			if !st.busy.CompareAndSwap(false, true) {
				finish(i, deviceSkipped) // still stuck in an earlier read
				continue
			}
			st.attrs.begin()
			d := c.readDevice(sc, tds[i], st)
			st.attrs.sweep()
			devs[i] = d
			st.busy.Store(false)
			finish(i, deviceRead)
		}
	}
	workers := min(rdmaWorkers, (n+devicesPerWorker-1)/devicesPerWorker)
	if workers < 1 {
		workers = 1
	}
	for w := 0; w < workers; w++ {
		go worker()
	}
	// One timer serves both the stall check and the deadline: each timer
	// armed on the read path can cost a netpoller wake-up.
	budget := c.r.opts.Timeout * 3 / 4
	stallEvery := max(budget/8, time.Millisecond)
	begin := time.Now()
	tick := time.NewTimer(stallEvery)
	defer tick.Stop()
	timedOut := false
	for lastProgress, extra := int64(-1), 0; ; {
		select {
		case <-allDone:
		case <-tick.C:
			left := budget - time.Since(begin)
			if left <= 0 {
				timedOut = true
				break
			}
			p := completed.Load()
			if p == lastProgress && int(next.Load()) < n && extra < maxExtraWorkers {
				extra++
				go worker()
			}
			lastProgress = p
			tick.Reset(min(stallEvery, left))
			continue
		}
		break
	}
	out := make([]*node.Device, n)
	var stuck []string
	for i := range tds {
		switch status[i].Load() {
		case deviceRead:
			// Results of devices that finished are kept; the rest are nil.
			out[i] = devs[i]
		case deviceSkipped:
			stuck = append(stuck, tds[i].Name)
			out[i] = &node.Device{Name: tds[i].Name, Unreadable: "a read of it is still stuck in the kernel since an earlier scrape"}
			c.r.logger.Debug("RDMA device still stuck in an earlier read, skipped", "device", tds[i].Name)
		default:
			if timedOut && states[i].busy.Load() {
				stuck = append(stuck, tds[i].Name)
				out[i] = &node.Device{Name: tds[i].Name, Unreadable: fmt.Sprintf("its reads did not return within %s", budget)}
			}
		}
	}
	return out, stuck
}

const (
	devicePending int32 = iota
	deviceRead
	deviceSkipped
)

// maxExtraWorkers bounds the workers added to route around stuck reads.
const maxExtraWorkers = 4

// rdmaWorkers bounds the goroutines reading devices; devicesPerWorker is
// the share below which another worker costs more than it saves.
var rdmaWorkers = max(2, runtime.GOMAXPROCS(0))

const devicesPerWorker = 8
