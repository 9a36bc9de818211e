package fleetsim

import (
	"context"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/annotations"
)

// memStore is the storage the simulated Prometheus scrapes into and its
// rules read and write: every sample a TSDB would hold, with the same
// transactions (samples visible on Commit), ordering rules and stale
// markers, kept as runs of equal values at a constant step. A scraped
// series repeats one value scrape after scrape, so a trial's hours of
// samples take a few runs per series, and a query seeks by binary search
// instead of decoding compressed chunks from their start.
// (memstore_test.go checks it answers every query as Prometheus' TSDB does.)
type memStore struct {
	mu     sync.RWMutex
	series []*memSeries // ref-1
	byHash map[uint64][]*memSeries
	// born lists each name's series in the order they were made (or came
	// back after prune); a selection keeps its sorted match and how much of
	// born it has looked at.
	born     map[string][]*memSeries
	selected map[string]*selection
	// lastChange is, per metric name, the newest sample (ms) that was not
	// the same value one step after the previous sample of its series: a
	// series appearing, changing value, or going stale. lastMove is the
	// newest change of value between two samples: what changes a range of
	// samples while it holds both. A stale marker is no sample in a range,
	// so a series that ends changes a range only when its last samples
	// leave it: staleAt keeps when series ended, for the names
	// trackStale asks for.
	lastChange, lastMove map[string]int64
	staleAt              map[string][]int64
	trackStale           map[string]bool
}

type selection struct {
	seen int
	list []*memSeries // sorted by labels
}

type memSeries struct {
	lset labels.Labels
	name string
	ref  storage.SeriesRef
	runs []sampleRun
	// pruned: left out of born (and every selection) until it gets a
	// sample again.
	pruned bool
}

// sampleRun is n samples of one value, step apart from t0.
type sampleRun struct {
	t0, step int64
	n        int64
	v        float64
}

func (r *sampleRun) last() int64 { return r.t0 + (r.n-1)*r.step }

func newMemStore() *memStore {
	return &memStore{byHash: map[uint64][]*memSeries{}, born: map[string][]*memSeries{},
		selected: map[string]*selection{}, lastChange: map[string]int64{}, lastMove: map[string]int64{},
		staleAt: map[string][]int64{}, trackStale: map[string]bool{}}
}

func (s *memSeries) lastT() (int64, float64, bool) {
	if len(s.runs) == 0 {
		return 0, 0, false
	}
	r := &s.runs[len(s.runs)-1]
	return r.last(), r.v, true
}

// add appends a sample and reports whether it starts a new run.
func (s *memSeries) add(t int64, v float64) bool {
	if n := len(s.runs); n > 0 {
		r := &s.runs[n-1]
		if math.Float64bits(r.v) == math.Float64bits(v) {
			if r.n == 1 && t > r.t0 {
				r.step, r.n = t-r.t0, 2
				return false
			}
			if t == r.last()+r.step {
				r.n++
				return false
			}
		}
	}
	s.runs = append(s.runs, sampleRun{t0: t, n: 1, v: v})
	return true
}

// getOrCreate finds the series of lset, making it when new.
func (m *memStore) getOrCreate(lset labels.Labels) *memSeries {
	h := lset.Hash()
	for _, s := range m.byHash[h] {
		if labels.Equal(s.lset, lset) {
			return s
		}
	}
	name := lset.Get(labels.MetricName)
	s := &memSeries{lset: lset.Copy(), name: name, ref: storage.SeriesRef(len(m.series) + 1)}
	m.series = append(m.series, s)
	m.byHash[h] = append(m.byHash[h], s)
	m.born[name] = append(m.born[name], s)
	return s
}

// AppenderV2 implements storage.AppendableV2.
func (m *memStore) AppenderV2(context.Context) storage.AppenderV2 { return &memAppender{m: m} }

type memAppender struct {
	m       *memStore
	pending []pendingSample
}

type pendingSample struct {
	s *memSeries
	t int64
	v float64
}

func (a *memAppender) Append(ref storage.SeriesRef, ls labels.Labels, _, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, _ storage.AOptions) (storage.SeriesRef, error) {
	if h != nil || fh != nil {
		return 0, storage.ErrNativeHistogramsDisabled
	}
	a.m.mu.Lock()
	defer a.m.mu.Unlock()
	var s *memSeries
	if ref > 0 && int(ref) <= len(a.m.series) {
		s = a.m.series[ref-1] // a reference is trusted, as the TSDB trusts it
	} else {
		s = a.m.getOrCreate(ls)
		ref = s.ref
	}
	if lt, lv, ok := s.lastT(); ok {
		switch {
		case t < lt:
			return ref, storage.ErrOutOfOrderSample
		case t == lt && math.Float64bits(v) != math.Float64bits(lv):
			return ref, storage.ErrDuplicateSampleForTimestamp
		case t == lt:
			return ref, nil // the same sample again: ignored, as the TSDB does
		}
	}
	a.pending = append(a.pending, pendingSample{s, t, v})
	return ref, nil
}

func (a *memAppender) Commit() error {
	a.m.mu.Lock()
	defer a.m.mu.Unlock()
	for _, p := range a.pending {
		if lt, _, ok := p.s.lastT(); ok && p.t <= lt {
			continue // a second sample for one timestamp in one transaction
		}
		if p.s.pruned {
			p.s.pruned = false
			a.m.born[p.s.name] = append(a.m.born[p.s.name], p.s)
		}
		first := len(p.s.runs) == 0 || value.IsStaleNaN(p.s.runs[len(p.s.runs)-1].v)
		if p.s.add(p.t, p.v) {
			name := p.s.name
			a.m.lastChange[name] = max(a.m.lastChange[name], p.t)
			switch {
			case value.IsStaleNaN(p.v):
				if a.m.trackStale[name] {
					a.m.staleAt[name] = append(a.m.staleAt[name], p.t)
				}
			case !first:
				a.m.lastMove[name] = max(a.m.lastMove[name], p.t)
			}
		}
	}
	a.pending = nil
	return nil
}

func (a *memAppender) Rollback() error { a.pending = nil; return nil }

// Querier implements storage.Queryable.
func (m *memStore) Querier(mint, maxt int64) (storage.Querier, error) {
	return &memQuerier{m: m, mint: mint, maxt: maxt}, nil
}

type memQuerier struct {
	m          *memStore
	mint, maxt int64
}

func (q *memQuerier) Select(_ context.Context, _ bool, hints *storage.SelectHints, matchers ...*labels.Matcher) storage.SeriesSet {
	q.m.mu.Lock()
	defer q.m.mu.Unlock()
	mint, maxt := q.mint, q.maxt
	if hints != nil {
		mint, maxt = hints.Start, hints.End
	}
	set := &memSeriesSet{i: -1}
	for _, s := range q.m.matching(matchers) {
		if len(s.runs) == 0 || s.runs[0].t0 > maxt {
			continue
		}
		if lt, _, _ := s.lastT(); lt < mint {
			continue
		}
		// The runs as of now: later appends do not move a query's data.
		set.list = append(set.list, memView{lset: s.lset, runs: s.runs[:len(s.runs):len(s.runs)], lastN: s.runs[len(s.runs)-1].n})
	}
	return set
}

// matching lists the series the matchers select, sorted by labels; the
// match of a named selector is kept, and extended by the series made since.
func (m *memStore) matching(matchers []*labels.Matcher) []*memSeries {
	name, named := "", false
	for _, mt := range matchers {
		if mt.Name == labels.MetricName && mt.Type == labels.MatchEqual {
			name, named = mt.Value, true
			break
		}
	}
	if !named {
		var all []*memSeries
		for _, b := range m.born {
			all = append(all, m.filter(b, matchers)...)
		}
		slices.SortFunc(all, func(a, b *memSeries) int { return labels.Compare(a.lset, b.lset) })
		return all
	}
	var key strings.Builder
	for _, mt := range matchers {
		key.WriteString(mt.String())
		key.WriteByte(0)
	}
	sel := m.selected[key.String()]
	if sel == nil {
		sel = &selection{}
		m.selected[key.String()] = sel
	}
	born := m.born[name]
	if added := m.filter(born[sel.seen:], matchers); len(added) > 0 {
		cmp := func(a, b *memSeries) int { return labels.Compare(a.lset, b.lset) }
		slices.SortFunc(added, cmp)
		merged := make([]*memSeries, 0, len(sel.list)+len(added))
		i, j := 0, 0
		for i < len(sel.list) && j < len(added) {
			if cmp(sel.list[i], added[j]) <= 0 {
				merged, i = append(merged, sel.list[i]), i+1
			} else {
				merged, j = append(merged, added[j]), j+1
			}
		}
		sel.list = append(append(merged, sel.list[i:]...), added[j:]...)
	}
	sel.seen = len(born)
	return sel.list
}

// prune leaves out of every selection the series whose last sample is older
// than cutoff(name): no query from now on can read them (a query reads no
// further back than its range and the lookback), so they only cost time.
// One that gets a sample again comes back.
func (m *memStore) prune(cutoff func(name string) int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, born := range m.born {
		c := cutoff(name)
		m.born[name] = slices.DeleteFunc(born, func(s *memSeries) bool {
			lt, _, ok := s.lastT()
			s.pruned = ok && lt < c
			return s.pruned
		})
	}
	clear(m.selected)
	for name, at := range m.staleAt {
		c := cutoff(name)
		m.staleAt[name] = slices.DeleteFunc(at, func(e int64) bool { return e < c })
	}
}

func (m *memStore) filter(candidates []*memSeries, matchers []*labels.Matcher) []*memSeries {
	var out []*memSeries
	for _, s := range candidates {
		ok := true
		for _, mt := range matchers {
			if !mt.Matches(s.lset.Get(mt.Name)) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, s)
		}
	}
	return out
}

func (q *memQuerier) LabelValues(_ context.Context, name string, _ *storage.LabelHints, matchers ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	set := q.Select(context.Background(), false, nil, matchers...)
	seen := map[string]bool{}
	for set.Next() {
		if v := set.At().Labels().Get(name); v != "" {
			seen[v] = true
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil, nil
}

func (q *memQuerier) LabelNames(_ context.Context, _ *storage.LabelHints, matchers ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	set := q.Select(context.Background(), false, nil, matchers...)
	seen := map[string]bool{}
	for set.Next() {
		set.At().Labels().Range(func(l labels.Label) { seen[l.Name] = true })
	}
	return slices.Sorted(maps.Keys(seen)), nil, nil
}

func (q *memQuerier) Close() error { return nil }

type memSeriesSet struct {
	list []memView
	i    int
}

func (s *memSeriesSet) Next() bool                        { s.i++; return s.i < len(s.list) }
func (s *memSeriesSet) At() storage.Series                { return &s.list[s.i] }
func (s *memSeriesSet) Err() error                        { return nil }
func (s *memSeriesSet) Warnings() annotations.Annotations { return nil }

// memView is a series as a query saw it.
type memView struct {
	lset  labels.Labels
	runs  []sampleRun
	lastN int64 // the last run's length then (it grows in place)
}

func (v *memView) Labels() labels.Labels { return v.lset }

func (v *memView) Iterator(it chunkenc.Iterator) chunkenc.Iterator {
	if r, ok := it.(*runIterator); ok {
		*r = runIterator{v: v, run: 0, k: -1}
		return r
	}
	return &runIterator{v: v, k: -1}
}

// runIterator walks the samples of a view.
type runIterator struct {
	v   *memView
	run int
	k   int64 // index in the run; -1 before the first Next
}

func (it *runIterator) n(i int) int64 {
	if i == len(it.v.runs)-1 {
		return it.v.lastN
	}
	return it.v.runs[i].n
}

func (it *runIterator) Next() chunkenc.ValueType {
	if it.run >= len(it.v.runs) {
		return chunkenc.ValNone
	}
	it.k++
	if it.k >= it.n(it.run) {
		it.run++
		it.k = 0
		if it.run >= len(it.v.runs) {
			return chunkenc.ValNone
		}
	}
	return chunkenc.ValFloat
}

func (it *runIterator) Seek(t int64) chunkenc.ValueType {
	if it.run >= len(it.v.runs) {
		return chunkenc.ValNone
	}
	if it.k >= 0 && it.AtT() >= t {
		return chunkenc.ValFloat
	}
	runs := it.v.runs
	i := sort.Search(len(runs), func(i int) bool {
		r := runs[i]
		return r.t0+(it.n(i)-1)*r.step >= t
	})
	if i < it.run {
		i = it.run
	}
	if i >= len(runs) {
		it.run = len(runs)
		return chunkenc.ValNone
	}
	r := runs[i]
	k := int64(0)
	if t > r.t0 {
		k = (t - r.t0 + r.step - 1) / r.step
	}
	if i == it.run && k < it.k {
		k = it.k
	}
	it.run, it.k = i, k
	return chunkenc.ValFloat
}

func (it *runIterator) At() (int64, float64) {
	r := &it.v.runs[it.run]
	return r.t0 + it.k*r.step, r.v
}

func (it *runIterator) AtT() int64 {
	r := &it.v.runs[it.run]
	return r.t0 + it.k*r.step
}

func (it *runIterator) AtST() int64 { return 0 }

func (it *runIterator) AtHistogram(*histogram.Histogram) (int64, *histogram.Histogram) {
	return 0, nil
}

func (it *runIterator) AtFloatHistogram(*histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	return 0, nil
}

func (it *runIterator) Err() error { return nil }
