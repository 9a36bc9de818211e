package fleetsim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
)

// RuleSet is alerts/ as Prometheus loads it, and the part of it that can
// change a judged alert: the judged alerts and the recording rules they read
// (transitively), each in its group, in its order, at its group's interval
// and offset, and the metric names those rules select. The other rules
// cannot change the table, so they are not evaluated, and series no
// evaluated rule selects are not stored.
type RuleSet struct {
	Files []string
	// Interval is the global evaluation_interval (deploy/prometheus).
	Interval time.Duration
	// Groups are the evaluated groups (file;name), Skipped the others.
	Groups, Skipped []string
	// Rules and Left count the rules evaluated and those left out.
	Rules, Left int
	// Reads are the metric names the evaluated rules select; nil when a
	// selector has no fixed name (then every series is stored).
	Reads map[string]bool
	// Judged are the judged alerts the rules define.
	Judged []string
	// LongestFor is the longest for: of a judged alert.
	LongestFor time.Duration
	// Digest names the evaluated rules: their groups (file, name, interval:
	// the evaluation times) and their text, in order.
	Digest string
	// needed are, per evaluated group, the indices of its evaluated rules.
	needed map[string][]int
	reads  map[string]groupReads
}

// groupReads is what a group's evaluation depends on besides its own state.
type groupReads struct {
	// window is, per metric name read, how far back before the evaluation
	// a change of its series can still change the result (ms): the range
	// of its selectors (0: instant).
	window map[string]int64
	// unnamed: a selector without a metric name.
	unnamed bool
	// clock: a rule depends on the evaluation time itself (time(), the
	// sample timestamps or counts in a window, subqueries, @, offsets),
	// not only on the values it reads.
	clock bool
}

// clockFree are the range functions that give the same result on any
// window of unchanging samples, however many there are and wherever they sit.
var clockFree = map[string]bool{
	"rate": true, "increase": true, "irate": true, "delta": true, "idelta": true, "changes": true, "resets": true,
	"max_over_time": true, "min_over_time": true, "last_over_time": true, "first_over_time": true,
	"present_over_time": true, "absent_over_time": true,
}

// clockCalls read the evaluation time.
var clockCalls = map[string]bool{
	"time": true, "timestamp": true, "minute": true, "hour": true, "day_of_month": true, "day_of_week": true,
	"day_of_year": true, "days_in_month": true, "month": true, "year": true,
}

// add notes what expr reads.
func (r *groupReads) add(expr parser.Expr) {
	parser.Inspect(expr, func(n parser.Node, path []parser.Node) error {
		switch n := n.(type) {
		case *parser.SubqueryExpr:
			r.clock = true
		case *parser.Call:
			if clockCalls[n.Func.Name] {
				r.clock = true
			}
			for _, a := range n.Args {
				if _, ok := a.(*parser.MatrixSelector); ok && !clockFree[n.Func.Name] {
					r.clock = true
				}
			}
		case *parser.VectorSelector:
			if n.Timestamp != nil || n.StartOrEnd != 0 || n.OriginalOffset != 0 {
				r.clock = true
			}
			var w time.Duration
			if len(path) > 0 {
				if m, ok := path[len(path)-1].(*parser.MatrixSelector); ok {
					w = m.Range
				}
			}
			name := selectorName(n)
			if name == "" {
				r.unnamed = true
				return nil
			}
			r.window[name] = max(r.window[name], w.Milliseconds())
		}
		return nil
	})
}

var judgedRE = regexp.MustCompile(`^(` + judgedAlerts + `)$`)

// LoadRules loads every rule file in dir and finds the rules the judged
// alerts depend on.
func LoadRules(dir string, interval time.Duration) (*RuleSet, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no rule files in %s", dir)
	}
	rs := &RuleSet{Files: files, Interval: interval, needed: map[string][]int{}, reads: map[string]groupReads{}}
	groups, err := loadGroups(rs, nil)
	if err != nil {
		return nil, err
	}
	keys := slices.Sorted(maps.Keys(groups))
	needed := map[rules.Rule]bool{}
	for _, k := range keys {
		for _, r := range groups[k].AlertingRules() {
			if judgedRE.MatchString(r.Name()) {
				needed[r] = true
				rs.Judged = append(rs.Judged, r.Name())
				rs.LongestFor = max(rs.LongestFor, r.HoldDuration())
			}
		}
	}
	if len(rs.Judged) == 0 {
		return nil, fmt.Errorf("%s defines none of the judged alerts (%s)", dir, judgedAlerts)
	}
	// Close over what the needed rules read: the recording rules of those
	// names, every alerting rule when ALERTS is read.
	readAll := false
	rs.Reads = map[string]bool{}
	for changed := true; changed; {
		changed = false
		for r := range needed {
			var rr groupReads
			rr.window = map[string]int64{}
			rr.add(r.Query())
			readAll = readAll || rr.unnamed
			for n := range rr.window {
				rs.Reads[n] = true
			}
		}
		for _, k := range keys {
			for _, r := range groups[k].Rules() {
				if needed[r] {
					continue
				}
				_, alerting := r.(*rules.AlertingRule)
				if readAll || rs.Reads[r.Name()] || alerting && (rs.Reads["ALERTS"] || rs.Reads["ALERTS_FOR_STATE"]) {
					needed[r], changed = true, true
				}
			}
		}
	}
	if readAll {
		rs.Reads = nil
	}
	digest := sha256.New()
	for _, k := range keys {
		reads := groupReads{window: map[string]int64{}}
		for i, r := range groups[k].Rules() {
			if needed[r] {
				fmt.Fprintf(digest, "%s %v\n%s\n", k, groups[k].Interval(), r)
				rs.needed[k] = append(rs.needed[k], i)
				reads.add(r.Query())
				rs.Rules++
			} else {
				rs.Left++
			}
		}
		if len(rs.needed[k]) > 0 {
			rs.Groups = append(rs.Groups, k)
			rs.reads[k] = reads
		} else {
			rs.Skipped = append(rs.Skipped, k)
		}
	}
	sort.Strings(rs.Judged)
	rs.Digest = hex.EncodeToString(digest.Sum(nil))
	return rs, nil
}

func selectorName(vs *parser.VectorSelector) string {
	if vs.Name != "" {
		return vs.Name
	}
	for _, m := range vs.LabelMatchers {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			return m.Value
		}
	}
	return ""
}

// Stores reports whether the series of a metric must be stored.
func (rs *RuleSet) Stores(name string) bool { return rs.Reads == nil || rs.Reads[name] || name == "up" }

// loadGroups loads the rule files into groups of a manager on storage.
func loadGroups(rs *RuleSet, opts *rules.ManagerOptions) (map[string]*rules.Group, error) {
	if opts == nil {
		opts = &rules.ManagerOptions{}
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	opts.NotifyFunc = func(context.Context, string, ...*rules.Alert) {}
	m := rules.NewManager(opts)
	groups, errs := m.LoadGroups(rs.Interval, labels.EmptyLabels(), "", nil, false, rs.Files...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("loading %v: %w", rs.Files, errors.Join(errs...))
	}
	return groups, nil
}

// server is one Prometheus: a store, the engine, and the evaluated rule
// groups, driven by the simulation's clock instead of its own.
type server struct {
	dir    string
	db     seriesStore
	mem    *memStore // nil on the TSDB
	tsdb   *tsdb.DB
	engine *promql.Engine
	groups []*groupState
	ctx    context.Context
	// capture collects the samples a group's evaluation appends.
	capture *[]capturedSample
	// step is the longest of the scrape and evaluation intervals (ms): a
	// series read in a range has two samples that far after it appeared.
	step int64
	// window is how far back a range of each metric name reaches (ms);
	// pruned is when memStore was last pruned.
	window map[string]int64
	pruned int64
	// Evaluations and Skipped count the group evaluations run and replayed.
	Evaluations, Skipped int
	// Queries and Reused count the rules' queries run and answered again
	// from their last result.
	Queries, Reused int
	exact           bool
	engineQuery     rules.QueryFunc
	answers         map[string]*answer
}

// answer is a query's last result and what it reads.
type answer struct {
	at    int64
	vec   promql.Vector
	reads groupReads
}

type groupState struct {
	g    *rules.Group
	next time.Time
	// judging: the group holds a judged alert.
	judging bool
	reads   groupReads
	// lastReal is the last evaluation that ran; lastOut what it appended
	// (stale markers aside).
	lastReal time.Time
	lastOut  []capturedSample
}

type capturedSample struct {
	lset labels.Labels
	ref  promstorage.SeriesRef
	v    float64
}

// seriesStore is where the server keeps its series.
type seriesStore interface {
	promstorage.Queryable
	promstorage.AppendableV2
}

// newServer starts a Prometheus at start on memStore, or on Prometheus'
// own TSDB (withTSDB: slower, and every evaluation runs; memstore_test.go
// compares the two).
func newServer(rs *RuleSet, start time.Time, scrape time.Duration, withTSDB, exact bool) (*server, error) {
	s := &server{ctx: context.Background(), step: max(scrape, rs.Interval).Milliseconds(), exact: exact || withTSDB, window: map[string]int64{}}
	if withTSDB {
		dir, err := os.MkdirTemp("", "fleetsim-tsdb-")
		if err != nil {
			return nil, err
		}
		opts := tsdb.DefaultOptions()
		opts.WALSegmentSize = -1 // nothing to recover: no write-ahead log
		// One block range longer than any trial: the head is never compacted.
		opts.MinBlockDuration = (30 * 24 * time.Hour).Milliseconds()
		opts.MaxBlockDuration = opts.MinBlockDuration
		db, err := tsdb.Open(dir, slog.New(slog.DiscardHandler), nil, opts, nil)
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s.dir, s.tsdb, s.db = dir, db, db
	} else {
		s.mem = newMemStore()
		s.db = s.mem
	}
	s.engine = promql.NewEngine(promql.EngineOpts{
		Logger: slog.New(slog.DiscardHandler), MaxSamples: 200_000_000, Timeout: time.Hour,
		LookbackDelta: 5 * time.Minute, EnableAtModifier: true, EnableNegativeOffset: true,
	})
	s.engineQuery = rules.EngineQueryFunc(s.engine, s.db)
	s.answers = map[string]*answer{}
	opts := &rules.ManagerOptions{AppendableV2: capturing{s}, Queryable: s.db, QueryFunc: s.query, Context: s.ctx}
	groups, err := loadGroups(rs, opts)
	if err != nil {
		s.close()
		return nil, err
	}
	for _, k := range rs.Groups {
		// The group with its evaluated rules only: the same name, file (so
		// the same offset), interval and order.
		g, all := groups[k], groups[k].Rules()
		var kept []rules.Rule
		for _, i := range rs.needed[k] {
			kept = append(kept, all[i])
		}
		g = rules.NewGroup(rules.GroupOptions{Name: g.Name(), File: g.File(), Interval: g.Interval(), Limit: g.Limit(), Rules: kept, Opts: opts})
		gs := &groupState{g: g, reads: rs.reads[k]}
		for _, r := range gs.g.AlertingRules() {
			// A running Prometheus: it writes ALERTS_FOR_STATE as it goes.
			r.SetRestored(true)
			gs.judging = gs.judging || judgedRE.MatchString(r.Name())
		}
		if s.mem != nil {
			for name, w := range gs.reads.window {
				if w > 0 {
					s.mem.trackStale[name] = true
				}
				s.window[name] = max(s.window[name], w)
			}
		}
		gs.next = gs.g.EvalTimestamp(start.UnixNano())
		for gs.next.Before(start) {
			gs.next = gs.next.Add(gs.g.Interval())
		}
		s.groups = append(s.groups, gs)
	}
	return s, nil
}

func (s *server) close() {
	if s.tsdb != nil {
		s.tsdb.Close()
		os.RemoveAll(s.dir)
	}
}

// nextEval is the group due first and when.
func (s *server) nextEval() (int, time.Time) {
	best := 0
	for i, g := range s.groups {
		if g.next.Before(s.groups[best].next) {
			best = i
		}
	}
	return best, s.groups[best].next
}

// unchanged reports whether evaluating gs at ts must give what its last
// evaluation gave, so that appending that again is the evaluation: no
// series it reads changed since (within its range windows), none of its
// rules depends on the clock, and none of its alerts is pending or kept
// firing (their state moves with time alone).
func (s *server) unchanged(gs *groupState) bool {
	if s.exact || s.mem == nil || gs.lastReal.IsZero() || gs.reads.clock {
		return false
	}
	if s.readsChanged(gs.reads, gs.lastReal.UnixMilli(), gs.next.UnixMilli()) {
		return false
	}
	for _, r := range gs.g.AlertingRules() {
		for _, a := range r.ActiveAlerts() {
			if a.State == rules.StatePending || !a.KeepFiringSince.IsZero() {
				return false
			}
		}
	}
	return true
}

// query is the rules' query function: the engine's answer, or, when
// nothing the query reads changed since it last ran (the same test as
// unchanged's), that answer again at the new time. The rules themselves
// (recording, alert states and for:, stale markers) run as always.
func (s *server) query(ctx context.Context, qs string, t time.Time) (promql.Vector, error) {
	a := s.answers[qs]
	if a == nil {
		expr, err := parser.NewParser(parser.Options{}).ParseExpr(qs)
		if err != nil {
			return nil, err
		}
		a = &answer{at: -1, reads: groupReads{window: map[string]int64{}}}
		a.reads.add(expr)
		s.answers[qs] = a
	}
	now := t.UnixMilli()
	if a.at >= 0 && !s.exact && s.mem != nil && !a.reads.clock && !a.reads.unnamed && !s.readsChanged(a.reads, a.at, now) {
		s.Reused++
		out := make(promql.Vector, len(a.vec))
		for i, smp := range a.vec {
			smp.T = now
			out[i] = smp
		}
		return out, nil
	}
	s.Queries++
	vec, err := s.engineQuery(ctx, qs, t)
	if err != nil {
		return nil, err
	}
	a.at, a.vec = now, slices.Clone(vec)
	return vec, nil
}

// readsChanged reports whether any series read may read differently at now
// than at last.
func (s *server) readsChanged(r groupReads, last, now int64) bool {
	for name, window := range r.window {
		if s.changedSince(name, window, last, now) {
			return true
		}
	}
	return false
}

// changedSince reports whether the series of name may read differently at
// now than at the evaluation at last, through a selector reaching window
// back (0: an instant selector). A change at last itself may have come
// after that evaluation (a rule later in the group, a group at the same
// instant), so it counts.
func (s *server) changedSince(name string, window, last, now int64) bool {
	m := s.mem
	if window == 0 {
		return m.lastChange[name] >= last
	}
	// A range (its functions are clockFree) gives the same result on every
	// window of unchanging samples that holds two of them: it changes while
	// a change of value is inside it, just after a series appears, and when
	// the last samples of an ended series leave it.
	if m.lastMove[name]+window >= last || m.lastChange[name]+2*s.step >= last {
		return true
	}
	for _, e := range m.staleAt[name] {
		if leave := e + window; leave+s.step >= last && leave-3*s.step <= now {
			return true
		}
	}
	return false
}

// eval evaluates group i at its time, or appends its last results again
// when unchanged says the evaluation would give them. For a group holding a
// judged alert it returns ALERTS{alertstate="firing"} of the judged alerts.
func (s *server) eval(i int) (firing []Alert, judged bool, err error) {
	gs := s.groups[i]
	g, ts := gs.g, gs.next
	if now := ts.UnixMilli(); s.mem != nil && now-s.pruned > (10*time.Minute).Milliseconds() {
		// Past the name's range and the lookback (5 minutes), with a margin.
		s.mem.prune(func(name string) int64 { return now - s.window[name] - (10 * time.Minute).Milliseconds() })
		s.pruned = now
	}
	if s.unchanged(gs) {
		gs.next = ts.Add(g.Interval())
		s.Skipped++
		app := s.db.AppenderV2(s.ctx)
		for _, c := range gs.lastOut {
			if _, err := app.Append(c.ref, c.lset, 0, ts.UnixMilli(), c.v, nil, nil, promstorage.AOptions{}); err != nil {
				app.Rollback()
				return nil, false, fmt.Errorf("replaying %s at %v: %s: %w", g.Name(), ts, c.lset, err)
			}
		}
		if err := app.Commit(); err != nil || !gs.judging {
			return nil, false, err
		}
		// ALERTS at ts holds the other groups' alerts too, which may have
		// changed since this group last ran: read it, as a run does.
		firing, err := s.firing(ts)
		return firing, true, err
	}
	gs.next = ts.Add(g.Interval())
	s.Evaluations++
	var out []capturedSample
	s.capture = &out
	g.Eval(s.ctx, ts)
	s.capture = nil
	gs.lastReal, gs.lastOut = ts, out
	for _, r := range g.Rules() {
		if err := r.LastError(); err != nil {
			return nil, false, fmt.Errorf("rule %s of %s at %v: %w", r.Name(), g.Name(), ts, err)
		}
	}
	if !gs.judging {
		return nil, false, nil
	}
	firing, err = s.firing(ts)
	return firing, true, err
}

// firing queries ALERTS{alertstate="firing"} of the judged alerts at ts.
func (s *server) firing(ts time.Time) ([]Alert, error) {
	q, err := s.engine.NewInstantQuery(s.ctx, s.db, nil, `ALERTS{alertstate="firing",alertname=~"`+judgedAlerts+`"}`, ts)
	if err != nil {
		return nil, err
	}
	defer q.Close()
	res := q.Exec(s.ctx)
	if res.Err != nil {
		return nil, res.Err
	}
	vec, err := res.Vector()
	if err != nil {
		return nil, err
	}
	var firing []Alert
	for _, smp := range vec {
		a := Alert{Labels: map[string]string{}}
		smp.Metric.Range(func(l labels.Label) {
			switch l.Name {
			case labels.AlertName:
				a.Name = l.Value
			case labels.MetricName, "alertstate", "severity":
			default:
				a.Labels[l.Name] = l.Value
			}
		})
		firing = append(firing, a)
	}
	return firing, nil
}

func (s *server) appender() promstorage.AppenderV2 { return s.db.AppenderV2(s.ctx) }

// capturing is the storage the rule groups append to: the server's, noting
// what an evaluation appends.
type capturing struct{ s *server }

func (c capturing) AppenderV2(ctx context.Context) promstorage.AppenderV2 {
	return &capturingAppender{AppenderV2: c.s.db.AppenderV2(ctx), s: c.s}
}

type capturingAppender struct {
	promstorage.AppenderV2
	s    *server
	kept []capturedSample
}

func (a *capturingAppender) Append(ref promstorage.SeriesRef, ls labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts promstorage.AOptions) (promstorage.SeriesRef, error) {
	ref, err := a.AppenderV2.Append(ref, ls, st, t, v, h, fh, opts)
	if err == nil && a.s.capture != nil && !value.IsStaleNaN(v) {
		a.kept = append(a.kept, capturedSample{ls, ref, v})
	}
	return ref, err
}

func (a *capturingAppender) Commit() error {
	err := a.AppenderV2.Commit()
	if err == nil && a.s.capture != nil {
		*a.s.capture = append(*a.s.capture, a.kept...)
	}
	return err
}
