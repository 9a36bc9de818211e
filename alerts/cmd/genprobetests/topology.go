package main

import (
	"fmt"
	"maps"
	"slices"
)

// railOptimised is a rail-optimised cluster: pods of perPod nodes, rail r of
// every node of pod p cabled to leaf p-r. Nodes are gpu001, gpu002, … in pod
// order. Without lldp no node reports its switch.
func railOptimised(pods, perPod, rails int, lldp bool) *fleet {
	sizes := make([]int, pods)
	for p := range sizes {
		sizes[p] = perPod
	}
	return railOptimisedLLDP(sizes, rails, lldp)
}

// railOptimisedPods is the same with pods of the given sizes.
func railOptimisedPods(sizes []int, rails int) *fleet { return railOptimisedLLDP(sizes, rails, true) }

func railOptimisedLLDP(sizes []int, rails int, lldp bool) *fleet {
	f := newFleet()
	for p, size := range sizes {
		for i := 0; i < size; i++ {
			name := fmt.Sprintf("gpu%03d", len(f.nodes)+1)
			n := &node{name: name, instance: name + ":14791"}
			for r := 0; r < rails; r++ {
				n.rails = append(n.rails, port(r, fmt.Sprintf("leaf-p%d-r%d", p, r), fmt.Sprintf("0c:42:a1:00:%02x:%02x", p, r), lldp))
			}
			f.add(n)
		}
	}
	return f
}

// rackOptimised is a rack-optimised cluster: racks of perRack nodes, every
// rail of every node of rack k cabled to the rack's top-of-rack switch.
func rackOptimised(racks, perRack, rails int) *fleet {
	f := newFleet()
	for k := 0; k < racks; k++ {
		for i := 0; i < perRack; i++ {
			name := fmt.Sprintf("gpu%03d", k*perRack+i+1)
			n := &node{name: name, instance: name + ":14791"}
			for r := 0; r < rails; r++ {
				n.rails = append(n.rails, port(r, fmt.Sprintf("tor-%d", k), fmt.Sprintf("0c:42:a1:01:%02x:00", k), true))
			}
			f.add(n)
		}
	}
	return f
}

func port(r int, leaf, chassisID string, lldp bool) rail {
	p := rail{device: fmt.Sprintf("mlx5_%d", r), iface: fmt.Sprintf("ens%df0np0", r+1), leaf: leaf}
	if lldp {
		p.chassisID, p.chassisName = chassisID, leaf
	}
	return p
}

// faultFunc says whether the test between a and b on rail r fails.
type faultFunc func(a, b *node, r int) bool

// round tests node i with node i+off (modulo the fleet) on every rail both
// have, node i's test starting at t+i; fails says which fail. A link tested
// again keeps only its newest result, as in the store.
func (f *fleet) round(off, t int, fails faultFunc) {
	n := len(f.nodes)
	for i, a := range f.nodes {
		b := f.nodes[(i+off)%n]
		if a == b {
			continue
		}
		for r := 0; r < min(len(a.rails), len(b.rails)); r++ {
			f.test(a.name, b.name, r, !fails(a, b, r), t+i)
		}
	}
}

func healthy(a, b *node, r int) bool { return false }

// uplinksLost: a leaf that lost every uplink fails every test between a rail
// under it and a rail under another switch, and passes those under it.
func uplinksLost(leaf string) faultFunc {
	return func(a, b *node, r int) bool { return (a.rails[r].leaf == leaf) != (b.rails[r].leaf == leaf) }
}

// flowsLost fails the tests of the given pairs on rail r: the flows a
// broken link black-holes (ECMP hashes each pair's flow onto one link).
func flowsLost(r int, pairs ...[2]string) faultFunc {
	return func(a, b *node, rail int) bool {
		for _, p := range pairs {
			if rail == r && key(a.name, b.name, r) == key(p[0], p[1], r) {
				return true
			}
		}
		return false
	}
}

// nicBad fails every test of one NIC.
func nicBad(name string, rail int) faultFunc {
	return func(a, b *node, r int) bool { return r == rail && (a.name == name || b.name == name) }
}

// nodeBad fails every test of a node, on every rail.
func nodeBad(name string) faultFunc {
	return func(a, b *node, r int) bool { return a.name == name || b.name == name }
}

func anyOf(fs ...faultFunc) faultFunc {
	return func(a, b *node, r int) bool {
		for _, f := range fs {
			if f(a, b, r) {
				return true
			}
		}
		return false
	}
}

// early is a fleet minutes into a fault under the first switch of its first
// group of per nodes: the other nodes passed with each other across switches
// before it (node i with node i+per, wrapping among them), and since, each
// node in fails its tests with the far ends it lists on rail (every rail when
// rail < 0) and passes on the other rails; nothing else under the switch was
// tested since.
func early(f *fleet, per, rail int, fails map[string][]string) *fleet {
	return earlyRecorded(f, per, rail, fails, false)
}

// earlyBlackHoled is early where the failures black-holed the test's TCP
// exchange: only the near end recorded them, the far ends recorded nothing
// (a responder records only a test that connected).
func earlyBlackHoled(f *fleet, per, rail int, fails map[string][]string) *fleet {
	return earlyRecorded(f, per, rail, fails, true)
}

func earlyRecorded(f *fleet, per, rail int, fails map[string][]string, nearOnly bool) *fleet {
	others := f.nodes[per:]
	for i, a := range others {
		b := others[(i+per)%len(others)]
		for r := range a.rails {
			f.test(a.name, b.name, r, true, round1+i)
		}
	}
	k := 0
	for _, name := range slices.Sorted(maps.Keys(fails)) {
		for _, peer := range fails[name] {
			for r := range f.byName[name].rails {
				pass := rail >= 0 && r != rail
				if nearOnly && !pass {
					n := f.byName[name]
					f.testOnly(n.instance, name, peer, r, false, onset+k)
					continue
				}
				f.test(name, peer, r, pass, onset+k)
			}
			k++
		}
	}
	return f
}
