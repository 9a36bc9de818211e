package rtnl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/roce-exporter/roce_exporter/internal/safefile"
	"github.com/roce-exporter/roce_exporter/node"
)

// maxCapture bounds a capture: a route is about 150 bytes of JSON, so
// 16 MiB is a hundred thousand of them.
const maxCapture = 16 << 20

// entries reads a JSON array of objects, each kept as its keys.
func entries(r io.Reader, what string) ([]map[string]json.RawMessage, error) {
	data, err := safefile.ReadAll(r, maxCapture)
	if errors.Is(err, safefile.ErrTooLarge) {
		return nil, fmt.Errorf("%w: %s capture %w", errMalformed, what, err)
	}
	if err != nil {
		return nil, fmt.Errorf("rtnl: reading %s capture: %w", what, err)
	}
	var out []map[string]json.RawMessage
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("%w: %s capture is not `ip -j` output: %v", errMalformed, what, err)
	}
	return out, nil
}

func str(e map[string]json.RawMessage, key string) (string, error) {
	raw, ok := e[key]
	if !ok {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%q is not a string", key)
	}
	return s, nil
}

func integer(e map[string]json.RawMessage, key string, def int) (int, error) {
	raw, ok := e[key]
	if !ok {
		return def, nil
	}
	var n int
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, fmt.Errorf("%q is not a number", key)
	}
	return n, nil
}

// ipv6 reports whether s is an IPv6 address or prefix.
func ipv6(s string) bool { return strings.Contains(s, ":") }

// parsePrefix reads "10.0.0.0/24", "10.0.0.1" (a host) or, with lenKey,
// an address and its length in another key as ip -j rule prints them.
func parsePrefix(e map[string]json.RawMessage, key, lenKey string) (netip.Prefix, error) {
	s, err := str(e, key)
	if err != nil || s == "" || s == "all" {
		return netip.Prefix{}, err
	}
	switch s {
	case "default":
		return netip.PrefixFrom(netip.IPv4Unspecified(), 0), nil
	case "0":
		s = "0.0.0.0"
	}
	if strings.Contains(s, "/") {
		return netip.ParsePrefix(s)
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	bits, err := integer(e, lenKey, a.BitLen())
	if err != nil {
		return netip.Prefix{}, err
	}
	return a.Prefix(bits)
}

// ruleSelectors are the keys `ip -j rule` prints for a selector besides
// the source (iprule.c print_rule); "iif" is handled on its own.
var ruleSelectors = []string{"dst", "tos", "fwmark", "oif", "l3mdev", "uid_start", "ipproto", "sport", "sport_start", "dport", "dport_start", "dscp", "flowlabel"}

// ParseRules reads `ip -j rule show` (the IPv4 rules; `ip -j -4 rule`):
//
//	[{"priority":0,"src":"all","table":"local"},{"priority":1001,"src":"10.226.0.11","table":"101"},...]
func ParseRules(r io.Reader) ([]node.PolicyRule, error) {
	es, err := entries(r, "ip rule")
	if err != nil {
		return nil, err
	}
	out := []node.PolicyRule{}
	for i, e := range es {
		rule, ok, err := parseRule(e)
		if err != nil {
			return nil, fmt.Errorf("%w: ip rule entry %d: %v", errMalformed, i, err)
		}
		if ok {
			out = append(out, rule)
		}
	}
	return out, nil
}

func parseRule(e map[string]json.RawMessage) (node.PolicyRule, bool, error) {
	r := node.PolicyRule{Action: node.RuleLookup, SuppressPrefixLen: -1}
	src, err := str(e, "src")
	if err != nil {
		return r, false, err
	}
	if ipv6(src) {
		return r, false, nil
	}
	if r.Src, err = parsePrefix(e, "src", "srclen"); err != nil {
		return r, false, fmt.Errorf("src: %v", err)
	}
	if r.Priority, err = integer(e, "priority", 0); err != nil {
		return r, false, err
	}
	if r.SuppressPrefixLen, err = integer(e, "suppress_prefixlen", -1); err != nil {
		return r, false, err
	}
	_, r.Invert = e["not"]
	var selectors []string
	for _, k := range ruleSelectors {
		if _, ok := e[k]; ok {
			selectors = append(selectors, k)
		}
	}
	if iif, _ := str(e, "iif"); iif != "" && iif != "lo" {
		selectors = append(selectors, "iif "+iif)
	}
	r.Selective, r.SelectorText = len(selectors) > 0, strings.Join(selectors, ", ")
	switch {
	case e["goto"] != nil:
		r.Action = node.RuleGoto
	case e["nop"] != nil:
		r.Action = node.RuleNop
	case e["action"] != nil:
		if r.Action, err = str(e, "action"); err != nil {
			return r, false, err
		}
	default:
		if r.Table, err = str(e, "table"); err != nil {
			return r, false, err
		}
		if r.Table == "" {
			return r, false, errors.New("a lookup rule without a table")
		}
	}
	return r, true, nil
}

// ParseRoutes reads `ip -j route show table all` (IPv6 routes, which it
// lists too without -4, are left out):
//
//	[{"dst":"10.226.0.0/24","dev":"rail0","table":"101","scope":"link","prefsrc":"10.226.0.11","flags":[]},
//	 {"type":"local","dst":"10.226.0.11","dev":"rail0","table":"local",...}, ...]
//
// A route without "table" is in main; without "type", unicast.
func ParseRoutes(r io.Reader) ([]node.Route, error) {
	es, err := entries(r, "ip route")
	if err != nil {
		return nil, err
	}
	out := []node.Route{}
	for i, e := range es {
		rt, ok, err := parseRoute(e)
		if err != nil {
			return nil, fmt.Errorf("%w: ip route entry %d: %v", errMalformed, i, err)
		}
		if ok {
			out = append(out, rt)
		}
	}
	return out, nil
}

func parseRoute(e map[string]json.RawMessage) (node.Route, bool, error) {
	var rt node.Route
	dst, err := str(e, "dst")
	if err != nil {
		return rt, false, err
	}
	gw, err := str(e, "gateway")
	if err != nil {
		return rt, false, err
	}
	prefsrc, err := str(e, "prefsrc")
	if err != nil {
		return rt, false, err
	}
	// IPv6 routes carry IPv6 addresses, or a "pref" only ip -6 prints.
	if _, v6 := e["pref"]; v6 || ipv6(dst) || ipv6(gw) || ipv6(prefsrc) {
		return rt, false, nil
	}
	if rt.Dst, err = parsePrefix(e, "dst", ""); err != nil || !rt.Dst.IsValid() {
		return rt, false, fmt.Errorf("dst %q: %v", dst, err)
	}
	if rt.Type, err = str(e, "type"); err != nil {
		return rt, false, err
	}
	if rt.Type == "" {
		rt.Type = "unicast"
	}
	if rt.Table, err = str(e, "table"); err != nil {
		return rt, false, err
	}
	if rt.Table == "" {
		rt.Table = node.TableMain
	}
	if rt.Dev, err = str(e, "dev"); err != nil {
		return rt, false, err
	}
	if rt.Dev == "" {
		// A multipath route names its devices per next hop.
		var hops []struct {
			Dev     string `json:"dev"`
			Gateway string `json:"gateway"`
		}
		if raw, ok := e["nexthops"]; ok && json.Unmarshal(raw, &hops) == nil && len(hops) > 0 {
			rt.Dev, gw = hops[0].Dev, hops[0].Gateway
		}
	}
	if gw != "" {
		if rt.Gateway, err = netip.ParseAddr(gw); err != nil {
			return rt, false, fmt.Errorf("gateway: %v", err)
		}
	}
	if prefsrc != "" {
		if rt.PrefSrc, err = netip.ParseAddr(prefsrc); err != nil {
			return rt, false, fmt.Errorf("prefsrc: %v", err)
		}
	}
	if rt.Metric, err = integer(e, "metric", 0); err != nil {
		return rt, false, err
	}
	return rt, true, nil
}

// ParseNeighbors reads `ip -j neigh show` (IPv6 entries are left out):
//
//	[{"dst":"10.226.0.21","dev":"rail0","lladdr":"0a:ab:ea:c9:46:ca","state":["REACHABLE"]},
//	 {"dst":"10.226.0.99","dev":"rail0","state":["INCOMPLETE"]}]
func ParseNeighbors(r io.Reader) ([]node.Neighbor, error) {
	es, err := entries(r, "ip neigh")
	if err != nil {
		return nil, err
	}
	out := []node.Neighbor{}
	for i, e := range es {
		dst, err := str(e, "dst")
		if err == nil && ipv6(dst) {
			continue
		}
		var n node.Neighbor
		if err == nil {
			n.IP, err = netip.ParseAddr(dst)
		}
		if err == nil {
			n.Dev, err = str(e, "dev")
		}
		if err == nil {
			n.MAC, err = str(e, "lladdr")
		}
		if err == nil {
			var states []string
			if raw, ok := e["state"]; ok {
				err = json.Unmarshal(raw, &states)
			}
			n.State = strings.Join(states, ",")
		}
		if err != nil {
			return nil, fmt.Errorf("%w: ip neigh entry %d: %v", errMalformed, i, err)
		}
		n.MAC = strings.ToLower(n.MAC)
		out = append(out, n)
	}
	return out, nil
}
