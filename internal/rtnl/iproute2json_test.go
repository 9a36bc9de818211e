package rtnl

import (
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/node"
)

func open(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func addr(s string) netip.Addr  { return netip.MustParseAddr(s) }

func TestParseRulesRecorded(t *testing.T) {
	got, err := ParseRules(open(t, "ip-rule-per-rail.json"))
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(prio int, src netip.Prefix, table string) node.PolicyRule {
		return node.PolicyRule{Priority: prio, Src: src, Action: node.RuleLookup, Table: table, SuppressPrefixLen: -1}
	}
	want := []node.PolicyRule{
		lookup(0, netip.Prefix{}, "local"), lookup(1001, pfx("10.226.0.11/32"), "101"), lookup(1002, pfx("10.226.0.12/32"), "102"),
		lookup(32766, netip.Prefix{}, "main"), lookup(32767, netip.Prefix{}, "default"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rules\n got %+v\nwant %+v", got, want)
	}
}

func TestParseRoutesRecorded(t *testing.T) {
	got, err := ParseRoutes(open(t, "ip-route-default.json"))
	if err != nil {
		t.Fatal(err)
	}
	// 9 IPv4 routes; the 5 IPv6 ones are left out.
	if len(got) != 9 {
		t.Fatalf("%d routes: %+v", len(got), got)
	}
	want0 := node.Route{Table: "main", Dst: pfx("10.226.0.0/24"), Type: "unicast", Dev: "rail0", PrefSrc: addr("10.226.0.11")}
	wantLocal := node.Route{Table: "local", Dst: pfx("10.226.0.12/32"), Type: "local", Dev: "rail1", PrefSrc: addr("10.226.0.12")}
	if got[0] != want0 || got[3] != wantLocal {
		t.Errorf("routes[0] %+v\nroutes[3] %+v", got[0], got[3])
	}
	h := &node.HostState{Rules: mustRules(t, "ip-rule-default.json"), Routes: got}
	// Without policy routing every packet to the subnet leaves by rail0,
	// whatever its source.
	if d := h.Lookup(addr("10.226.0.12"), addr("10.226.0.22")); d.Route == nil || d.Route.Dev != "rail0" || d.Rule.Table != "main" {
		t.Errorf("from rail1's address: %+v", d)
	}
	per := &node.HostState{Rules: mustRules(t, "ip-rule-per-rail.json"), Routes: mustRoutes(t, "ip-route-per-rail.json")}
	for src, dev := range map[string]string{"10.226.0.11": "rail0", "10.226.0.12": "rail1", "10.226.0.99": "rail0"} {
		if d := per.Lookup(addr(src), addr("10.226.0.22")); d.Route == nil || d.Route.Dev != dev {
			t.Errorf("per-rail, from %s: %+v, want %s", src, d, dev)
		}
	}
}

func mustRules(t *testing.T, name string) []node.PolicyRule {
	t.Helper()
	r, err := ParseRules(open(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustRoutes(t *testing.T, name string) []node.Route {
	t.Helper()
	r, err := ParseRoutes(open(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestParseNeighborsRecorded(t *testing.T) {
	flux, err := ParseNeighbors(open(t, "ip-neigh-arp-flux.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := []node.Neighbor{
		{Dev: "rail0", IP: addr("10.226.0.21"), MAC: "0a:ab:ea:c9:46:ca", State: "REACHABLE"},
		{Dev: "rail0", IP: addr("10.226.0.22"), MAC: "0a:ab:ea:c9:46:ca", State: "REACHABLE"},
	}
	if !reflect.DeepEqual(flux, want) {
		t.Errorf("ARP flux: %+v", flux)
	}
	per, err := ParseNeighbors(open(t, "ip-neigh-per-rail.json"))
	if err != nil || len(per) != 3 || per[1] != (node.Neighbor{Dev: "rail0", IP: addr("10.226.0.99"), State: "INCOMPLETE"}) || per[2].Dev != "rail1" {
		t.Errorf("per rail: %+v, %v", per, err)
	}
}

// What ip prints for rules the checks must not take for "every packet from
// this source", and the shapes of other actions.
func TestParseRulesSelectorsAndActions(t *testing.T) {
	got, err := ParseRules(strings.NewReader(`[
{"priority":10,"src":"10.0.0.0","srclen":8,"fwmark":"0x1","table":"100"},
{"priority":11,"src":"all","iif":"lo","table":"101"},
{"priority":12,"not":null,"src":"10.1.0.1","iif":"eth0","table":"102"},
{"priority":13,"src":"all","action":"unreachable"},
{"priority":14,"src":"all","table":"main","suppress_prefixlen":0},
{"priority":15,"src":"fe80::1","table":"main"},
{"priority":16,"src":"all","goto":20}]`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 {
		t.Fatalf("%d rules (the IPv6 one left out): %+v", len(got), got)
	}
	if r := got[0]; r.Src != pfx("10.0.0.0/8") || !r.Selective || r.SelectorText != "fwmark" {
		t.Errorf("fwmark rule %+v", r)
	}
	if r := got[1]; r.Selective || r.Table != "101" {
		t.Errorf("iif lo is every locally sent packet: %+v", r)
	}
	if r := got[2]; !r.Invert || !r.Selective || r.SelectorText != "iif eth0" {
		t.Errorf("not iif eth0: %+v", r)
	}
	if r := got[3]; r.Action != "unreachable" || r.Table != "" {
		t.Errorf("unreachable: %+v", r)
	}
	if r := got[4]; r.SuppressPrefixLen != 0 {
		t.Errorf("suppress_prefixlength 0: %+v", r)
	}
	if r := got[5]; r.Action != node.RuleGoto {
		t.Errorf("goto: %+v", r)
	}
}

func TestParseCapturesErrors(t *testing.T) {
	for name, c := range map[string]struct {
		parse func(string) error
		text  string
	}{
		"rule text output":   {parseRulesText, "0:\tfrom all lookup local\n"},
		"rule without table": {parseRulesText, `[{"priority":1,"src":"all"}]`},
		"rule bad src":       {parseRulesText, `[{"priority":1,"src":"10.0.0.300","table":"main"}]`},
		"route bad dst":      {parseRoutesText, `[{"dst":"10.0.0.0/33","dev":"eth0"}]`},
		"route bad gateway":  {parseRoutesText, `[{"dst":"default","gateway":"x","dev":"eth0"}]`},
		"route an object":    {parseRoutesText, `{"dst":"default"}`},
		"neigh bad dst":      {parseNeighText, `[{"dst":"nope","dev":"eth0"}]`},
		"neigh bad state":    {parseNeighText, `[{"dst":"10.0.0.1","dev":"eth0","state":"REACHABLE"}]`},
	} {
		if err := c.parse(c.text); !ErrMalformed(err) {
			t.Errorf("%s: err = %v, want malformed", name, err)
		}
	}
	// An IPv6 default route and a multipath route.
	got, err := ParseRoutes(strings.NewReader(`[{"dst":"default","gateway":"fe80::1","dev":"eth0","protocol":"ra","metric":1024,"flags":[],"pref":"medium"},
{"dst":"10.9.0.0/16","flags":[],"nexthops":[{"gateway":"10.0.0.1","dev":"rail0","weight":1,"flags":[]},{"gateway":"10.0.1.1","dev":"rail1","weight":1,"flags":[]}]}]`))
	if err != nil || len(got) != 1 || got[0].Dev != "rail0" || got[0].Gateway != addr("10.0.0.1") {
		t.Errorf("multipath: %+v, %v", got, err)
	}
	got, err = ParseRoutes(strings.NewReader(`[{"dst":"default","gateway":"10.0.0.1","dev":"eth0","flags":[]}]`))
	if err != nil || len(got) != 1 || got[0].Dst != pfx("0.0.0.0/0") {
		t.Errorf("default route: %+v, %v", got, err)
	}
}

func parseRulesText(s string) error  { _, err := ParseRules(strings.NewReader(s)); return err }
func parseRoutesText(s string) error { _, err := ParseRoutes(strings.NewReader(s)); return err }
func parseNeighText(s string) error  { _, err := ParseNeighbors(strings.NewReader(s)); return err }
