package collector

import (
	"sync"

	"github.com/roce-exporter/roce_exporter/node"
)

// prioritySet decides which 802.1p priorities of an interface the
// per-priority families (roce_priority_*, roce_pfc_*, roce_pfc_enabled,
// roce_ecn_enabled) export by default. Eight priorities × two directions
// × several families was half of a node's series, most of them zeros for
// priorities no traffic uses. A priority matters when:
//
//   - it is the plan's RoCE priority (expectations.pfc_priority): its
//     series must exist even while it is idle or misconfigured;
//   - PFC is enabled on it: the lossless-class alerts join on
//     roce_pfc_enabled == 1 per priority;
//   - any of its ethtool counters is above zero: it carries (or carried)
//     traffic, pause frames or drops;
//   - the NIC sends its CNPs on it (MLNX_OFED ecn/roce_np/cnp_802p_prio),
//     or the DCB app table maps the plan's RoCE DSCP to it: these are the
//     links of the lossless-class chain, and a DSCP mapped to the wrong
//     priority must show that priority's counters from the first scrape.
//
// A priority that mattered once keeps its series for the life of the
// process, so a series never disappears and reappears (a counter that
// reappears loses its first increase to rate()). Counters count since the
// driver loaded, so a priority that carried traffic before the exporter
// started matters from the first scrape. --collector.priority.all exports
// every priority, as before.
type prioritySet struct {
	all      bool
	planned  int // the plan's RoCE priority, -1 when none
	roceDSCP int // the plan's RoCE DSCP (or the default)

	mu       sync.Mutex
	lastSnap *node.Snapshot
	last     map[string][8]bool
	seen     map[string][8]bool
}

// priorities returns the collectors' shared priority set. Collectors are
// built one after another (NewExporter), so the lazy creation needs no lock.
func (o *Options) priorities() *prioritySet {
	if o.prio == nil {
		s := &prioritySet{all: o.AllPriorities, planned: -1, roceDSCP: node.DefaultRoCEDSCP, seen: map[string][8]bool{}}
		if o.Plan != nil && o.Plan.Expectations.PFCPriority != nil {
			s.planned = *o.Plan.Expectations.PFCPriority
		}
		if o.Plan != nil && o.Plan.Expectations.RoCEDSCP != nil {
			s.roceDSCP = *o.Plan.Expectations.RoCEDSCP
		}
		o.prio = s
	}
	return o.prio
}

// of returns the priorities of iface to export on snap: every one with
// --collector.priority.all.
func (s *prioritySet) of(snap *node.Snapshot, iface string) [8]bool {
	if s.all {
		return [8]bool{true, true, true, true, true, true, true, true}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastSnap != snap {
		s.update(snap)
	}
	return s.last[iface]
}

// update adds what matters on snap to what mattered before. The DCB and
// ethtool collectors ask on the same snapshot, so it runs once per scrape.
func (s *prioritySet) update(snap *node.Snapshot) {
	cur := make(map[string][8]bool, len(s.seen))
	mark := func(iface string, p int) {
		if p >= 0 && p < 8 {
			m := cur[iface]
			m[p] = true
			cur[iface] = m
		}
	}
	names := map[string]bool{}
	for iface, st := range snap.Ethtool {
		names[iface] = true
		for _, v := range st.Values {
			if v.Value > 0 && familyMetrics[v.Family].priority {
				mark(iface, v.Priority)
			}
		}
	}
	for iface, st := range snap.DCB {
		names[iface] = true
		if st.PFCKnown {
			for p, on := range st.PFCEnabled {
				if on {
					mark(iface, p)
				}
			}
		}
		if st.CNPPrio != nil {
			mark(iface, *st.CNPPrio)
		}
		if p, ok := st.DSCP.Lookup(s.roceDSCP); ok {
			mark(iface, p)
		}
	}
	for iface := range names {
		mark(iface, s.planned)
		m := cur[iface]
		old := s.seen[iface]
		for p := range m {
			m[p] = m[p] || old[p]
		}
		cur[iface] = m
		s.seen[iface] = m
	}
	s.lastSnap, s.last = snap, cur
}
