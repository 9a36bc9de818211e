package fleetsim

import (
	"fmt"
	"hash/fnv"
)

// Layout is how the nodes' NICs are cabled to the switches.
type Layout string

// The layouts.
const (
	// RailOptimised: NIC i of every node of a pod of 32 nodes goes to the
	// pod's leaf of rail i; leaves reach each other through the spines.
	RailOptimised Layout = "rail-optimised"
	// RackOptimised: one top-of-rack switch carries every rail of the 8
	// nodes of its rack (64 downlinks on a 51.2T switch, 1:1 with its
	// uplinks).
	RackOptimised Layout = "rack-optimised"
	// TwoNICSwitches: small leaves, one per rail per pair of nodes: only two
	// NICs under a switch, so one bad NIC fails half of everything the
	// switch carries.
	TwoNICSwitches Layout = "two-NIC switches"
)

// groupSize is how many nodes share a switch (per rail in the
// rail-optimised layouts).
func (l Layout) groupSize(nodes int) int {
	switch l {
	case RackOptimised:
		return 8
	case TwoNICSwitches:
		return 2
	}
	if nodes < 64 {
		return max(nodes/2, 1)
	}
	return 32
}

// Switch is one leaf or top-of-rack switch, as its LLDP announces it.
type Switch struct {
	ID, Name string // chassis_id, chassis_name
	Index    int
}

// Topology is the fabric of one simulated fleet: which switch port every
// NIC is cabled to, and the spines between switches (one uplink from every
// switch to each spine). A flow between two switches takes the spine its
// ECMP hash picks.
type Topology struct {
	Layout   Layout
	Nodes    int
	Rails    int
	Spines   int
	group    int
	switches []Switch
}

// NewTopology cables nodes × rails NICs in layout.
func NewTopology(layout Layout, nodes, rails, spines int) *Topology {
	t := &Topology{Layout: layout, Nodes: nodes, Rails: rails, Spines: spines, group: layout.groupSize(nodes)}
	groups := (nodes + t.group - 1) / t.group
	for g := range groups {
		if layout == RackOptimised {
			t.addSwitch(fmt.Sprintf("tor-%03d", g+1))
			continue
		}
		for r := range rails {
			prefix := "leaf"
			if layout == TwoNICSwitches {
				prefix = "sw"
			}
			t.addSwitch(fmt.Sprintf("%s-p%03d-r%d", prefix, g+1, r))
		}
	}
	return t
}

func (t *Topology) addSwitch(name string) {
	i := len(t.switches)
	// A locally administered MAC, as lldpd shows a chassis ID of subtype mac.
	id := fmt.Sprintf("02:5e:00:%02x:%02x:00", i>>8, i&0xff)
	t.switches = append(t.switches, Switch{ID: id, Name: name, Index: i})
}

// Switches lists every leaf or ToR.
func (t *Topology) Switches() []Switch { return t.switches }

// Group is the pod, rack or pair a node belongs to.
func (t *Topology) Group(node int) int { return node / t.group }

// GroupSize is how many nodes share a switch.
func (t *Topology) GroupSize() int { return t.group }

// SwitchOf is the switch a node's rail is cabled to.
func (t *Topology) SwitchOf(node, rail int) int {
	if t.Layout == RackOptimised {
		return t.Group(node)
	}
	return t.Group(node)*t.Rails + rail
}

// RailOf is the rail a switch carries (-1: every rail, a ToR).
func (t *Topology) RailOf(sw int) int {
	if t.Layout == RackOptimised {
		return -1
	}
	return sw % t.Rails
}

// PortOf is the switch port a node's rail is cabled to (its LLDP port ID).
func (t *Topology) PortOf(node, rail int) string {
	k := node % t.group
	if t.Layout == RackOptimised {
		k = k*t.Rails + rail
	}
	return fmt.Sprintf("swp%d", k+1)
}

// NodesUnder lists the nodes with a NIC under a switch.
func (t *Topology) NodesUnder(sw int) []int {
	g := sw
	if t.Layout != RackOptimised {
		g = sw / t.Rails
	}
	var out []int
	for n := g * t.group; n < min((g+1)*t.group, t.Nodes); n++ {
		out = append(out, n)
	}
	return out
}

// Hop is the part of a flow's path a fault can break: the two switches and,
// when they differ, the spine the flow hashes onto.
type Hop struct {
	From, To int
	// Spine is -1 when both ends sit under one switch.
	Spine int
}

// Route is the path of one flow between rail of nodes a and b; flow is the
// flow's hash (RoCE v2: its UDP source port, different for every queue
// pair, so every test run takes its own spine).
func (t *Topology) Route(a, b, rail int, flow uint64) Hop {
	h := Hop{From: t.SwitchOf(a, rail), To: t.SwitchOf(b, rail), Spine: -1}
	if h.From != h.To {
		h.Spine = int(flow % uint64(t.Spines))
	}
	return h
}

// mix hashes its parts into one number: the flow hashes, the noise and
// the choices of each seeded trial.
func mix(parts ...any) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		fmt.Fprintf(h, "%v\x00", p)
	}
	// fnv's low bits are weak for sequential inputs; finish with a
	// splitmix64 round.
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
