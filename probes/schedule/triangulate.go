package schedule

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
)

// Triangulation: what a node does at once after a confirmed pair-test failure,
// so that the fleet's rules can tell which end (or the path, or a switch) is at
// fault within the round instead of waiting an interval for each new peer.
//
// Both ends of a failed scheduled test retest their failing rails against a
// few witnesses: the client, which saw the failure, and the far end, which
// served it (or was never reached on those rails). The witnesses are nodes of
// the same round (round-mates), which have just run their own scheduled test
// and are idle for the rest of the round: the round's nodes are the share of
// the fabric the schedule already set aside (at most probes.max_fabric_share),
// so the witness tests, which involve only round-mates, never load more than
// it. They run after every scheduled test of the round (first attempt and
// retest) has ended and finish before the next round starts, so they never
// overlap scheduled tests either. Nothing is coordinated: every node derives
// the window and its witnesses from the plan, the clock and its own results.

// RetestDelay is the pause before a failed rail is tested again.
const RetestDelay = config.RetestDelay

// WitnessTests is how many witness tests a confirmed failure gets when the
// round leaves time: with the failed peer that makes three different peers,
// enough for the rules' "two or more healthy peers" even when one of them is
// not healthy itself.
const WitnessTests = 2

// WitnessAttempts bounds the witness tests one failure may start, those that
// found the witness busy included: the per-node budget of one turn (one turn
// per interval).
const WitnessAttempts = WitnessTests + 2

// ScheduledPhase is how long the scheduled tests of a round may take from the
// round's start: a first attempt, the pause and the retest, each bounded by
// the timeout.
func (f *FleetSchedule) ScheduledPhase() time.Duration {
	return config.RetestedRunLength(f.sch.Timeout)
}

// WitnessTestLength is the time one witness test may take: it is retested on
// failure like a scheduled test, so that noise never counts as a failure.
func (f *FleetSchedule) WitnessTestLength() time.Duration {
	return config.RetestedRunLength(f.sch.Timeout)
}

// TriangulationWindow is when the actors of round (epoch, round) test their
// witnesses: from the end of the round's scheduled phase to the round's end.
// ok is false when the window holds no witness test (the round is too short:
// a plan warning says so).
func (f *FleetSchedule) TriangulationWindow(epoch int64, round int) (from, until time.Time, ok bool) {
	from = f.RoundStart(epoch, round).Add(f.ScheduledPhase())
	until = f.RoundEnd(epoch, round)
	return from, until, f.sch.Interval > 0 && !from.Add(f.WitnessTestLength()).After(until)
}

// RoundNodes are the nodes tested in round of epoch, sorted: the ones a
// triangulation of that round may use as witnesses.
func (f *FleetSchedule) RoundNodes(epoch int64, round int) []string {
	var out []string
	for _, p := range f.Pairs(epoch, round) {
		out = append(out, p.Client, p.Server)
	}
	slices.Sort(out)
	return out
}

// Outcome is one of a node's own fresh pair-test results: with whom, on which
// rail, whether it passed, and when it started.
type Outcome struct {
	Peer   string
	Rail   int
	Passed bool
	At     time.Time
}

// SwitchOf names the switch (the LLDP chassis) a node's rail is cabled to; ok
// is false when it is not known. A nil SwitchOf knows nothing: the witnesses
// are then chosen without regard to switches.
type SwitchOf func(node string, rail int) (chassis string, ok bool)

// Triangulation is what one node does after a confirmed failure in its turn:
// test Rails (all at once, as a scheduled test does) against the witnesses in
// order, starting each test only when it can end by Until, until Tests of
// them measured (a busy witness does not count) or Attempts were started.
type Triangulation struct {
	// Peer is the node the failure was with; Rails the rails that failed.
	Peer  string
	Rails []int
	// Witnesses are the candidates, in the order to try.
	Witnesses []string
	From      time.Time
	Until     time.Time
	// TestLength is how long one witness test may take (WitnessTestLength).
	TestLength time.Duration
	Tests      int
	Attempts   int
}

// Triangulate plans self's triangulation after its turn's test with
// turn.Peer failed on rails (confirmed by the retest, or, at the far end,
// failed or never reached: FarEndRails). view is self's own fresh pair-test
// outcomes; switchOf may be nil. ok is false when there is nothing to do or
// no time to do it.
//
// The witnesses are round-mates (RoundNodes), never self or the failed peer,
// nor a node self recently failed with on one of the rails. In order:
//
//  1. round-mates self recently passed with on one of the rails, newest first:
//     known good from self's own results;
//  2. the other round-mates, in an order hashed from self and the round, so
//     that two nodes triangulating at once seldom pick the same witness.
//
// Where switches are known, within each group a witness under another switch
// than the failed peer's comes first (a broken path between two switches fails
// every flow hashed onto it, so a witness behind the same far switch may fail
// for the same reason), and then one under another switch than self's (a
// switch that lost its uplinks fails with everyone behind other switches,
// which is what the rules group into a switch suspect).
func (f *FleetSchedule) Triangulate(self string, turn Turn, rails []int, view []Outcome, switchOf SwitchOf) (Triangulation, bool) {
	if len(rails) == 0 {
		return Triangulation{}, false
	}
	from, until, ok := f.TriangulationWindow(turn.Epoch, turn.Round)
	if !ok {
		return Triangulation{}, false
	}
	failing := map[int]bool{}
	for _, r := range rails {
		failing[r] = true
	}
	lastPass := map[string]time.Time{}
	failedWith := map[string]bool{}
	for _, o := range view {
		if !failing[o.Rail] {
			continue
		}
		if !o.Passed {
			failedWith[o.Peer] = true
		} else if o.At.After(lastPass[o.Peer]) {
			lastPass[o.Peer] = o.At
		}
	}
	type candidate struct {
		name                        string
		unknownGood                 bool
		lastPass                    time.Time
		underPeerSwitch, underOwnSw bool
		hash                        uint64
	}
	var cands []candidate
	for _, n := range f.RoundNodes(turn.Epoch, turn.Round) {
		if n == self || n == turn.Peer || failedWith[n] {
			continue
		}
		c := candidate{name: n, lastPass: lastPass[n], hash: mix64(hashKey(fmt.Sprintf("witness/%s/%d/%d/%s", self, turn.Epoch, turn.Round, n)))}
		_, known := lastPass[n]
		c.unknownGood = !known
		if switchOf != nil {
			for _, r := range rails {
				if sameSwitch(switchOf, n, turn.Peer, r) {
					c.underPeerSwitch = true
				}
				if sameSwitch(switchOf, n, self, r) {
					c.underOwnSw = true
				}
			}
		}
		cands = append(cands, c)
	}
	bools := func(a, b bool) int {
		switch {
		case a == b:
			return 0
		case a:
			return 1
		}
		return -1
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		if c := bools(a.unknownGood, b.unknownGood); c != 0 {
			return c
		}
		if c := bools(a.underPeerSwitch, b.underPeerSwitch); c != 0 {
			return c
		}
		if c := bools(a.underOwnSw, b.underOwnSw); c != 0 {
			return c
		}
		if c := b.lastPass.Compare(a.lastPass); c != 0 {
			return c
		}
		if c := cmp.Compare(a.hash, b.hash); c != 0 {
			return c
		}
		return cmp.Compare(a.name, b.name)
	})
	t := Triangulation{Peer: turn.Peer, Rails: slices.Sorted(slices.Values(rails)), From: from, Until: until,
		TestLength: f.WitnessTestLength(), Tests: WitnessTests, Attempts: WitnessAttempts}
	t.Rails = slices.Compact(t.Rails)
	for _, c := range cands {
		if len(t.Witnesses) == WitnessAttempts {
			break
		}
		t.Witnesses = append(t.Witnesses, c.name)
	}
	if len(t.Witnesses) == 0 {
		return Triangulation{}, false
	}
	return t, true
}

// sameSwitch reports whether a's and b's rail are known to sit under one switch.
func sameSwitch(switchOf SwitchOf, a, b string, rail int) bool {
	sa, okA := switchOf(a, rail)
	sb, okB := switchOf(b, rail)
	return okA && okB && sa == sb
}

// FarEndRails are the rails the server of a turn triangulates, judged from
// the tests it served for the turn's client (served: its own outcomes with
// turn.Peer that started at or after the turn's start; the latest per rail
// counts): a rail whose latest served test failed, and every rail among the
// first rails that the client never reached: a client whose test cannot
// reach a NIC leaves no trace at the far end but the silence. When the
// client reached no rail at all, that is every rail: the far end cannot tell
// a client that did not run (down, its port busy) from a node of its own
// that no test reaches, and witness tests that pass cost only the round's
// own time.
func FarEndRails(turn Turn, served []Outcome, rails int) []int {
	latest := map[int]Outcome{}
	for _, o := range served {
		if o.Peer != turn.Peer || o.At.Before(turn.Start) || o.Rail < 0 || o.Rail >= rails {
			continue
		}
		if old, ok := latest[o.Rail]; !ok || o.At.After(old.At) {
			latest[o.Rail] = o
		}
	}
	var out []int
	for r := range rails {
		if o, ok := latest[r]; !ok || !o.Passed {
			out = append(out, r)
		}
	}
	return out
}

// Unreached are the rails of a turn the client reached no part of while it
// reached the far end on another rail (served as for FarEndRails): its tests
// of them left the far end only silence. A dead NIC at the far end fails its
// client that way, and its own two witness tests then make two failures
// where a client that sees the failure makes three (the peer's and the
// witnesses'): the silence is the third (Store.NoteUnreached). Nil when the
// client reached no rail at all: it may not have run.
func Unreached(turn Turn, served []Outcome, rails int) []int {
	reached := map[int]bool{}
	for _, o := range served {
		if o.Peer == turn.Peer && !o.At.Before(turn.Start) && o.Rail >= 0 && o.Rail < rails {
			reached[o.Rail] = true
		}
	}
	if len(reached) == 0 {
		return nil
	}
	var out []int
	for r := range rails {
		if !reached[r] {
			out = append(out, r)
		}
	}
	return out
}

// ClientAbsent reports whether the client of a far end's turn reached it on
// no rail (served as for FarEndRails): the client did not run its test (down,
// its exporter stopped, its port busy) or no test of it reaches this node. The
// far end then tests the client itself at the start of the triangulation
// window, in the slot the pair holds anyway (no share of the fabric beyond the
// round's): a node that is down runs no test of its own, and without a failure
// with it recorded by someone it is named only when it is next the far end of
// a test, an interval or two later. A client that is up passes (its responder
// answers), which also clears the far end's own rails; one whose responder is
// not listening refuses, which measures nothing (a skipped test).
func ClientAbsent(turn Turn, served []Outcome, rails int) bool {
	if turn.IsClient {
		return false
	}
	for _, o := range served {
		if o.Peer == turn.Peer && !o.At.Before(turn.Start) && o.Rail >= 0 && o.Rail < rails {
			return false
		}
	}
	return true
}

// TestsAbsentClient says whether self, the far end of turn, tests its absent
// client (ClientAbsent) before its witnesses: only when its own rails are
// known (switchOf) to sit under two or more switches. A far end whose rails
// all sit under one switch (a rack's ToR), or under unknown ones, cannot tell
// a client that is down from its own switch black-holing every connection to
// it, and its witness tests are what name such a switch: a test of the client
// first leaves the window time for one witness where it had two (the
// simulator's ToR at 1,024 nodes was named 1.5 minutes later, after the 2-minute
// hold of its first victim, RoCEProbeSuspectNode, had ended).
func TestsAbsentClient(self string, turn Turn, served []Outcome, rails int, switchOf SwitchOf) bool {
	if switchOf == nil || !ClientAbsent(turn, served, rails) {
		return false
	}
	switches := map[string]bool{}
	for r := range rails {
		if sw, ok := switchOf(self, r); ok {
			switches[sw] = true
		}
	}
	return len(switches) >= 2
}

// BusyPause is the pause after a busy witness (its responder refused the
// connection) before the next witness is tried, spread by a hash of the node
// and the witness so that two nodes turned away by one responder do not come
// back in step.
func BusyPause(self, witness string) time.Duration {
	return time.Second + Jitter("busy/"+self+"/"+witness, 4*time.Second)
}

// Walk runs a triangulation: from From, the witnesses in order, each test
// started only when it can end by Until (TestLength), until Tests of them
// measured or Attempts were started. test runs one witness test starting at
// at (the scheduler: for real, after waiting until at; the simulator: on its
// virtual clock) and says whether it measured anything (false: the witness
// was busy) and when it ended; after a busy witness the next starts
// BusyPause later. pause, when not nil, replaces BusyPause (tests). Walk
// returns the witnesses it tested, busy ones included.
func (t Triangulation) Walk(self string, test func(witness string, at time.Time) (measured bool, end time.Time), pause func(self, witness string) time.Duration) []string {
	if pause == nil {
		pause = BusyPause
	}
	var tried []string
	at, measured := t.From, 0
	for _, w := range t.Witnesses {
		if measured >= t.Tests || len(tried) >= t.Attempts || at.Add(t.TestLength).After(t.Until) {
			break
		}
		tried = append(tried, w)
		ok, end := test(w, at)
		if end.After(at) {
			at = end
		}
		if ok {
			measured++
			continue
		}
		at = at.Add(pause(self, w))
	}
	return tried
}
