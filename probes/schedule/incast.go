package schedule

import (
	"fmt"
	"slices"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
)

// IncastSchedule places the incast probe: every interval (epoch) the plan's
// nodes, in an order hashed with the epoch, are cut into groups of
// senders+1; the first of a group receives, the others send into it at once.
// The n mod (senders+1) nodes left over sit the epoch out, and the next epoch
// orders everyone anew, so every node receives now and then and meets
// different senders. Groups run in rounds of at most
// probes.max_fabric_share of the nodes (config.IncastRounds), group i in
// round i mod rounds; within its round a group starts at a jitter every
// node derives from the epoch and round. Every node computes all of it from
// the plan and the clock: the receiver starts its servers and the senders
// their clients at the same moment without a word between them.
type IncastSchedule struct {
	nodes    []string
	sch      config.Schedule
	senders  int
	rounds   int
	roundLen time.Duration
	jitter   time.Duration
}

// IncastGroup is one incast: who receives, who sends (in port order: sender
// k writes into the receiver's k-th server of each rail), and when.
type IncastGroup struct {
	Epoch    int64
	Round    int
	Receiver string
	Senders  []string
	Start    time.Time
}

// Slot is node's place among the senders, -1 when it does not send.
func (g IncastGroup) Slot(node string) int { return slices.Index(g.Senders, node) }

// Members is the receiver, then the senders.
func (g IncastGroup) Members() []string { return append([]string{g.Receiver}, g.Senders...) }

// NewIncastSchedule builds the incast schedule of nodes.
func NewIncastSchedule(nodes []string, sch config.Schedule, senders int, share float64) *IncastSchedule {
	order := slices.Clone(nodes)
	slices.Sort(order)
	order = slices.Compact(order)
	s := &IncastSchedule{nodes: order, sch: sch, senders: senders, rounds: config.IncastRounds(len(order), senders, share)}
	if sch.Interval > 0 {
		s.roundLen = sch.Interval / time.Duration(s.rounds)
		s.jitter = max(0, min(sch.Jitter, s.roundLen-sch.Timeout))
	}
	return s
}

// Rounds is the number of rounds per epoch.
func (s *IncastSchedule) Rounds() int { return s.rounds }

// Epoch is the epoch that contains t.
func (s *IncastSchedule) Epoch(t time.Time) int64 { return epochOf(t, s.sch.Interval) }

// Groups are the incasts of epoch, in round order; none with fewer nodes
// than a receiver and its senders, or without an interval.
func (s *IncastSchedule) Groups(epoch int64) []IncastGroup {
	size := s.senders + 1
	if s.senders < 1 || len(s.nodes) < size || s.sch.Interval <= 0 {
		return nil
	}
	order := slices.Clone(s.nodes)
	hashOrder(order, func(n string) string { return fmt.Sprintf("incast/%d/%s", epoch, n) })
	groups := make([]IncastGroup, len(order)/size)
	for i := range groups {
		members := order[i*size : (i+1)*size]
		senders := slices.Clone(members[1:])
		slices.Sort(senders)
		round := i % s.rounds
		groups[i] = IncastGroup{Epoch: epoch, Round: round, Receiver: members[0], Senders: senders, Start: s.roundStart(epoch, round)}
	}
	return groups
}

func (s *IncastSchedule) roundStart(epoch int64, round int) time.Time {
	at := time.Unix(0, epoch*int64(s.sch.Interval)+int64(round)*int64(s.roundLen))
	return at.Add(Jitter(fmt.Sprintf("incast/%d/%d", epoch, round), s.jitter))
}

// GroupOf is node's incast in epoch; false when it sits the epoch out.
func (s *IncastSchedule) GroupOf(node string, epoch int64) (IncastGroup, bool) {
	for _, g := range s.Groups(epoch) {
		if g.Receiver == node || g.Slot(node) >= 0 {
			return g, true
		}
	}
	return IncastGroup{}, false
}

// NextGroup is node's first incast that starts after t.
func (s *IncastSchedule) NextGroup(node string, t time.Time) (IncastGroup, bool) {
	if s.sch.Interval <= 0 {
		return IncastGroup{}, false
	}
	// A node sits out at most a few epochs in a row (n mod (senders+1) of n
	// each time, in a new order): look a handful ahead.
	for e := s.Epoch(t); e <= s.Epoch(t)+8; e++ {
		if g, ok := s.GroupOf(node, e); ok && g.Start.After(t) {
			return g, true
		}
	}
	return IncastGroup{}, false
}

// During is an incast whose run (its start to start plus the timeout)
// overlaps from..to and that one of nodes takes part in, or any such incast
// when no node is named; false when none does. The pair probes stand aside
// then: the incast's rounds take the fabric share themselves.
func (s *IncastSchedule) During(from, to time.Time, nodes ...string) (IncastGroup, bool) {
	if s.sch.Interval <= 0 {
		return IncastGroup{}, false
	}
	// A run starts within its epoch and lasts less than a round, so only the
	// epochs of from and to, and the one before from, can hold one.
	for e := s.Epoch(from) - 1; e <= s.Epoch(to); e++ {
		for _, g := range s.Groups(e) {
			if !g.Start.Before(to) || !g.Start.Add(s.sch.Timeout).After(from) {
				continue
			}
			if len(nodes) == 0 {
				return g, true
			}
			for _, n := range nodes {
				if n == g.Receiver || g.Slot(n) >= 0 {
					return g, true
				}
			}
		}
	}
	return IncastGroup{}, false
}
