package config

import (
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/reader"
)

// sampleInput reads a sample node as plan init does.
func sampleInput(t *testing.T, scenario, name string) DraftInput {
	t.Helper()
	root := filepath.Join("..", "collector", "testdata", scenario)
	o := reader.Options{SysPath: filepath.Join(root, "sys"), DevPath: filepath.Join(root, "dev"), ReplayDir: filepath.Join(root, "replay"),
		Timeout: 10 * time.Second, Sources: reader.SourceNames()}
	r, err := reader.New(o, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	in := DraftInput{Node: name, Snapshot: r.Read().Snapshot, Source: "sample node " + scenario}
	in.Addresses, _ = reader.HostAddresses(o)
	return in
}

// The demo node's draft loads as a plan, with no warning and nothing to
// confirm, and says what the node has: its rails in order, its addresses,
// the expectations it meets.
func TestDraftOfTheDemoNodeRoundTrips(t *testing.T) {
	d := NewDraft(sampleInput(t, "mlx5-8x400g-healthy", "node01"))
	text := d.YAML()
	p, err := Parse("draft.yaml", text)
	if err != nil {
		t.Fatalf("the draft does not load: %v\n%s", err, text)
	}
	if len(p.Warnings) > 0 || len(d.Confirm) > 0 || strings.Contains(string(text), "# CONFIRM") {
		t.Errorf("warnings %v, to confirm %v:\n%s", p.Warnings, d.Confirm, text)
	}
	n, ok := p.Node("node01")
	if !ok || n.ManagementIP != netip.MustParseAddr("10.0.0.11") || len(n.Interfaces) != 8 {
		t.Fatalf("node %+v", n)
	}
	for i, iface := range n.Interfaces {
		if iface.Netdev != fmt.Sprintf("ens%df0np0", i+1) || iface.RDMADevice != fmt.Sprintf("mlx5_%d", i) ||
			iface.Address != netip.MustParsePrefix(fmt.Sprintf("192.168.%d.11/24", 100+i)) {
			t.Errorf("rail %d: %+v", i, iface)
		}
	}
	e := p.Expectations
	if e.MTU != 9000 || *e.PFCPriority != 3 || e.Trust != TrustDSCP || !*e.ECN || e.LinkRateGbps != 400 || e.RoCEMode != RoCEv2 ||
		*e.RoCEDSCP != 26 || *e.CNPDSCP != 48 || p.Networks.Management != netip.MustParsePrefix("10.0.0.0/24") || len(p.Networks.Compute) != 8 {
		t.Errorf("expectations %+v, networks %+v", e, p.Networks)
	}
	if !strings.Contains(string(text), "- netdev: ens1f0np0           # rail 0, cabled to leaf-1 Ethernet0") {
		t.Errorf("the rails do not say where they are cabled:\n%s", text)
	}
}

// A node that is wrong today does not become the expectation: the degraded
// node's MTU 1500, PFC on 0, trust PCP and ECN off stay faults the doctor
// reports, each said in a CONFIRM comment; the down port's address, which
// the node cannot show, is left for a person, and the draft says it does
// not load until then.
func TestDraftDoesNotAdoptFaults(t *testing.T) {
	d := NewDraft(sampleInput(t, "mlx5-degraded", "node01"))
	text := string(d.YAML())
	for _, want := range []string{
		"CONFIRM: 7 of 8 ports have MTU 9000; ens4f0np0 has 1500, which fails mtu_matches_plan until it is set to 9000 mtu: 9000",
		"CONFIRM: 7 of 8 ports protect priority 3; ens8f0np0 has PFC on 0 today, which the PFC checks report until it is PFC on 3 alone pfc_priority: 3",
		"ens1f0np0 has trust pcp, which fails trust_mode_matches_plan trust: dscp",
		"ECN is off on priority 3 of ens7f0np0 today: DCQCN needs it, so true is written and ecn_enabled fails until it is on (write false only for a fabric without ECN by design) ecn: true",
		"mlx5_4 runs 28.37.1014, the others 28.39.1002",
		"rdma_device: mlx5_1 ip: - netdev: ens3f0np0",
	} {
		if !strings.Contains(flat(text), want) {
			t.Errorf("the draft lacks %q:\n%s", want, text)
		}
	}
	if len(d.Confirm) != 6 {
		t.Errorf("to confirm: %q", d.Confirm)
	}
	_, err := Parse("draft.yaml", []byte(text))
	if err == nil || !strings.Contains(err.Error(), "nodes[0].interfaces[1].ip: is required") {
		t.Fatalf("the draft with a missing address loads: %v", err)
	}
	// Once a person writes the address, it loads: the faults are the
	// node's, not the plan's.
	filled := strings.Replace(text, "        # ip:\n", "        ip: 192.168.101.11/24\n", 1)
	filled = strings.Replace(filled, "    - 192.168.100.0/24\n", "    - 192.168.100.0/24\n    - 192.168.101.0/24\n", 1)
	p, err := Parse("draft.yaml", []byte(filled))
	if err != nil {
		t.Fatalf("filled in, the draft does not load: %v", err)
	}
	if p.Expectations.MTU != 9000 || *p.Expectations.PFCPriority != 3 || p.Expectations.Trust != TrustDSCP {
		t.Errorf("expectations %+v", p.Expectations)
	}
}

// A node whose every port is wrong: the usual values are written, not the
// node's, and the node's are named.
func TestDraftOfAWrongNodeWritesTheUsualValues(t *testing.T) {
	in := sampleInput(t, "mlx5-8x400g-healthy", "node01")
	for _, i := range in.Snapshot.Interfaces {
		i.MTU = 1500
	}
	for _, dcb := range in.Snapshot.DCB {
		dcb.PFCEnabled = [8]bool{}
	}
	text := string(NewDraft(in).YAML())
	for _, want := range []string{
		"CONFIRM: all 8 ports have MTU 1500 today, too small for RoCE's 4096-byte packets (at least 4192): the usual 9000 is written, not 1500",
		"(or write what your switches carry) mtu: 9000",
		"PFC is off on every port today: the usual priority 3 is written",
		"by design pfc_priority: 3",
	} {
		if !strings.Contains(flat(text), want) {
			t.Errorf("the draft lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "mtu: 1500") {
		t.Error("the node's MTU 1500 became the expectation")
	}
}

// A name YAML would read as something else (a number, a boolean) is
// quoted, so that the plan holds the name.
func TestDraftQuotesNames(t *testing.T) {
	for _, name := range []string{"0042", "on", "1e3"} {
		text := NewDraft(sampleInput(t, "mlx5-8x400g-healthy", name)).YAML()
		p, err := Parse("draft.yaml", text)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := p.Node(name); !ok {
			t.Errorf("%s: nodes %v", name, p.NodeNames())
		}
	}
}

// flat is the draft's text with comment marks and line breaks gone, so
// that a test reads a comment whatever its wrapping.
func flat(text string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(text, "#", " ")), " ")
}

// planWithComments is a plan as a person keeps it: comments, blank lines, a
// section after the nodes.
func planWithComments(t *testing.T) []byte {
	t.Helper()
	draft := string(NewDraft(sampleInput(t, "mlx5-8x400g-healthy", "node01")).YAML())
	draft = strings.Replace(draft, "# probes: off until", "\n# Our probes, kept by hand.\nprobes:\n  enabled: false   # on after the doctor is clean\n\n# probes: off until", 1)
	return []byte("# The A-team's cluster. Do not edit on Fridays.\n" + draft)
}

// secondNode is the demo node as node02: its addresses one higher.
func secondNode(t *testing.T, host string) DraftInput {
	in := sampleInput(t, "mlx5-8x400g-healthy", "node02")
	bump := func(p netip.Prefix) netip.Prefix {
		a := p.Addr().As4()
		a[3]++
		if host != "" {
			return netip.MustParsePrefix(host)
		}
		return netip.PrefixFrom(netip.AddrFrom4(a), p.Bits())
	}
	for _, i := range in.Snapshot.Interfaces {
		for k, a := range i.Addresses {
			if a.Addr().Is4() {
				i.Addresses[k] = bump(a)
			}
		}
	}
	in.Addresses = map[string][]netip.Prefix{"eno1": {netip.MustParsePrefix("10.0.0.12/24")}}
	return in
}

// Adding a second node keeps every byte of the plan and puts the node at
// the end of its nodes; the result loads with both.
func TestAddNodeKeepsThePlan(t *testing.T) {
	plan := planWithComments(t)
	merged, err := AddNode("cluster.yaml", plan, NewDraft(secondNode(t, "")))
	if err != nil {
		t.Fatal(err)
	}
	// The new entry goes after node01's last line, before the blank lines
	// and comments of the next section.
	last := "ip: 192.168.107.11/24\n"
	head, tail, ok := strings.Cut(string(plan), last)
	if !ok || !strings.HasPrefix(string(merged), head+last+"  - name: node02\n") || !strings.HasSuffix(string(merged), "ip: 192.168.107.12/24\n"+tail) {
		t.Errorf("the plan around the new node changed:\n%s", merged)
	}
	p, err := Parse("cluster.yaml", merged)
	if err != nil {
		t.Fatalf("%v\n%s", err, merged)
	}
	if names := p.NodeNames(); len(names) != 2 || names[1] != "node02" {
		t.Errorf("nodes %v", names)
	}
	if n, _ := p.Node("node02"); n.Interfaces[7].Address != netip.MustParsePrefix("192.168.107.12/24") || n.ManagementIP != netip.MustParseAddr("10.0.0.12") {
		t.Errorf("node02 %+v", n)
	}
	if strings.Count(string(merged), "# CONFIRM") != strings.Count(string(plan), "# CONFIRM") {
		t.Errorf("a node like the plan's needs nothing confirmed:\n%s", merged)
	}
	// Again: it is there already.
	if _, err := AddNode("cluster.yaml", merged, NewDraft(secondNode(t, ""))); err == nil || !strings.Contains(err.Error(), "node node02 is already in the plan") {
		t.Errorf("adding node02 twice: %v", err)
	}
}

// A node that does not fit the plan is added with a CONFIRM comment saying
// where; the plan check then names the line.
func TestAddNodeSaysWhereItDiffers(t *testing.T) {
	in := secondNode(t, "192.168.200.12/24")
	for _, i := range in.Snapshot.Interfaces {
		i.MTU = 4200
	}
	merged, err := AddNode("cluster.yaml", planWithComments(t), NewDraft(in))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"rail 0's 192.168.200.12/24 is outside networks.compute", "expectations.mtu is 9000 in the plan, this node's draft has 4200"} {
		if !strings.Contains(string(merged), want) {
			t.Errorf("merged plan lacks %q:\n%s", want, merged)
		}
	}
	if _, err := Parse("cluster.yaml", merged); err == nil || !strings.Contains(err.Error(), "192.168.200.12/24 is outside the compute") {
		t.Errorf("the merged plan: %v", err)
	}
}

// Every sample node drafts without a crash, and its draft either loads or
// says what a person must fill in first.
func TestDraftOfEverySampleNode(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join("..", "collector", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		root := filepath.Join("..", "collector", "testdata", e.Name())
		if _, err := os.Stat(filepath.Join(root, "sys")); err != nil {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			o := reader.Options{SysPath: filepath.Join(root, "sys"), DevPath: filepath.Join(root, "dev"), Timeout: 10 * time.Second, Sources: reader.SourceNames()}
			if _, err := os.Stat(filepath.Join(root, "replay")); err == nil {
				o.ReplayDir = filepath.Join(root, "replay")
			}
			r, err := reader.New(o, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			in := DraftInput{Node: "node01", Snapshot: r.Read().Snapshot, Source: "sample node " + e.Name()}
			in.Addresses, _ = reader.HostAddresses(o)
			d := NewDraft(in)
			if d.Ports == 0 {
				return
			}
			_, err = Parse("draft.yaml", d.YAML())
			if err != nil && len(d.Confirm) == 0 {
				t.Errorf("the draft does not load and says nothing to confirm: %v\n%s", err, d.YAML())
			}
		})
	}
}
