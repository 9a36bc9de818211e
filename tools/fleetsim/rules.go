// Package fleetsim simulates the fleet pair-probe schedule and the
// localisation of failures on a virtual clock: no processes, no sockets.
// The nodes are real probes.Store values fed by the real FleetSchedule;
// Localise mirrors, in Go, the recording rules and RoCEProbeSuspect* alerts
// of alerts/ (the promtool tests in alerts/tests/probe_localisation.yml
// check the PromQL on the same situations).
package fleetsim

import (
	"fmt"
	"sort"
	"time"
)

// Rail is what one node exports about one rail (roce_probe_peers_failed,
// _peers_passed, _last_passed_timestamp_seconds) plus whether the port's
// link went down recently (roce_port_link_downed_total rose).
type Rail struct {
	Failed, Passed int
	LastPassed     time.Time
	Flapped        bool
}

// Link is one fresh link result a node exports (roce_probe_success,
// roce_probe_last_run_timestamp_seconds).
type Link struct {
	Node, Peer string
	Rail       int
	Success    bool
	Start      time.Time
}

// Exports is what Prometheus holds from the nodes that are up.
type Exports struct {
	Rails map[NodeRail]Rail
	Links []Link
}

// NodeRail names one rail of one node.
type NodeRail struct {
	Node string
	Rail int
}

// Suspect is one alert: RoCEProbeSuspectNICPort{node, rail},
// RoCEProbeSuspectNode{node} or RoCEProbeSuspectPath{node, peer, rail}
// (node < peer).
type Suspect struct {
	Alert string
	Node  string
	Peer  string
	Rail  int
}

func (s Suspect) String() string {
	switch s.Alert {
	case AlertNode:
		return fmt.Sprintf("%s{node=%s}", s.Alert, s.Node)
	case AlertPath:
		return fmt.Sprintf("%s{node=%s,peer=%s,rail=%d}", s.Alert, s.Node, s.Peer, s.Rail)
	}
	return fmt.Sprintf("%s{node=%s,rail=%d}", s.Alert, s.Node, s.Rail)
}

// The alerts.
const (
	AlertNIC  = "RoCEProbeSuspectNICPort"
	AlertNode = "RoCEProbeSuspectNode"
	AlertPath = "RoCEProbeSuspectPath"
)

// Localise names the suspects, as the rules do:
//
//   - a rail is healthy when it passed with at least one peer;
//   - NIC: a rail failed with two or more distinct healthy peers and passed
//     with none (a broken path between two leaves fails only some of a
//     node's peers, so its nodes keep passing with others), or with some
//     when its link went down recently (a flapping port);
//   - node: every rail (two or more) of a node meets the NIC condition; or,
//     when the node exports nothing that passes (it is down), two or more
//     healthy peers failed with it on every rail they tested;
//   - path: a link failed while each end failed with no one else, both
//     ends passed with others after the failure, and neither end's link
//     went down (a flapping port is the port's fault, not the path's).
func Localise(ex Exports) []Suspect {
	healthy := func(n string, r int) bool { return ex.Rails[NodeRail{n, r}].Passed >= 1 }
	nodeHealthy := map[string]bool{}
	railsOf := map[string][]int{}
	for nr, r := range ex.Rails {
		railsOf[nr.Node] = append(railsOf[nr.Node], nr.Rail)
		if r.Passed >= 1 {
			nodeHealthy[nr.Node] = true
		}
	}
	healthyFailed := map[NodeRail]map[string]bool{}
	type pairKey struct{ reporter, peer string }
	tested, failed := map[pairKey]int{}, map[pairKey]int{}
	for _, l := range ex.Links {
		k := pairKey{l.Node, l.Peer}
		tested[k]++
		if l.Success {
			continue
		}
		failed[k]++
		if healthy(l.Peer, l.Rail) {
			nr := NodeRail{l.Node, l.Rail}
			if healthyFailed[nr] == nil {
				healthyFailed[nr] = map[string]bool{}
			}
			healthyFailed[nr][l.Peer] = true
		}
	}
	nicCond := func(nr NodeRail) bool {
		r := ex.Rails[nr]
		return len(healthyFailed[nr]) >= 2 && (r.Passed == 0 || r.Flapped)
	}
	suspectNode := map[string]bool{}
	for n, rails := range railsOf {
		all := len(rails) >= 2
		for _, r := range rails {
			all = all && nicCond(NodeRail{n, r})
		}
		if all {
			suspectNode[n] = true
		}
	}
	reporters := map[string]int{}
	for k, t := range tested {
		if t >= 2 && failed[k] == t && nodeHealthy[k.reporter] && !nodeHealthy[k.peer] {
			reporters[k.peer]++
		}
	}
	for n, c := range reporters {
		if c >= 2 {
			suspectNode[n] = true
		}
	}
	var out []Suspect
	for n := range suspectNode {
		out = append(out, Suspect{Alert: AlertNode, Node: n})
	}
	for nr := range ex.Rails {
		if nicCond(nr) && !suspectNode[nr.Node] {
			out = append(out, Suspect{Alert: AlertNIC, Node: nr.Node, Rail: nr.Rail})
		}
	}
	seen := map[Suspect]bool{}
	for _, l := range ex.Links {
		if l.Success {
			continue
		}
		a, b := ex.Rails[NodeRail{l.Node, l.Rail}], ex.Rails[NodeRail{l.Peer, l.Rail}]
		if a.Failed != 1 || b.Failed != 1 || a.Flapped || b.Flapped || !a.LastPassed.After(l.Start) || !b.LastPassed.After(l.Start) ||
			suspectNode[l.Node] || suspectNode[l.Peer] {
			continue
		}
		s := Suspect{Alert: AlertPath, Node: min(l.Node, l.Peer), Peer: max(l.Node, l.Peer), Rail: l.Rail}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
