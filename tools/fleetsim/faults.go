package fleetsim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// The alerts the simulation judges (alerts/alerts.yml): the suspects, the
// name conflict and the coverage warning. Any of them firing that the
// injected faults do not call for is a wrong suspect.
const (
	AlertNIC        = "RoCEProbeSuspectNICPort"
	AlertNode       = "RoCEProbeSuspectNode"
	AlertPath       = "RoCEProbeSuspectPath"
	AlertSwitch     = "RoCEProbeSuspectSwitch"
	AlertConflict   = "RoCEProbeNodeNameConflict"
	AlertIdentity   = "RoCEProbeIdentityMismatch"
	AlertUntestable = "RoCEProbeRailUntestable"
)

// judgedAlerts matches the alerts above, and any other suspect alert the
// rules may grow.
const judgedAlerts = `RoCEProbe(Suspect.*|NodeNameConflict|IdentityMismatch|RailUntestable)`

// faultKind is what breaks.
type faultKind int

const (
	// faultNIC: the rail's NIC, cable or switch port is dead; nothing
	// connects over it.
	faultNIC faultKind = iota
	// faultDegradedNIC: the rail runs at 60 % of its line rate: bandwidth
	// tests connect and fail below the plan's floor; pings pass.
	faultDegradedNIC
	// faultNode: the host (PCIe, driver) breaks every rail: tests connect
	// over TCP and their RDMA traffic fails.
	faultNode
	// faultNodeDown: the node and its exporter are gone.
	faultNodeDown
	// faultFlap: the rail's link is down 3 minutes of every 6.
	faultFlap
	// faultUplinks: some of a switch's uplinks black-hole the flows their
	// ECMP hash puts on them (a grey failure: routing still uses them).
	faultUplinks
	// faultCollision: the machine Impostor's exporter runs under Node's
	// name (a copied flag or config).
	faultCollision
)

// Fault is one injected failure.
type Fault struct {
	Kind       faultKind
	Node, Rail int
	Switch     int
	// Uplinks are the spines whose uplink from Switch is broken.
	Uplinks []int
	// Impostor is the machine that takes Node's name (faultCollision).
	Impostor int
}

// Class is one row of the table: a layout and how to pick its faults.
type Class struct {
	Name   string
	Layout Layout
	// Expect is the alert that must name each fault, as the table says it.
	Expect string
	pick   func(t *Topology, rng *rand.Rand) []Fault
}

// Classes are the fault classes, in table order.
var Classes = []*Class{
	{Name: "noise only", Layout: RailOptimised, Expect: "none", pick: func(*Topology, *rand.Rand) []Fault { return nil }},
	{Name: "noise only (rack-optimised)", Layout: RackOptimised, Expect: "none", pick: func(*Topology, *rand.Rand) []Fault { return nil }},
	{Name: "bad NIC", Layout: RailOptimised, Expect: AlertNIC + "{instance, device}", pick: pickNICs(1, false)},
	{Name: "bad NIC (rack-optimised)", Layout: RackOptimised, Expect: AlertNIC + "{instance, device}", pick: pickNICs(1, false)},
	{Name: "bad node", Layout: RailOptimised, Expect: AlertNode + "{node}", pick: func(t *Topology, rng *rand.Rand) []Fault {
		return []Fault{{Kind: faultNode, Node: rng.IntN(t.Nodes)}}
	}},
	{Name: "degraded NIC (60 % of line rate)", Layout: RailOptimised, Expect: AlertNIC + "{instance, device}", pick: func(t *Topology, rng *rand.Rand) []Fault {
		return []Fault{{Kind: faultDegradedNIC, Node: rng.IntN(t.Nodes), Rail: rng.IntN(t.Rails)}}
	}},
	{Name: "leaf loses all its uplinks", Layout: RailOptimised, Expect: AlertSwitch + "{chassis_id}", pick: pickUplinks(1)},
	{Name: "leaf loses half its uplinks", Layout: RailOptimised, Expect: AlertSwitch + "{chassis_id}", pick: pickUplinks(2)},
	{Name: "ToR loses its uplinks", Layout: RackOptimised, Expect: AlertSwitch + "{chassis_id}", pick: pickUplinks(1)},
	{Name: "one bad spine path", Layout: RailOptimised, Expect: AlertPath + " across it (or " + AlertSwitch + " of its leaf)", pick: pickUplinks(0)},
	{Name: "flapping link", Layout: RailOptimised, Expect: AlertNIC + "{instance, device}", pick: func(t *Topology, rng *rand.Rand) []Fault {
		return []Fault{{Kind: faultFlap, Node: rng.IntN(t.Nodes), Rail: rng.IntN(t.Rails)}}
	}},
	{Name: "node down", Layout: RailOptimised, Expect: AlertNode + "{node}", pick: func(t *Topology, rng *rand.Rand) []Fault {
		return []Fault{{Kind: faultNodeDown, Node: rng.IntN(t.Nodes)}}
	}},
	{Name: "two NICs on different rails", Layout: RailOptimised, Expect: "two " + AlertNIC, pick: pickNICs(2, false)},
	{Name: "a NIC and a leaf", Layout: RailOptimised, Expect: AlertNIC + " and " + AlertSwitch, pick: func(t *Topology, rng *rand.Rand) []Fault {
		leaf := pickUplinks(1)(t, rng)[0]
		nic := Fault{Kind: faultNIC, Node: rng.IntN(t.Nodes), Rail: rng.IntN(t.Rails)}
		for nic.Rail == t.RailOf(leaf.Switch) {
			nic.Rail = rng.IntN(t.Rails) // on another rail: a NIC under a dead leaf is hidden by it
		}
		return []Fault{nic, leaf}
	}},
	{Name: "two bad NICs under one switch", Layout: RailOptimised, Expect: "two " + AlertNIC + " (not the switch)", pick: pickNICs(2, true)},
	{Name: "bad NIC under a two-NIC switch", Layout: TwoNICSwitches, Expect: AlertNIC + "{instance, device}", pick: pickNICs(1, false)},
	{Name: "node-name collision", Layout: RailOptimised, Expect: AlertConflict + "{node} or " + AlertIdentity + "{instance}", pick: func(t *Topology, rng *rand.Rand) []Fault {
		f := Fault{Kind: faultCollision, Node: rng.IntN(t.Nodes), Impostor: rng.IntN(t.Nodes)}
		for f.Impostor == f.Node {
			f.Impostor = rng.IntN(t.Nodes)
		}
		return []Fault{f}
	}},
}

// ClassNamed finds a class by its name.
func ClassNamed(name string) (*Class, bool) {
	i := slices.IndexFunc(Classes, func(c *Class) bool { return c.Name == name })
	if i < 0 {
		return nil, false
	}
	return Classes[i], true
}

// pickNICs picks n dead NICs on n different rails (sameSwitch: on one rail
// under one switch).
func pickNICs(n int, sameSwitch bool) func(t *Topology, rng *rand.Rand) []Fault {
	return func(t *Topology, rng *rand.Rand) []Fault {
		var out []Fault
		first := Fault{Kind: faultNIC, Node: rng.IntN(t.Nodes), Rail: rng.IntN(t.Rails)}
		out = append(out, first)
		for len(out) < n {
			f := Fault{Kind: faultNIC, Node: rng.IntN(t.Nodes), Rail: rng.IntN(t.Rails)}
			if sameSwitch {
				under := t.NodesUnder(t.SwitchOf(first.Node, first.Rail))
				f.Node, f.Rail = under[rng.IntN(len(under))], first.Rail
			}
			if slices.ContainsFunc(out, func(o Fault) bool {
				return o.Node == f.Node || (!sameSwitch && o.Rail == f.Rail)
			}) {
				continue
			}
			out = append(out, f)
		}
		return out
	}
}

// pickUplinks breaks the uplinks of one switch: all of them (part 1), half
// (2), or one (0: one bad spine path).
func pickUplinks(part int) func(t *Topology, rng *rand.Rand) []Fault {
	return func(t *Topology, rng *rand.Rand) []Fault {
		f := Fault{Kind: faultUplinks, Switch: rng.IntN(len(t.Switches()))}
		spines := rng.Perm(t.Spines)
		switch part {
		case 0:
			f.Uplinks = spines[:1]
		case 1:
			f.Uplinks = spines
		default:
			f.Uplinks = spines[:t.Spines/part]
		}
		return []Fault{f}
	}
}

// Alert is one firing alert as ALERTS{alertstate="firing"} shows it.
type Alert struct {
	Name   string
	Labels map[string]string
}

func (a Alert) String() string {
	keys := []string{"instance", "node", "device", "peer", "chassis_name", "chassis_id"}
	s := a.Name + "{"
	sep := ""
	for _, k := range keys {
		if v, ok := a.Labels[k]; ok {
			s += fmt.Sprintf("%s%s=%q", sep, k, v)
			sep = ","
		}
	}
	return s + "}"
}

// names reports whether alert a names fault f of fleet.
func (f Fault) names(a Alert, fl *fleet) bool {
	switch f.Kind {
	case faultNIC, faultDegradedNIC, faultFlap:
		return a.Name == AlertNIC && a.Labels["instance"] == fl.instance(f.Node) && a.Labels["device"] == device(f.Rail)
	case faultNode, faultNodeDown:
		return a.Name == AlertNode && a.Labels["node"] == fl.names[f.Node]
	case faultCollision:
		// The name two exporters claim, or the exporter under a name not its own.
		return a.Name == AlertConflict && a.Labels["node"] == fl.names[f.Node] ||
			a.Name == AlertIdentity && a.Labels["instance"] == fl.instance(f.Impostor)
	case faultUplinks:
		sw := fl.topo.Switches()[f.Switch]
		if a.Name == AlertSwitch && a.Labels["chassis_id"] == sw.ID {
			return true
		}
		if len(f.Uplinks) != 1 || a.Name != AlertPath {
			return false
		}
		// One bad uplink: a path between a node under the switch and one
		// under another switch of its rail crosses it on some runs.
		a1, ok1 := fl.byInstance[a.Labels["instance"]]
		b1, ok2 := fl.byName[a.Labels["peer"]]
		rail := fl.topo.RailOf(f.Switch)
		if !ok1 || !ok2 || a.Labels["device"] != device(rail) {
			return false
		}
		sa, sb := fl.topo.SwitchOf(a1, rail), fl.topo.SwitchOf(b1, rail)
		return sa != sb && (sa == f.Switch || sb == f.Switch)
	}
	return false
}

// active reports whether the fault is in force at t.
func (tr *trial) active(t time.Time) bool { return !t.Before(tr.onset) }
