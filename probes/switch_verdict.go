package probes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/roce-exporter/roce_exporter/node"
)

// Whether a node whose rails fail is only the victim of a switch: one node
// sees its own tests and knows its own rails' switches (LLDP), not the other
// nodes under those switches. The fleet's rules do (RoCEProbeSuspectSwitch),
// and when a Prometheus is given, their verdict is read and repeated here;
// without it the node says what its own results show and that it cannot
// tell.

// RailSwitch is the switch one of this node's rails is cabled to, as its
// LLDP neighbour announces it.
type RailSwitch struct {
	ChassisID, Name string
}

func (s RailSwitch) String() string {
	if s.Name != "" && s.Name != s.ChassisID {
		return fmt.Sprintf("%s (chassis_id %s)", s.Name, s.ChassisID)
	}
	return "chassis_id " + s.ChassisID
}

// SwitchView is what the node knows about switches when it judges its rails.
type SwitchView struct {
	// Rails maps a device to its switch; a device without an LLDP
	// neighbour is absent.
	Rails map[string]RailSwitch
	// Asked says the fleet's alerts were read; Suspects are the chassis IDs
	// that RoCEProbeSuspectSwitch fires for. AskErr says why they could not
	// be read when a Prometheus was given.
	Asked    bool
	Suspects map[string]bool
	AskErr   string
}

// RailSwitches reads the switch of each RDMA device's port from the
// snapshot's LLDP neighbours (nil snapshot: none known).
func RailSwitches(s *node.Snapshot) map[string]RailSwitch {
	out := map[string]RailSwitch{}
	if s == nil {
		return out
	}
	for _, p := range s.Ports() {
		if n := s.LLDP[p.Interface]; n != nil && n.ChassisID != "" {
			out[p.Device] = RailSwitch{ChassisID: n.ChassisID, Name: n.ChassisName}
		}
	}
	return out
}

// SwitchVerdicts says, for the switches of the rails of probe that fail,
// whether this node is a victim of a switch suspect, or that it cannot tell;
// nil when no rail fails.
func SwitchVerdicts(js []DeviceJudgement, probe string, v SwitchView) []string {
	type group struct {
		sw              RailSwitch
		failing, others []string
	}
	groups := map[string]*group{}
	var order []string
	var unknown []string
	anyFailing := false
	passingElsewhere := map[string]bool{} // chassis → a rail under another switch passes
	for _, j := range js {
		if j.Probe != probe {
			continue
		}
		name := fmt.Sprintf("%s (rail %d)", j.Device, j.Rail)
		sw, ok := v.Rails[j.Device]
		if !ok {
			if j.PeersFailed > 0 {
				unknown = append(unknown, name)
				anyFailing = true
			}
			continue
		}
		g := groups[sw.ChassisID]
		if g == nil {
			g = &group{sw: sw}
			groups[sw.ChassisID] = g
			order = append(order, sw.ChassisID)
		}
		if j.PeersFailed > 0 {
			g.failing = append(g.failing, name)
			anyFailing = true
		} else {
			g.others = append(g.others, name)
		}
	}
	if !anyFailing {
		return nil
	}
	for id := range groups {
		for other, h := range groups {
			if other != id && len(h.failing) == 0 && len(h.others) > 0 {
				passingElsewhere[id] = true
			}
		}
	}
	slices.Sort(order)
	var out []string
	for _, id := range order {
		g := groups[id]
		if len(g.failing) == 0 {
			continue
		}
		rails := strings.Join(g.failing, ", ")
		switch {
		case v.Asked && v.Suspects[id]:
			out = append(out, fmt.Sprintf("%s under switch %s, which the fleet's rules name RoCEProbeSuspectSwitch: this node is a victim of that switch, not the cause; follow the switch's runbook before touching these NICs", rails, g.sw))
		case v.Asked:
			out = append(out, fmt.Sprintf("%s under switch %s, which the fleet's rules do not name as a switch suspect: not a switch's victim, so the verdict above stands", rails, g.sw))
		case len(g.failing) >= 2 && len(g.others) == 0 && passingElsewhere[id]:
			// Two or more of its rails share the switch (a rack's ToR): a
			// NIC fault fails one rail, not all of them under one switch.
			out = append(out, fmt.Sprintf("every rail of this node under switch %s fails (%s) while its rails under other switches pass: the pattern of that switch or its uplinks as much as of these NICs; one node cannot tell which: RoCEProbeSuspectSwitch{chassis_id=%q} says whether the other nodes under it fail too", g.sw, rails, g.sw.ChassisID))
		default:
			out = append(out, fmt.Sprintf("%s under switch %s: cannot tell from this node whether the switch is at fault (the other nodes under it are not seen here): RoCEProbeSuspectSwitch{chassis_id=%q} says", rails, g.sw, g.sw.ChassisID))
		}
	}
	if len(unknown) > 0 {
		out = append(out, fmt.Sprintf("%s: switch unknown (no LLDP neighbour), so whether it is a switch's victim cannot be told", strings.Join(unknown, ", ")))
	}
	if v.AskErr != "" {
		out = append(out, "the fleet's switch suspects could not be read: "+v.AskErr)
	}
	return out
}
