package nicstats

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The parts of the ethtool ioctl ABI (include/uapi/linux/ethtool.h) that
// golang.org/x/sys/unix does not define.
const (
	ethSSStats = 1  // ETH_SS_STATS
	gstringLen = 32 // ETH_GSTRING_LEN
	// MaxStats bounds the statistics of one interface. The kernel writes
	// as many entries as the driver has at the moment of the call, not as
	// many as the caller asked for, so the buffers must hold the largest
	// table a driver can grow to between two calls; 32768 is what
	// ethtool(8) and github.com/safchain/ethtool assume too.
	MaxStats = 32768
)

// ifreq is struct ifreq with the union used as ifr_data.
type ifreq struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [16]byte
}

// Reader reads ethtool statistics with the ioctls ethtool(8) uses, keeping
// what a scrape does not need to redo: the string table of each interface
// is re-fetched every call (mlx5 swaps per-priority names in and out when
// PFC moves, possibly at the same count), but only hashed, and turned into
// a new Names slice only when it differs. A steady scrape of an interface
// costs three ioctls and no allocation.
//
// A Reader is safe for concurrent use; calls are serialised because the
// large ioctl buffers are shared.
type Reader struct {
	mu      sync.Mutex
	fd      int
	seed    maphash.Seed
	strings []byte   // 12-byte header + MaxStats names
	stats   []uint64 // 8-byte header + MaxStats values
	sset    [24]byte
	tables  map[string]*stringTable
}

type stringTable struct {
	hash  uint64
	names []string
	// values is handed out by Stats and overwritten by the next call for
	// this interface.
	values []uint64
}

// NewReader opens the socket the ioctls go through.
func NewReader() (*Reader, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("ethtool socket: %w", err)
	}
	return &Reader{
		fd:      fd,
		seed:    maphash.MakeSeed(),
		strings: make([]byte, 12+MaxStats*gstringLen),
		stats:   make([]uint64, 1+MaxStats),
		tables:  map[string]*stringTable{},
	}, nil
}

// Close releases the socket.
func (r *Reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fd < 0 {
		return nil
	}
	err := syscall.Close(r.fd)
	r.fd = -1
	return err
}

// Forget drops the cached string table of an interface that is gone.
func (r *Reader) Forget(iface string) {
	r.mu.Lock()
	delete(r.tables, iface)
	r.mu.Unlock()
}

// Stats returns the statistics of iface in kernel order. Names is shared
// and never modified (a changed table gets a new slice), so a caller may
// keep it and compare it by identity; Values is valid until the next call
// for the same interface. An interface without statistics returns
// EOPNOTSUPP, a vanished one ENODEV, wrapped.
func (r *Reader) Stats(iface string) (Stats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fd < 0 {
		return Stats{}, fmt.Errorf("ethtool %s: reader closed", iface)
	}
	n, err := r.count(iface)
	if err != nil {
		return Stats{}, err
	}
	if n == 0 {
		return Stats{}, fmt.Errorf("ethtool %s: %w", iface, syscall.EOPNOTSUPP)
	}
	if n > MaxStats {
		return Stats{}, fmt.Errorf("ethtool %s: %d statistics, more than the %d supported", iface, n, MaxStats)
	}

	binary.NativeEndian.PutUint32(r.strings[0:], unix.ETHTOOL_GSTRINGS)
	binary.NativeEndian.PutUint32(r.strings[4:], ethSSStats)
	binary.NativeEndian.PutUint32(r.strings[8:], uint32(n))
	if err := r.ioctl(iface, unsafe.Pointer(&r.strings[0])); err != nil {
		return Stats{}, fmt.Errorf("ethtool %s: strings: %w", iface, err)
	}
	// The kernel reports how many names it wrote: the table may have
	// changed since count().
	n = int(binary.NativeEndian.Uint32(r.strings[8:]))
	if n > MaxStats {
		return Stats{}, fmt.Errorf("ethtool %s: %d statistics, more than the %d supported", iface, n, MaxStats)
	}
	raw := r.strings[12 : 12+n*gstringLen]

	t := r.tables[iface]
	if h := maphash.Bytes(r.seed, raw); t == nil || len(t.names) != n || t.hash != h {
		t = &stringTable{hash: h, names: parseNames(raw, n), values: make([]uint64, n)}
		r.tables[iface] = t
	}

	// struct ethtool_stats: cmd and n_stats (u32 each), then the values.
	head := (*[2]uint32)(unsafe.Pointer(&r.stats[0]))
	head[0], head[1] = unix.ETHTOOL_GSTATS, uint32(n)
	if err := r.ioctl(iface, unsafe.Pointer(&r.stats[0])); err != nil {
		return Stats{}, fmt.Errorf("ethtool %s: statistics: %w", iface, err)
	}
	if got := int(head[1]); got != n {
		// The table changed between the two calls: names and values would
		// not line up. The next scrape gets a consistent pair.
		delete(r.tables, iface)
		return Stats{}, fmt.Errorf("ethtool %s: statistics count changed during the read (%d names, %d values)", iface, n, got)
	}
	copy(t.values, r.stats[1:1+n])
	return Stats{Names: t.names, Values: t.values}, nil
}

// count asks for the number of statistics with ETHTOOL_GSSET_INFO. (The
// GDRVINFO n_stats fallback of ethtool(8) is for kernels before 2.6.27,
// which Go no longer runs on.)
func (r *Reader) count(iface string) (int, error) {
	// struct ethtool_sset_info: cmd, reserved, sset_mask, then one u32 per
	// set in the mask.
	sset := r.sset[:]
	clear(sset)
	binary.NativeEndian.PutUint32(sset[0:], unix.ETHTOOL_GSSET_INFO)
	binary.NativeEndian.PutUint64(sset[8:], 1<<ethSSStats)
	if err := r.ioctl(iface, unsafe.Pointer(&sset[0])); err != nil {
		return 0, fmt.Errorf("ethtool %s: %w", iface, err)
	}
	if binary.NativeEndian.Uint64(sset[8:])&(1<<ethSSStats) == 0 {
		return 0, nil
	}
	return int(binary.NativeEndian.Uint32(sset[16:])), nil
}

func (r *Reader) ioctl(iface string, data unsafe.Pointer) error {
	var req ifreq
	if len(iface) >= len(req.name) {
		return syscall.ENODEV
	}
	copy(req.name[:], iface)
	req.data = data
	for {
		_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(r.fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&req)))
		if errno == syscall.EINTR {
			continue
		}
		runtime.KeepAlive(data)
		if errno != 0 {
			return errno
		}
		return nil
	}
}

// parseNames splits an ETH_GSTRING_LEN-strided, NUL-padded table.
func parseNames(raw []byte, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = unix.ByteSliceToString(raw[i*gstringLen : (i+1)*gstringLen])
	}
	return names
}
