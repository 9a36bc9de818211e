package reader

import (
	"sync"
	"sync/atomic"
	"syscall"
)

// fileBudget bounds the sysfs attribute files the readers keep open
// between reads. Keeping a file open saves an open and a close per value on
// every scrape, but a node with many devices has tens of files per port:
// 64 ports under a 1,024 descriptor limit, or 3,000 under 20,000, would take
// every descriptor, and then opens fail at random (the output flips between
// scrapes) and the HTTP listener cannot accept. Beyond the budget a file is
// read with open, read, close.
type fileBudget struct {
	once  sync.Once
	limit int64 // files that may be kept open
	open  atomic.Int64
}

// openFiles is the process-wide budget: the descriptor limit is the
// process's, whatever Reader holds the files.
var openFiles fileBudget

// fdHeadroom is what the budget leaves of the descriptor limit for the
// listener and its connections, netlink and ioctl sockets, probe children
// and files read once: a quarter of the limit, at least 256.
func fdHeadroom(limit uint64) uint64 { return max(256, limit/4) }

// budgetFor is how many files may be kept open under a descriptor limit.
func budgetFor(limit uint64) int64 {
	if h := fdHeadroom(limit); limit > h {
		return int64(limit - h)
	}
	return 0
}

func (b *fileBudget) init() {
	b.once.Do(func() {
		// Go raises the soft limit to the hard one at start on Linux (since
		// Go 1.19), as node_exporter's users expect; this reads the result.
		var rl syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			b.limit = budgetFor(1024)
			return
		}
		b.limit = budgetFor(rl.Cur)
	})
}

// acquire takes a place for one more kept-open file; false when the budget
// is spent.
func (b *fileBudget) acquire() bool {
	b.init()
	if b.open.Add(1) > b.limit {
		b.open.Add(-1)
		return false
	}
	return true
}

func (b *fileBudget) release() { b.open.Add(-1) }

// FileBudget reports how many sysfs files the readers may keep open and how
// many they hold now.
func FileBudget() (limit, open int64) {
	openFiles.init()
	return openFiles.limit, openFiles.open.Load()
}
