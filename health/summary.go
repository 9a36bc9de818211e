package health

import "strings"

// State is the node's state over all its findings: what the node page shows
// at the top and what the doctor's exit code says.
type State string

// The states, worst first. StateNothingToCheck is not a kind of healthy: no
// check could judge anything (no RDMA device to read, a sysfs tree without
// one), so nothing is known to be right either.
const (
	StateFailing        State = "failing"
	StateWarning        State = "warning"
	StateHealthy        State = "healthy"
	StateNothingToCheck State = "nothing_to_check"
)

// Summary is the node's state with the counts behind it.
type Summary struct {
	State State
	// Counts holds the findings per status.
	Counts map[Status]int
	// Reason, when nothing could be checked, is why: the skip reason most of
	// the node's checks gave (for a node without RDMA hardware that the plan
	// does not list, it starts with SkipNotRDMANode).
	Reason string
}

// NotRDMANode reports a node with nothing to check because it has no RDMA
// hardware and the plan does not expect any.
func (s Summary) NotRDMANode() bool {
	return s.State == StateNothingToCheck && strings.HasPrefix(s.Reason, SkipNotRDMANode)
}

// Summarize judges a node's findings as a whole. A node is healthy only when
// some check passed and none failed or warned; when every finding is a skip,
// there was nothing to check, and Reason says why.
func Summarize(fs []Finding) Summary {
	s := Summary{Counts: map[Status]int{}}
	reasons := map[string]int{}
	for _, f := range fs {
		s.Counts[f.Status]++
		if f.Status == StatusSkipped && f.Subject == SubjectNode {
			reasons[f.Message]++
		}
	}
	switch {
	case s.Counts[StatusFail] > 0:
		s.State = StateFailing
	case s.Counts[StatusWarn] > 0:
		s.State = StateWarning
	case s.Counts[StatusOK] > 0:
		s.State = StateHealthy
	default:
		s.State = StateNothingToCheck
		best := 0
		// The findings' order breaks ties: the first check's reason, the
		// root cause, wins.
		for _, f := range fs {
			if n := reasons[f.Message]; f.Status == StatusSkipped && f.Subject == SubjectNode && n > best {
				s.Reason, best = f.Message, n
			}
		}
		if s.Reason == "" {
			s.Reason = "no check ran"
		}
	}
	return s
}
