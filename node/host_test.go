package node

import (
	"net/netip"
	"testing"
)

func TestHostLookup(t *testing.T) {
	p := netip.MustParsePrefix
	a := netip.MustParseAddr
	h := &HostState{
		Rules: []PolicyRule{
			{Priority: 32766, Action: RuleLookup, Table: TableMain, SuppressPrefixLen: -1},
			{Priority: 0, Action: RuleLookup, Table: TableLocal, SuppressPrefixLen: -1},
			{Priority: 400, Action: RuleLookup, Table: TableMain, SuppressPrefixLen: 0},
			{Priority: 200, Src: p("10.0.0.2/32"), Action: RuleLookup, Table: "20", SuppressPrefixLen: -1},
			{Priority: 300, Src: p("10.0.0.3/32"), Invert: true, Action: RuleLookup, Table: "30", SuppressPrefixLen: -1},
			{Priority: 150, Src: p("10.0.0.2/32"), Selective: true, Action: "unreachable", SuppressPrefixLen: -1},
		},
		Routes: []Route{
			{Table: TableMain, Dst: p("0.0.0.0/0"), Type: "unicast", Dev: "eth0", Metric: 0},
			{Table: TableMain, Dst: p("10.0.0.0/24"), Type: "unicast", Dev: "rail0", Metric: 100},
			{Table: TableMain, Dst: p("10.0.0.0/24"), Type: "unicast", Dev: "rail1", Metric: 50},
			{Table: TableLocal, Dst: p("10.0.0.2/32"), Type: "local", Dev: "rail1"},
			{Table: TableLocal, Dst: p("10.0.0.255/32"), Type: "broadcast", Dev: "rail0"},
			{Table: "20", Dst: p("10.0.0.0/25"), Type: "throw"},
			{Table: "30", Dst: p("10.0.0.0/24"), Type: "unicast", Dev: "rail3"},
		},
	}
	for _, c := range []struct {
		src, dst string
		dev      string
		prio     int
	}{
		// suppress_prefixlength 0 passes over the lookup's default route
		// but keeps the subnet route, the lowest metric of equal prefixes.
		{"10.0.0.9", "10.0.0.20", "rail3", 300}, // inverted: every source but .3
		{"10.0.0.3", "10.0.0.20", "rail1", 400},
		{"10.0.0.3", "8.8.8.8", "eth0", 32766},
		// A throw route goes on to the next rule (the selective refusal is
		// passed over).
		{"10.0.0.2", "10.0.0.20", "rail3", 300},
		{"10.0.0.2", "10.0.0.2", "rail1", 0},
	} {
		d := h.Lookup(a(c.src), a(c.dst))
		if d.Route == nil || d.Route.Dev != c.dev || d.Rule.Priority != c.prio || d.Refused != "" {
			t.Errorf("%s -> %s: %+v (rule %+v), want %s by rule %d", c.src, c.dst, d.Route, d.Rule, c.dev, c.prio)
		}
	}
	h.Routes = append(h.Routes, Route{Table: "30", Dst: p("10.0.0.64/26"), Type: "blackhole"})
	if d := h.Lookup(a("10.0.0.9"), a("10.0.0.70")); d.Refused != "blackhole" {
		t.Errorf("blackhole route: %+v", d)
	}
	if d := (&HostState{}).Lookup(a("10.0.0.9"), a("10.0.0.70")); d.Route != nil || d.Rule != nil {
		t.Errorf("no rules: %+v", d)
	}
}
