package rtnl

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/internal/testenv"
	"github.com/roce-exporter/roce_exporter/node"
)

// TestDumpMatchesIPJSON reads a namespace's rules, routes and neighbours
// through the kernel's rtnetlink dumps and compares them with what
// iproute2's `ip -j` prints of the same namespace, parsed by this
// package's capture readers: the two decoders must agree on everything the
// checks read, for the plain rules and routes of two rails in one subnet
// and for the kinds a host may also have (selectors, refusing actions,
// suppress_prefixlength, multipath, a gateway, a metric).
func TestDumpMatchesIPJSON(t *testing.T) {
	testenv.RequireRoot(t)
	ip := testenv.LookPath(t, "iproute2", "ip")
	ns := fmt.Sprintf("roce-hygiene26-rtnl-%d", os.Getpid()%100000)
	peer := ns + "-p"
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, n := range []string{ns, peer} {
		run("netns", "add", n)
		t.Cleanup(func() { _ = exec.Command(ip, "netns", "del", n).Run() })
	}
	for i := 0; i < 2; i++ {
		run("link", "add", fmt.Sprintf("rail%d", i), "netns", ns, "type", "veth", "peer", "name", fmt.Sprintf("peer%d", i), "netns", peer)
		run("-n", ns, "link", "set", fmt.Sprintf("rail%d", i), "up")
		run("-n", peer, "link", "set", fmt.Sprintf("peer%d", i), "up")
		run("-n", ns, "addr", "add", fmt.Sprintf("10.226.0.%d/24", 11+i), "dev", fmt.Sprintf("rail%d", i))
		run("-n", peer, "addr", "add", fmt.Sprintf("10.226.0.%d/24", 21+i), "dev", fmt.Sprintf("peer%d", i))
		run("-n", ns, "rule", "add", "from", fmt.Sprintf("10.226.0.%d", 11+i), "table", fmt.Sprint(101+i), "priority", fmt.Sprint(1001+i))
		run("-n", ns, "route", "add", "10.226.0.0/24", "dev", fmt.Sprintf("rail%d", i), "src", fmt.Sprintf("10.226.0.%d", 11+i), "table", fmt.Sprint(101+i))
	}
	run("-n", ns, "rule", "add", "fwmark", "0x10", "table", "150", "priority", "1500")
	run("-n", ns, "rule", "add", "from", "10.50.0.0/16", "unreachable", "priority", "1600")
	run("-n", ns, "rule", "add", "not", "from", "10.60.0.1", "iif", "lo", "table", "160", "priority", "1700")
	run("-n", ns, "rule", "add", "table", "main", "suppress_prefixlength", "0", "priority", "1800")
	run("-n", ns, "route", "add", "10.9.0.0/16", "table", "200", "nexthop", "via", "10.226.0.21", "dev", "rail0", "nexthop", "via", "10.226.0.22", "dev", "rail1")
	run("-n", ns, "route", "add", "default", "via", "10.226.0.21", "dev", "rail0", "metric", "100")
	run("-n", ns, "route", "add", "unreachable", "10.70.0.0/16", "table", "201")
	run("-n", ns, "neigh", "add", "10.226.0.30", "lladdr", "02:00:00:00:00:30", "dev", "rail1", "nud", "permanent")
	for i := 0; i < 2; i++ {
		_ = exec.Command(ip, "netns", "exec", ns, "ping", "-c1", "-W1", "-I", fmt.Sprintf("10.226.0.%d", 11+i), fmt.Sprintf("10.226.0.%d", 21+i)).Run()
	}

	f, err := os.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := New(Config{NetNS: int(f.Fd())})
	defer c.Close()
	got, err := c.Dump()
	if err != nil {
		t.Fatal(err)
	}
	capture := func(args ...string) *bytes.Reader {
		out, err := exec.Command(ip, append([]string{"-n", ns, "-j"}, args...)...).Output()
		if err != nil {
			t.Fatalf("ip %v: %v", args, err)
		}
		return bytes.NewReader(out)
	}
	rules, err := ParseRules(capture("rule", "show"))
	if err != nil {
		t.Fatal(err)
	}
	routes, err := ParseRoutes(capture("route", "show", "table", "all"))
	if err != nil {
		t.Fatal(err)
	}
	neigh, err := ParseNeighbors(capture("neigh", "show"))
	if err != nil {
		t.Fatal(err)
	}
	// ip names the selectors by its JSON keys, the decoder by what they
	// are: whether a rule is selective is what both must agree on.
	for _, rs := range [][]node.PolicyRule{got.Rules, rules} {
		for i := range rs {
			rs[i].SelectorText = ""
		}
	}
	if !reflect.DeepEqual(got.Rules, rules) {
		t.Errorf("rules\nnetlink %+v\n     ip %+v", got.Rules, rules)
	}
	sortRoutes(got.Routes)
	sortRoutes(routes)
	if !reflect.DeepEqual(got.Routes, routes) {
		t.Errorf("routes\nnetlink %+v\n     ip %+v", got.Routes, routes)
	}
	slices.SortFunc(got.Neighbors, func(a, b node.Neighbor) int { return a.IP.Compare(b.IP) })
	slices.SortFunc(neigh, func(a, b node.Neighbor) int { return a.IP.Compare(b.IP) })
	if !reflect.DeepEqual(got.Neighbors, neigh) {
		t.Errorf("neighbours\nnetlink %+v\n     ip %+v", got.Neighbors, neigh)
	}
	if len(got.Rules) != 9 || len(got.Neighbors) < 3 {
		t.Errorf("%d rules, %d neighbours: the namespace was not set up", len(got.Rules), len(got.Neighbors))
	}
	// Per-rail routing as the kernel decides it.
	h := &node.HostState{Rules: got.Rules, Routes: got.Routes}
	if d := h.Lookup(addr("10.226.0.12"), addr("10.226.0.22")); d.Route == nil || d.Route.Dev != "rail1" || d.Rule.Table != "102" {
		t.Errorf("from rail1: %+v", d)
	}
	if d := h.Lookup(addr("10.50.1.1"), addr("10.226.0.22")); d.Refused != "unreachable" {
		t.Errorf("from 10.50/16: %+v", d)
	}
}

func sortRoutes(rs []node.Route) {
	slices.SortFunc(rs, func(a, b node.Route) int {
		return cmp.Or(strings.Compare(a.Table, b.Table), a.Dst.Addr().Compare(b.Dst.Addr()), a.Dst.Bits()-b.Dst.Bits(),
			strings.Compare(a.Dev, b.Dev), strings.Compare(a.Type, b.Type))
	})
}

// The dump refuses a namespace it cannot enter.
func TestDumpBadNamespace(t *testing.T) {
	c := New(Config{NetNS: 1 << 20})
	defer c.Close()
	if _, err := c.Dump(); err == nil {
		t.Fatal("dump through a bad namespace fd succeeded")
	}
}
