package collector

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/roce-exporter/roce_exporter/node"
)

// The exporter writes the Prometheus text format itself instead of going
// through client_golang's const metrics: those cost a dozen allocations per
// series (label pairs, protobuf structs, sorting), which on a 32-port node
// is ~100k allocations per scrape. A sample here is a pointer, a value and
// a range in a shared label arena, all in buffers reused across scrapes.
// The output is byte-identical to client_golang's text encoding (the
// golden files are the proof).

type metricType uint8

const (
	typeGauge metricType = iota
	typeCounter
	typeUntyped
)

func (t metricType) String() string {
	switch t {
	case typeCounter:
		return "counter"
	case typeUntyped:
		return "untyped"
	}
	return "gauge"
}

// Desc describes a metric family: name, help, type and label names.
type Desc struct {
	name   string
	help   string
	typ    metricType
	labels []string
	// order lists label indices sorted by label name, the order the text
	// format and client_golang use.
	order []int
	// header is the pre-rendered HELP and TYPE lines.
	header []byte
}

func newDesc(name, help string, typ metricType, labels ...string) *Desc {
	d := &Desc{name: name, help: help, typ: typ, labels: labels}
	d.order = make([]int, len(labels))
	for i := range d.order {
		d.order[i] = i
	}
	sort.SliceStable(d.order, func(a, b int) bool { return labels[d.order[a]] < labels[d.order[b]] })
	h := make([]byte, 0, len(name)*2+len(help)+32)
	h = append(h, "# HELP "...)
	h = append(h, name...)
	h = append(h, ' ')
	h = appendEscaped(h, help, false)
	h = append(h, "\n# TYPE "...)
	h = append(h, name...)
	h = append(h, ' ')
	h = append(h, typ.String()...)
	h = append(h, '\n')
	d.header = h
	return d
}

func newGaugeDesc(name, help string, labels ...string) *Desc {
	return newDesc(name, help, typeGauge, labels...)
}

func newCounterDesc(name, help string, labels ...string) *Desc {
	return newDesc(name, help, typeCounter, labels...)
}

type sample struct {
	desc   *Desc
	value  float64
	lo, hi int32 // label values: Sink.labels[lo:hi]
	// owner is the index of the collector that emitted the sample, or
	// noOwner for the exporter's own bookkeeping series.
	owner int32
}

const noOwner = -1

// Sink collects the samples of one collection. Its buffers are reused:
// reset keeps the capacity.
type Sink struct {
	samples []sample
	labels  []string
	owner   int32
}

func (s *Sink) reset() {
	s.samples = s.samples[:0]
	clear(s.labels) // drop references to label strings of the last scrape
	s.labels = s.labels[:0]
	s.owner = noOwner
}

// emit records one series. labels must match the Desc's label names.
func (s *Sink) emit(d *Desc, v float64, labels ...string) {
	if len(labels) != len(d.labels) {
		panic("collector: " + d.name + ": wrong number of label values")
	}
	lo := int32(len(s.labels))
	s.labels = append(s.labels, labels...)
	s.samples = append(s.samples, sample{desc: d, value: v, lo: lo, hi: int32(len(s.labels)), owner: s.owner})
}

// sinkMark is a position in a Sink to truncate back to.
type sinkMark struct{ samples, labels int }

func (s *Sink) mark() sinkMark { return sinkMark{len(s.samples), len(s.labels)} }

// truncate drops what was emitted after m.
func (s *Sink) truncate(m sinkMark) {
	s.samples = s.samples[:m.samples]
	clear(s.labels[m.labels:])
	s.labels = s.labels[:m.labels]
}

// sortCache remembers the order render sorted the last scrape's samples
// into. A node's series come out of the collectors in the same sequence
// scrape after scrape, so checking that the sequence is unchanged (one
// linear pass) usually replaces the sort.
type sortCache struct {
	idx    []int32
	dups   []int32
	descs  []*Desc
	labels []string
}

func (c *sortCache) matches(s *Sink) bool {
	if len(c.descs) != len(s.samples) || len(c.labels) != len(s.labels) {
		return false
	}
	for i := range s.samples {
		if c.descs[i] != s.samples[i].desc {
			return false
		}
	}
	for i, l := range s.labels {
		if c.labels[i] != l {
			return false
		}
	}
	return true
}

func (c *sortCache) remember(s *Sink) {
	c.descs = c.descs[:0]
	for i := range s.samples {
		c.descs = append(c.descs, s.samples[i].desc)
	}
	c.labels = append(c.labels[:0], s.labels...)
}

// sort orders the samples as the text format wants them: families by name,
// series by label values in label-name order, as client_golang's registry
// does. It returns the samples that repeat a series an earlier sample has
// (same name, same label values): Prometheus rejects a whole scrape that
// holds one series twice, so write leaves them out.
func (s *Sink) sort(cache *sortCache) []int32 {
	if cache.matches(s) {
		return cache.dups
	}
	idx := cache.idx[:0]
	for i := range s.samples {
		idx = append(idx, int32(i))
	}
	slices.SortFunc(idx, func(a, b int32) int {
		sa, sb := &s.samples[a], &s.samples[b]
		if c := cmp.Compare(sa.desc.name, sb.desc.name); c != 0 {
			return c
		}
		la, lb := s.labels[sa.lo:sa.hi], s.labels[sb.lo:sb.hi]
		for _, o := range sa.desc.order {
			if o >= len(lb) {
				return 1
			}
			if c := cmp.Compare(la[o], lb[o]); c != 0 {
				return c
			}
		}
		return cmp.Compare(a, b) // keep duplicates in emission order
	})
	dups := cache.dups[:0]
	for k := 1; k < len(idx); k++ {
		if s.sameSeries(&s.samples[idx[k-1]], &s.samples[idx[k]]) {
			dups = append(dups, idx[k])
		}
	}
	cache.idx, cache.dups = idx, dups
	cache.remember(s)
	return dups
}

// write appends the text format of the samples, in the order sort left in
// cache and without the repeats it found, to buf.
func (s *Sink) write(buf []byte, cache *sortCache) []byte {
	var prev *sample
	for _, i := range cache.idx {
		smp := &s.samples[i]
		d := smp.desc
		if prev != nil && s.sameSeries(prev, smp) {
			continue
		}
		if prev == nil || d != prev.desc && d.name != prev.desc.name {
			buf = append(buf, d.header...)
		}
		prev = smp
		buf = append(buf, d.name...)
		if len(d.labels) > 0 {
			vals := s.labels[smp.lo:smp.hi]
			buf = append(buf, '{')
			for j, o := range d.order {
				if j > 0 {
					buf = append(buf, ',')
				}
				buf = append(buf, d.labels[o]...)
				buf = append(buf, '=', '"')
				buf = appendEscaped(buf, vals[o], true)
				buf = append(buf, '"')
			}
			buf = append(buf, '}')
		}
		buf = append(buf, ' ')
		buf = appendFloat(buf, smp.value)
		buf = append(buf, '\n')
	}
	return buf
}

// render sorts and writes the samples; it returns the text and the repeats
// it left out.
func (s *Sink) render(buf []byte, cache *sortCache) ([]byte, []int32) {
	dups := s.sort(cache)
	return s.write(buf, cache), dups
}

// sameSeries reports whether two samples are one series. Samples of one
// family share their Desc, except families that several collectors feed
// under the same name.
func (s *Sink) sameSeries(a, b *sample) bool {
	if a.desc != b.desc && a.desc.name != b.desc.name {
		return false
	}
	return slices.Equal(s.labels[a.lo:a.hi], s.labels[b.lo:b.hi])
}

// appendEscaped escapes as the text format requires: backslash and
// newline everywhere, and double quotes in label values. A value that is
// not UTF-8 (Linux allows any bytes in interface names) is first written
// as node.LabelUTF8 gives it, \xNN for each invalid byte: one invalid label
// value makes Prometheus reject every series of the scrape. LabelUTF8 is
// one to one, so an interface named with a byte 0xff and one named with the
// text `\xff` stay two series instead of one that is refused as a duplicate.
func appendEscaped(b []byte, s string, quote bool) []byte {
	plain, ascii := scan(s)
	if (!ascii && !utf8.ValidString(s)) || (!plain && strings.Contains(s, `\x`)) {
		s = node.LabelUTF8(s)
		plain = false
	}
	if plain {
		return append(b, s...)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, '\\', '\\')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '"' && quote:
			b = append(b, '\\', '"')
		default:
			b = append(b, c)
		}
	}
	return b
}

// scan reports in one pass whether s needs no escaping (it has none of
// backslash, newline, double quote) and whether it is plain ASCII. It runs
// for every label value of every series: strings.ContainsAny, which builds
// its character set on every call, was a third of the rendering time.
func scan(s string) (plain, ascii bool) {
	plain, ascii = true, true
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\', c == '\n', c == '"':
			plain = false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return plain, ascii
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func appendFloat(b []byte, f float64) []byte {
	switch {
	case f == 1:
		return append(b, '1')
	case f == 0:
		return append(b, '0')
	case f == -1:
		return append(b, '-', '1')
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, +1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}
