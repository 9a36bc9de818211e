package probes

import (
	"context"
	"sync"
	"time"
)

// deviceLocks makes sure two locally started probes never share a device,
// and that a responder does not wait for clients on a device a local client
// is testing: a perftest server that a peer reached then would run beside
// that test on one NIC, and both would measure half the port (see
// responder.go's preemption).
type deviceLocks struct {
	mu   sync.Mutex
	busy map[string]bool
	// changed is closed, and replaced, whenever a device is locked or freed.
	changed chan struct{}
}

func newDeviceLocks() *deviceLocks {
	return &deviceLocks{busy: map[string]bool{}, changed: make(chan struct{})}
}

func (d *deviceLocks) tryLock(devices ...string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, dev := range devices {
		if d.busy[dev] {
			return false
		}
	}
	for _, dev := range devices {
		d.busy[dev] = true
	}
	d.notify()
	return true
}

// lock waits up to wait for every device to be free.
func (d *deviceLocks) lock(ctx context.Context, wait time.Duration, devices ...string) bool {
	deadline := time.Now().Add(wait)
	for {
		if d.tryLock(devices...) {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
}

func (d *deviceLocks) unlock(devices ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, dev := range devices {
		delete(d.busy, dev)
	}
	d.notify()
}

// notify wakes everyone watching; d.mu is held.
func (d *deviceLocks) notify() {
	close(d.changed)
	d.changed = make(chan struct{})
}

// state says whether dev is locked now, and returns a channel closed at the
// next change of any lock.
func (d *deviceLocks) state(dev string) (busy bool, changed <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.busy[dev], d.changed
}

// waitFree waits until dev is not locked; false when ctx ended first.
func (d *deviceLocks) waitFree(ctx context.Context, dev string) bool {
	for {
		busy, changed := d.state(dev)
		if !busy {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-changed:
		}
	}
}
