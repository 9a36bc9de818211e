package nicstats

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/roce-exporter/roce_exporter/node"
)

// Entry is the meaning of one raw statistic of a string table.
type Entry struct {
	node.EthtoolCounter
	// Index is the position of the raw statistic in the string table and
	// Raw its driver name.
	Index int
	Raw   string
}

// Mapping is the classification of one string table, computed once and then
// applied to every scrape's values. Build it with NewMapping when the table
// is first seen or has changed (see Matches); applying it (Each) does no map
// lookup, no formatting and no allocation.
//
// A Mapping is immutable after construction and safe for concurrent use.
type Mapping struct {
	n           int
	fingerprint uint64
	// src is the table the mapping was built from, kept for the identity
	// check of Matches (holding it also keeps its address from being reused).
	src        []string
	entries    []Entry
	duplicates []Duplicate
}

// Duplicate records a raw name that would feed a series already fed by an
// earlier name (e.g. a driver exposing an old and a new name for the same
// counter). The later one is not emitted; emitting both would double count.
type Duplicate struct {
	Raw   string
	Index int
	// KeptRaw/KeptIndex identify the earlier name that is emitted instead.
	KeptRaw   string
	KeptIndex int
}

// NewMapping classifies every name of a string table. Names are matched
// exactly against the driver tables of node.ClassifyEthtool, so a name that is absent
// from the table produces no entry at all: a priority whose PFC counters the
// driver does not expose is never reported as 0.
func NewMapping(names []string) *Mapping {
	m := &Mapping{n: len(names), fingerprint: Fingerprint(names), src: names}
	seen := make(map[node.EthtoolCounter]int)
	for i, name := range names {
		c, ok := node.ClassifyEthtool(name)
		if !ok {
			continue
		}
		e := Entry{EthtoolCounter: c, Index: i, Raw: name}
		if kept, dup := seen[c]; dup {
			m.duplicates = append(m.duplicates, Duplicate{Raw: name, Index: i, KeptRaw: m.entries[kept].Raw, KeptIndex: m.entries[kept].Index})
			continue
		}
		seen[c] = len(m.entries)
		m.entries = append(m.entries, e)
	}
	return m
}

// ErrTableMismatch is returned by Each when the values slice does not belong
// to the string table the Mapping was built from.
var ErrTableMismatch = errors.New("nicstats: values do not match the mapping's string table")

// Each calls fn for every mapped statistic, in string-table order, with its
// raw value. It allocates
// nothing. If len(values) differs from the table length Each calls nothing
// and returns ErrTableMismatch: the caller must re-read the names and rebuild.
func (m *Mapping) Each(values []uint64, fn func(Entry, uint64)) error {
	if len(values) != m.n {
		return ErrTableMismatch
	}
	for i := range m.entries {
		e := &m.entries[i]
		fn(*e, values[e.Index])
	}
	return nil
}

// Len is the length of the string table the mapping was built from.
func (m *Mapping) Len() int { return m.n }

// Entries returns the mapped entries in string-table order. The slice is
// shared: do not modify it.
func (m *Mapping) Entries() []Entry { return m.entries }

// Duplicates returns the names that were dropped as second sources of a
// series. The slice is shared: do not modify it.
func (m *Mapping) Duplicates() []Duplicate { return m.duplicates }

// Matches reports whether names is the string table this mapping was built
// from. It compares the length first and then a 64-bit FNV-1a hash of the
// names, so it costs one pass over the bytes and no allocation.
//
// The string table of a driver changes at run time: mlx5 adds or removes the
// per-priority PFC names when PFC is toggled (possibly keeping the same count
// when PFC moves from one priority to another), and per-channel names follow
// `ethtool -L`. The cheap pattern for a collector is therefore:
//
//  1. ETHTOOL_GSSET_INFO (or GDRVINFO n_stats): if the count changed, the
//     table changed;
//  2. otherwise fetch ETHTOOL_GSTRINGS into a reused buffer and call Matches
//     (or compare Fingerprint against the cached value);
//  3. rebuild with NewMapping only when either check fails.
//
// A hash collision would make a changed table look unchanged; with 64 bits
// and a length check in front this is not a practical concern, and the worst
// outcome is one scrape of mislabelled values until the count changes.
//
// A source that hands out the same, never-modified Names slice while its
// table is unchanged (Reader does) is matched by identity, without hashing.
func (m *Mapping) Matches(names []string) bool {
	if len(names) != m.n {
		return false
	}
	if m.n > 0 && unsafe.SliceData(names) == unsafe.SliceData(m.src) {
		return true
	}
	return Fingerprint(names) == m.fingerprint
}

// Fingerprint returns the FNV-1a hash of names, each name terminated by a
// NUL byte so that ("ab","c") and ("a","bc") differ. It allocates nothing.
func Fingerprint(names []string) uint64 {
	const (
		offset64 = 14695981039346656037
		prime64  = 1099511628211
	)
	h := uint64(offset64)
	for _, s := range names {
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= prime64
		}
		// The NUL terminator: XOR with 0 changes nothing, the multiply is
		// what separates one name from the next.
		h *= prime64
	}
	return h
}

// String summarises the mapping for logs.
func (m *Mapping) String() string {
	return fmt.Sprintf("nicstats.Mapping{names: %d, mapped: %d, duplicates: %d}", m.n, len(m.entries), len(m.duplicates))
}
