package fleetsim

import (
	"container/heap"
	"slices"
	"time"

	"github.com/roce-exporter/roce_exporter/probes"
	"github.com/roce-exporter/roce_exporter/probes/schedule"
)

// What each simulated node does with its turn, as probes/scheduler.go and
// probes/triangulate.go do it: the client tests every rail of its peer and
// retests a failure; after the round's scheduled phase both ends of a
// failed test triangulate, with the witnesses and times the pure
// schedule.Triangulate, FarEndRails and Triangulation.Walk give them; a far
// end whose client never came first tests it (schedule.TestsAbsentClient).

// roundState is one round of the schedule: its turns and, per client, the
// rails its scheduled test failed on.
type roundState struct {
	epoch  int64
	round  int
	pairs  []schedule.Pair
	failed map[int][]int
	// busy holds, per machine and rail, when a test holds the device: a
	// responder serves one client at a time and refuses while its own node
	// tests the device.
	busy map[[2]int][]busySpan
}

// startRound runs the scheduled tests of a round and queues its
// triangulation window.
func (tr *trial) startRound(epoch int64, round int, at time.Time) {
	sched := tr.fleet.sched
	rs := &roundState{epoch: epoch, round: round, pairs: sched.Pairs(epoch, round), failed: map[int][]int{}, busy: map[[2]int][]busySpan{}}
	deadline := sched.RoundEnd(epoch, round)
	for _, p := range rs.pairs {
		client := tr.fleet.byName[p.Client]
		// A node runs its turn as the client only under its own name: an
		// exporter under another name stands aside (identity mismatch), and
		// nothing runs the turn of a name no exporter verifies.
		if cm := tr.machines[client]; !cm.up || !cm.verified() {
			continue
		}
		results := tr.pairTest(client, tr.fleet.byName[p.Server], p.Server, rails(tr.cfg.Rails), at, deadline, false, rs)
		for _, r := range results {
			if !r.Success && !r.Skipped {
				rs.failed[client] = append(rs.failed[client], r.Rail)
			}
		}
	}
	if from, _, ok := sched.TriangulationWindow(epoch, round); ok {
		heap.Push(&tr.events, &event{at: from, tri: rs})
	}
}

func rails(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// pairTest is client's test of rails against server (named peer in its
// plan) from at: every rail at once, a failed rail retested once when it
// can end before deadline; the server records the attempts that reached
// it. A witness test sets aside a rail whose connection was refused (the
// witness's responder busy). It returns the client's results.
func (tr *trial) pairTest(client, server int, peer string, rails []int, at, deadline time.Time, witness bool, rs *roundState) []*probes.Result {
	cm, sm := tr.machines[client], tr.machines[server]
	end := at
	var out []*probes.Result
	for _, rail := range rails {
		tr.tests++
		start := at
		for try := 0; ; try++ {
			var a attempt
			done := start.Add(tr.attemptLen)
			tr.nonce++
			switch {
			case sm.up && !sm.serves(), rs.busyAt(server, rail, start, done):
				a = attempt{reason: probes.ReasonConnectRefused}
			default:
				a = tr.run(client, server, rail, start, tr.nonce)
				if try == 0 && a.ok && tr.noise(rs.epoch, rs.round, client, rail, tr.nonce) {
					a = attempt{connected: true, reason: probes.ReasonTimeout}
				}
			}
			if a.connected && sm.up {
				tr.record(sm, done, tr.fleet.names[client], rail, start, a, "server")
			}
			if witness && a.reason == probes.ReasonConnectRefused {
				res := tr.record(cm, done, peer, rail, start, a, "")
				res.Skipped, res.SkipReason, res.Reason = true, "the witness's responder was busy", ""
				out = append(out, res)
				break
			}
			if a.ok || try == 1 || !done.Add(retestDelay+tr.runTimeout).Before(deadline) {
				out = append(out, tr.record(cm, done, peer, rail, start, a, ""))
				end = max64(end, done)
				break
			}
			start = done.Add(retestDelay)
		}
		rs.hold(client, rail, at, end)
		rs.hold(server, rail, at, end)
	}
	tr.busy = append(tr.busy, busySpan{at, end, client}, busySpan{at, end, server})
	return out
}

func (rs *roundState) hold(m, rail int, from, to time.Time) {
	k := [2]int{m, rail}
	rs.busy[k] = append(rs.busy[k], busySpan{from: from, to: to})
}

// busyAt reports whether another test holds machine m's rail during
// [from, to).
func (rs *roundState) busyAt(m, rail int, from, to time.Time) bool {
	for _, b := range rs.busy[[2]int{m, rail}] {
		if b.from.Before(to) && from.Before(b.to) {
			return true
		}
	}
	return false
}

// triangulate runs the round's triangulations at the start of its window:
// every node of the round whose turn failed (the client from its results,
// the far end from what it served) plans its witness tests with
// schedule.Triangulate and walks them on the virtual clock. The nodes walk
// one after another in a per-round hashed order; a witness another walk
// already holds refuses, as its responder would.
func (tr *trial) triangulate(rs *roundState) {
	sched := tr.fleet.sched
	type side struct {
		m    int
		turn schedule.Turn
	}
	var sides []side
	for _, p := range rs.pairs {
		for _, name := range []string{p.Client, p.Server} {
			m := tr.fleet.byName[name]
			if turn, ok := sched.TurnOf(name, rs.epoch); ok && turn.Round == rs.round {
				sides = append(sides, side{m, turn})
			}
		}
	}
	slices.SortFunc(sides, func(a, b side) int {
		ha, hb := mix(tr.seed, "walk", rs.epoch, rs.round, a.m), mix(tr.seed, "walk", rs.epoch, rs.round, b.m)
		switch {
		case ha < hb:
			return -1
		case ha > hb:
			return 1
		}
		return 0
	})
	for _, sd := range sides {
		m := tr.machines[sd.m]
		if !m.up || !m.verified() {
			continue
		}
		self := tr.fleet.names[sd.m]
		failed := rs.failed[sd.m]
		var from time.Time
		if !sd.turn.IsClient {
			if schedule.TestsAbsentClient(self, sd.turn, m.store.Outcomes(probes.KindIBWriteBW), tr.cfg.Rails, tr.switchOf) {
				// The far end tests its absent client itself, at the window's start.
				start, until, _ := sched.TriangulationWindow(rs.epoch, rs.round)
				failed, from = nil, start
				for _, r := range tr.pairTest(sd.m, tr.fleet.byName[sd.turn.Peer], sd.turn.Peer, rails(tr.cfg.Rails), start, until, true, rs) {
					from = max64(from, r.Start.Add(tr.attemptLen))
					if !r.Success && !r.Skipped {
						failed = append(failed, r.Rail)
					}
				}
			} else {
				failed = m.store.FarEndRails(probes.KindIBWriteBW, sd.turn, tr.cfg.Rails, device)
			}
		}
		plan, ok := sched.Triangulate(self, sd.turn, failed, m.store.Outcomes(probes.KindIBWriteBW), tr.switchOf)
		if !ok {
			continue
		}
		plan.From = max64(plan.From, from)
		tr.triangulations++
		plan.Walk(self, func(w string, at time.Time) (bool, time.Time) {
			results := tr.pairTest(sd.m, tr.fleet.byName[w], w, plan.Rails, at, plan.Until, true, rs)
			end := at
			measured := false
			for _, r := range results {
				end = max64(end, r.Start.Add(tr.attemptLen))
				measured = measured || !r.Skipped
			}
			return measured, end
		}, nil)
	}
}

// switchOf is what a node started with --probes.prometheus-url knows of the
// fleet's switches: every rail's LLDP neighbour, as Prometheus holds it.
func (tr *trial) switchOf(node string, rail int) (string, bool) {
	n, ok := tr.fleet.byName[node]
	if !ok || !tr.cfg.WitnessSwitches || rail < 0 || rail >= tr.cfg.Rails {
		return "", false
	}
	return tr.fleet.topo.Switches()[tr.fleet.topo.SwitchOf(n, rail)].ID, true
}
