package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// The probe whose results the cases hold; the rules treat ib_write_lat alike.
const probe = "ib_write_bw"

// rail is one NIC port of a node and the switch port LLDP reports for it.
type rail struct {
	device, iface string
	// leaf is the switch the port is cabled to; chassisID and chassisName
	// are what LLDP reports of it, "" when the node has no LLDP data for the
	// port (no lldpd): the switch is unknown to the rules.
	leaf                   string
	chassisID, chassisName string
}

// node is one exporter: its plan name, its scrape target and its rails.
type node struct {
	name, instance string
	rails          []rail
	// silent nodes export nothing (down); their peers still record their
	// failed links to them.
	silent bool
	// impostor exporters run under another node's name: they hold only the
	// results they recorded themselves (fleet.testOnly).
	impostor bool
}

// result is one pair test as the store keeps it: the latest result of a
// link, recorded by both ends.
type result struct {
	pass  bool
	start int // the run's start, Unix seconds
	// reason is why a failed test failed, when it matters to the rules
	// (roce_probe_failure_info{reason}).
	reason string
}

type linkKey struct {
	a, b string // a < b
	rail int
}

// fleet is the fresh state of a small cluster: its nodes and the latest
// result of every tested link. It renders what each node exports, the way
// probes.Store.Judge and the probe collector count them: per rail the
// distinct peers failed and passed with and the newest pass, per link its
// success and start.
type fleet struct {
	nodes  []*node
	byName map[string]*node
	links  map[linkKey]result
	// own are links only one end recorded (an impostor's tests), by
	// instance.
	own   map[string]map[linkKey]result
	extra []string // raw series lines: 'name{labels}' -> values
}

func newFleet() *fleet {
	return &fleet{byName: map[string]*node{}, links: map[linkKey]result{}, own: map[string]map[linkKey]result{}}
}

func (f *fleet) add(n *node) *node {
	f.nodes = append(f.nodes, n)
	if _, ok := f.byName[n.name]; !ok {
		f.byName[n.name] = n
	}
	return n
}

func key(a, b string, r int) linkKey {
	if b < a {
		a, b = b, a
	}
	return linkKey{a, b, r}
}

// test records the result of a pair test between a and b on rail r at both
// ends; a later test of the same link replaces it, as in the store.
func (f *fleet) test(a, b string, r int, pass bool, start int) {
	f.links[key(a, b, r)] = result{pass: pass, start: start}
}

// testOnly records a result at one exporter only (instance inst).
func (f *fleet) testOnly(inst, self, peer string, r int, pass bool, start int) {
	if f.own[inst] == nil {
		f.own[inst] = map[linkKey]result{}
	}
	f.own[inst][key(self, peer, r)] = result{pass: pass, start: start}
}

// refusedOnly records at one exporter a test whose connection was refused.
func (f *fleet) refusedOnly(inst, self, peer string, r int, start int) {
	f.testOnly(inst, self, peer, r, false, start)
	f.own[inst][key(self, peer, r)] = result{start: start, reason: "connect_refused"}
}

// series is one input series of a promtool test.
type series struct{ name, labels, values string }

// lbl renders label pairs in the given order.
func lbl(kv ...string) string {
	var b strings.Builder
	for i := 0; i < len(kv); i += 2 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%s=%q", kv[i], kv[i+1])
	}
	return b.String()
}

// exports lists the series every exporting node exports, held constant
// over the test.
func (f *fleet) exports(steps int) []series {
	var out []series
	cst := func(v int) string { return fmt.Sprintf("%dx%d", v, steps) }
	for _, n := range f.nodes {
		if n.silent {
			continue
		}
		// The links this exporter holds: those both ends recorded, or its own.
		mine := map[linkKey]result{}
		for k, res := range f.links {
			if !n.impostor && (k.a == n.name || k.b == n.name) {
				mine[k] = res
			}
		}
		for k, res := range f.own[n.instance] {
			mine[k] = res
		}
		for ri, r := range n.rails {
			base := lbl("job", "roce-exporter", "instance", n.instance)
			out = append(out, series{"roce_port_info", base + "," + lbl("device", r.device, "port", "1", "link_layer", "Ethernet", "interface", r.iface), cst(1)})
			if r.chassisID != "" {
				out = append(out, series{"roce_lldp_neighbor_info", base + "," + lbl("interface", r.iface, "chassis_id", r.chassisID, "chassis_name", r.chassisName, "port_id", fmt.Sprintf("Ethernet1/%d", portIndex(n.name))), cst(1)})
			}
			var peers []string
			byPeer := map[string]result{}
			for k, res := range mine {
				if k.rail != ri {
					continue
				}
				peer := k.a
				if peer == n.name {
					peer = k.b
				}
				peers = append(peers, peer)
				byPeer[peer] = res
			}
			if len(peers) == 0 {
				continue
			}
			sort.Strings(peers)
			failed, passed, lastPassed := 0, 0, 0
			for _, p := range peers {
				res := byPeer[p]
				ok := 0
				if res.pass {
					ok = 1
					passed++
					lastPassed = max(lastPassed, res.start)
				} else {
					failed++
				}
				link := base + "," + lbl("probe", probe, "peer", p, "device", r.device)
				out = append(out,
					series{"roce_probe_success", link, cst(ok)},
					series{"roce_probe_last_run_timestamp_seconds", link, cst(res.start)})
				if res.reason != "" {
					out = append(out, series{"roce_probe_failure_info", link + "," + lbl("reason", res.reason), cst(1)})
				}
			}
			railLabels := base + "," + lbl("probe", probe, "device", r.device, "rail", fmt.Sprint(ri), "node", n.name)
			out = append(out,
				series{"roce_probe_peers_failed", railLabels, cst(failed)},
				series{"roce_probe_peers_passed", railLabels, cst(passed)})
			if passed > 0 {
				out = append(out, series{"roce_probe_last_passed_timestamp_seconds", railLabels, cst(lastPassed)})
			}
		}
	}
	return out
}

// portIndex is the switch port a node is cabled to (its number in the name).
func portIndex(name string) int {
	var i int
	fmt.Sscanf(strings.TrimLeft(name, "abcdefghijklmnopqrstuvwxyz-"), "%d", &i)
	return i
}

// quote renders s as a YAML double-quoted scalar.
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
