package nicstats

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/roce-exporter/roce_exporter/internal/nlconn"
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

// Reader is the exporter's one ethtool ioctl socket (an AF_INET datagram
// socket for SIOCETHTOOL), shared by everything that asks the ioctls:
// statistics, driver info, pause parameters and the module EEPROM. The
// socket is opened on first use and kept by the rule of internal/nlconn
// (a failed socket() — EMFILE — is retried after a back-off, not never).
//
// Statistics keep what a scrape does not need to redo: the string table of
// each interface is re-fetched every call (mlx5 swaps per-priority names in
// and out when PFC moves, possibly at the same count), but only hashed,
// and turned into a new Names slice only when it differs. A steady scrape
// of an interface costs three ioctls and no allocation.
//
// A Reader is safe for concurrent use. Its ioctls are serialised, which
// costs nothing: the kernel runs every SIOCETHTOOL under RTNL anyway.
type Reader struct {
	sock *nlconn.Conn[*socket]

	// Under sock's lock: the large ioctl buffers of Stats, allocated by
	// the first call.
	seed    maphash.Seed
	strings []byte   // 12-byte header + MaxStats names
	stats   []uint64 // 8-byte header + MaxStats values
	sset    [24]byte

	mu     sync.Mutex // tables, which Forget changes without the socket
	tables map[string]*stringTable
}

type stringTable struct {
	hash  uint64
	names []string
	// values is handed out by Stats and overwritten by the next call for
	// this interface.
	values []uint64
}

// socket is the descriptor the ioctls go through.
type socket struct{ fd int }

func (s *socket) Close() error { return syscall.Close(s.fd) }

func openSocket() (*socket, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("ethtool socket: %w", err)
	}
	return &socket{fd: fd}, nil
}

// NewReader returns a Reader; the socket is opened by the first call.
func NewReader() *Reader { return newReader(openSocket, nlconn.Policy{}) }

func newReader(open func() (*socket, error), p nlconn.Policy) *Reader {
	// EBADF is the only error that says the socket itself is unusable; the
	// others are the driver's answer about one interface.
	broken := func(err error) bool { return errors.Is(err, syscall.EBADF) }
	return &Reader{sock: nlconn.New(open, broken, p), seed: maphash.MakeSeed(), tables: map[string]*stringTable{}}
}

// Close releases the socket.
func (r *Reader) Close() error { return r.sock.Close() }

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
	var st Stats
	err := r.sock.Do(func(s *socket) error {
		var err error
		st, err = r.readStats(s.fd, iface)
		return err
	})
	return st, err
}

func (r *Reader) readStats(fd int, iface string) (Stats, error) {
	if r.strings == nil {
		r.strings = make([]byte, 12+MaxStats*gstringLen)
		r.stats = make([]uint64, 1+MaxStats)
	}
	n, err := r.count(fd, iface)
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
	if err := ioctl(fd, iface, unsafe.Pointer(&r.strings[0])); err != nil {
		return Stats{}, fmt.Errorf("ethtool %s: strings: %w", iface, err)
	}
	// The kernel reports how many names it wrote: the table may have
	// changed since count().
	n = int(binary.NativeEndian.Uint32(r.strings[8:]))
	if n > MaxStats {
		return Stats{}, fmt.Errorf("ethtool %s: %d statistics, more than the %d supported", iface, n, MaxStats)
	}
	raw := r.strings[12 : 12+n*gstringLen]

	r.mu.Lock()
	t := r.tables[iface]
	if h := maphash.Bytes(r.seed, raw); t == nil || len(t.names) != n || t.hash != h {
		t = &stringTable{hash: h, names: parseNames(raw, n), values: make([]uint64, n)}
		r.tables[iface] = t
	}
	r.mu.Unlock()

	// struct ethtool_stats: cmd and n_stats (u32 each), then the values.
	head := (*[2]uint32)(unsafe.Pointer(&r.stats[0]))
	head[0], head[1] = unix.ETHTOOL_GSTATS, uint32(n)
	if err := ioctl(fd, iface, unsafe.Pointer(&r.stats[0])); err != nil {
		return Stats{}, fmt.Errorf("ethtool %s: statistics: %w", iface, err)
	}
	if got := int(head[1]); got != n {
		// The table changed between the two calls: names and values would
		// not line up. The next scrape gets a consistent pair.
		r.Forget(iface)
		return Stats{}, fmt.Errorf("ethtool %s: statistics count changed during the read (%d names, %d values)", iface, n, got)
	}
	copy(t.values, r.stats[1:1+n])
	return Stats{Names: t.names, Values: t.values}, nil
}

// count asks for the number of statistics with ETHTOOL_GSSET_INFO. (The
// GDRVINFO n_stats fallback of ethtool(8) is for kernels before 2.6.27,
// which Go no longer runs on.)
func (r *Reader) count(fd int, iface string) (int, error) {
	// struct ethtool_sset_info: cmd, reserved, sset_mask, then one u32 per
	// set in the mask.
	sset := r.sset[:]
	clear(sset)
	binary.NativeEndian.PutUint32(sset[0:], unix.ETHTOOL_GSSET_INFO)
	binary.NativeEndian.PutUint64(sset[8:], 1<<ethSSStats)
	if err := ioctl(fd, iface, unsafe.Pointer(&sset[0])); err != nil {
		return 0, fmt.Errorf("ethtool %s: %w", iface, err)
	}
	if binary.NativeEndian.Uint64(sset[8:])&(1<<ethSSStats) == 0 {
		return 0, nil
	}
	return int(binary.NativeEndian.Uint32(sset[16:])), nil
}

func ioctl(fd int, iface string, data unsafe.Pointer) error {
	var req ifreq
	if len(iface) >= len(req.name) {
		return syscall.ENODEV
	}
	copy(req.name[:], iface)
	req.data = data
	for {
		_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&req)))
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

// DriverInfo is ETHTOOL_GDRVINFO, what `ethtool -i` prints.
func (r *Reader) DriverInfo(iface string) (DriverInfo, error) {
	info := unix.EthtoolDrvinfo{Cmd: unix.ETHTOOL_GDRVINFO}
	if err := r.do(iface, unsafe.Pointer(&info)); err != nil {
		return DriverInfo{}, fmt.Errorf("ethtool %s: driver info: %w", iface, err)
	}
	return DriverInfo{
		Driver:              unix.ByteSliceToString(info.Driver[:]),
		Version:             unix.ByteSliceToString(info.Version[:]),
		FirmwareVersion:     unix.ByteSliceToString(info.Fw_version[:]),
		ExpansionROMVersion: unix.ByteSliceToString(info.Erom_version[:]),
		BusInfo:             unix.ByteSliceToString(info.Bus_info[:]),
		SupportsStatistics:  info.N_stats > 0,
		SupportsTest:        info.Testinfo_len > 0,
		SupportsEEPROM:      info.Eedump_len > 0,
		SupportsRegDump:     info.Regdump_len > 0,
		SupportsPrivFlags:   info.N_priv_flags > 0,
	}, nil
}

// Pause is ETHTOOL_GPAUSEPARAM, the settings `ethtool -a` prints (without
// the negotiated result and the frame counters, which are not in it).
func (r *Reader) Pause(iface string) (Pause, error) {
	// struct ethtool_pauseparam: cmd, autoneg, rx_pause, tx_pause.
	p := [4]uint32{unix.ETHTOOL_GPAUSEPARAM}
	if err := r.do(iface, unsafe.Pointer(&p[0])); err != nil {
		return Pause{}, fmt.Errorf("ethtool %s: pause: %w", iface, err)
	}
	return Pause{Interface: iface, Autoneg: p[1] != 0, RX: p[2] != 0, TX: p[3] != 0}, nil
}

// MaxModuleEEPROM bounds the module memory read by ModuleEEPROM: 640 bytes
// is ETH_MODULE_SFF_8636_MAX_LEN, the largest the ioctl reports (the lower
// page and four upper pages of a QSFP); paged CMIS memory needs netlink.
const MaxModuleEEPROM = 640

// ModuleEEPROM reads the module memory the driver exposes to the ioctl
// (ETHTOOL_GMODULEINFO for its size, then ETHTOOL_GMODULEEEPROM): the flat
// first pages, as `ethtool -m` printed them before netlink.
func (r *Reader) ModuleEEPROM(iface string) ([]byte, error) {
	// struct ethtool_modinfo: cmd, type, eeprom_len, reserved[8].
	var info [11]uint32
	info[0] = unix.ETHTOOL_GMODULEINFO
	if err := r.do(iface, unsafe.Pointer(&info[0])); err != nil {
		return nil, fmt.Errorf("ethtool %s: module info: %w", iface, err)
	}
	n := info[2]
	if n == 0 || n > MaxModuleEEPROM {
		return nil, fmt.Errorf("ethtool %s: module EEPROM of %d bytes, want 1 to %d", iface, n, MaxModuleEEPROM)
	}
	// struct ethtool_eeprom: cmd, magic, offset, len, then the data; u32
	// words keep the header aligned.
	buf := make([]uint32, 4+(n+3)/4)
	buf[0], buf[2], buf[3] = unix.ETHTOOL_GMODULEEEPROM, 0, n
	if err := r.do(iface, unsafe.Pointer(&buf[0])); err != nil {
		return nil, fmt.Errorf("ethtool %s: module EEPROM: %w", iface, err)
	}
	got := min(buf[3], n)
	data := unsafe.Slice((*byte)(unsafe.Pointer(&buf[4])), n)
	return append([]byte(nil), data[:got]...), nil
}

// do runs one ioctl on the socket.
func (r *Reader) do(iface string, data unsafe.Pointer) error {
	return r.sock.Do(func(s *socket) error { return ioctl(s.fd, iface, data) })
}
