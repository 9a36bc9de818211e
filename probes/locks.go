package probes

import (
	"context"
	"sync"
	"time"
)

// deviceLocks makes sure two locally started probes never share a device.
type deviceLocks struct {
	mu   sync.Mutex
	busy map[string]bool
}

func newDeviceLocks() *deviceLocks { return &deviceLocks{busy: map[string]bool{}} }

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
}
