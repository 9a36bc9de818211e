package main

import (
	"fmt"
	"strconv"
)

// Times of the test rounds (Unix seconds): results of a round start at its
// time plus the tester's position, so the order of every two results is
// known. A fault starts before the onset round; earlier rounds passed.
const (
	round1 = 1000
	round2 = 2000
	onset  = 3000
	round4 = 4000
	round5 = 5000
	round6 = 6000
)

// The expected alerts, rendered as the rules render them.

func switchAlert(leaf, chassisID string, failing, nodes, others, passing int, share string) alert {
	return alert{"RoCEProbeSuspectSwitch",
		[]string{"severity", "critical", "probe", probe, "chassis_id", chassisID, "chassis_name", leaf},
		fmt.Sprintf("%s: %d rails on %d nodes under switch %s (%s) failed with healthy rails under %d other switches, and %d passed across switches since (%s of those tested failed): suspect the switch's uplinks, or the switch, not its NICs; the NIC, node and path suspects under it stand aside.",
			probe, failing, nodes, leaf, chassisID, others, passing, share)}
}

// switchAlertNearEnd is switchAlert named on the near ends' records alone:
// the far ends recorded nothing (a black-holed exchange).
func switchAlertNearEnd(leaf, chassisID string, failing, nodes, others int, share string) alert {
	return alert{"RoCEProbeSuspectSwitch",
		[]string{"severity", "critical", "probe", probe, "chassis_id", chassisID, "chassis_name", leaf},
		fmt.Sprintf("%s: %d rails on %d nodes under switch %s (%s) each failed with 2 or more healthy rails under %d other switches, none of which recorded the failure (the test's connection never got through) (%s of its rails tested across switches since failed): suspect the switch's uplinks, or the switch, not its NICs; the NIC, node and path suspects under it stand aside.",
			probe, failing, nodes, leaf, chassisID, others, share)}
}

// nicAlert: sw is the NIC's switch as LLDP names it, "" when unknown.
func nicAlert(f *fleet, name string, rail, peers int, sw string) alert {
	n := f.byName[name]
	d := fmt.Sprintf("%s on %s device %s (rail %d) failed with %d different peers that pass with others, and the node's other rails pass: suspect this NIC, its cable or transceiver, or its leaf switch port.",
		probe, n.instance, n.rails[rail].device, rail, peers)
	if sw != "" {
		d += fmt.Sprintf(" Its switch, %s, is not a suspect.", sw)
	} else {
		d += " Its switch is unknown (no LLDP neighbour for the port), so a switch fault cannot be ruled out from here."
	}
	return alert{"RoCEProbeSuspectNICPort",
		[]string{"severity", "warning", "job", "roce-exporter", "instance", n.instance, "probe", probe, "device", n.rails[rail].device, "rail", fmt.Sprint(rail), "node", name}, d}
}

func nodeAlert(name, instance string) alert {
	return alert{"RoCEProbeSuspectNode",
		[]string{"severity", "warning", "job", "roce-exporter", "instance", instance, "probe", probe, "node", name},
		fmt.Sprintf("%s: node %s (%s) fails on every rail with peers that pass with others (or is down while its peers fail with it): suspect the node itself – host, PCIe, driver or power – rather than one NIC or the fabric.", probe, name, instance)}
}

func pathAlert(f *fleet, from, to string, rail int) alert {
	n := f.byName[from]
	return alert{"RoCEProbeSuspectPath",
		[]string{"severity", "warning", "job", "roce-exporter", "instance", n.instance, "probe", probe, "peer", to, "device", n.rails[rail].device, "rail", fmt.Sprint(rail), "node", from},
		fmt.Sprintf("%s from %s device %s (rail %d) to %s failed, while both ends failed with no one else and have passed with other peers since: suspect the path between them (the leaf-to-spine links their flow hashes onto), not either NIC.",
			probe, n.instance, n.rails[rail].device, rail, to)}
}

// The leaves of the rail-optimised fleet most cases use: 4 pods of 6 nodes
// with 2 rails, rail r of pod p on leaf-p<p>-r<r>.
const (
	pods, perPod = 4, 6
	leafP0R1     = "0c:42:a1:00:00:01"
)

func fleet24() *fleet { return railOptimised(pods, perPod, 2, true) }

func cases() []testCase {
	var cs []testCase

	// A leaf loses every uplink, in the steady state: every fresh result of its
	// rails is from after the fault, all across switches.
	f := fleet24()
	f.round(7, onset, uplinksLost("leaf-p0-r1"))
	f.round(12, round4, uplinksLost("leaf-p0-r1"))
	cs = append(cs, testCase{
		comment: `A rail-optimised fleet: 4 pods of 6 nodes, rail r of pod p on leaf-p<p>-r<r>.
leaf-p0-r1 has lost every spine uplink; each node tested with the nodes 7 and 12
positions on (other pods), on both rails, after the fault. The 6 rails under the
leaf failed with 3 peers each that pass with others and passed with none: before,
6 RoCEProbeSuspectNICPort. They are one switch suspect; the NICs stand aside, and
the rails elsewhere that failed only with them are no suspects.`,
		fleet: f,
		want:  []alert{switchAlert("leaf-p0-r1", leafP0R1, 6, 6, 3, 0, "100%")},
		exprs: []exprTest{
			{"count(instance_rail:roce_probe_switch:info)", []sample{{"{}", "48"}}},
			{`peer_rail:roce_probe_switch:info{peer="gpu001"}`, []sample{
				{`peer_rail:roce_probe_switch:info{probe="ib_write_bw",peer="gpu001",rail="0",chassis_id="0c:42:a1:00:00:00"}`, "1"},
				{`peer_rail:roce_probe_switch:info{probe="ib_write_bw",peer="gpu001",rail="1",chassis_id="0c:42:a1:00:00:01"}`, "1"}}},
			// 18 failed links across switches, recorded at both ends; every link
			// crosses two pods.
			{"count(instance_peer_rail:roce_probe_cross_switch_link_failed:bool == 1)", []sample{{"{}", "36"}}},
			{"count(instance_peer_rail:roce_probe_cross_switch_link_failed:bool == 0)", []sample{{"{}", "108"}}},
			// Every rail passed across switches but the 6 under the leaf.
			{"count(peer_rail:roce_probe_cross_switch_passing:max)", []sample{{"{}", "42"}}},
			{"count by (chassis_id, peer_chassis_id) (instance_peer_rail:roce_probe_switch_failure:timestamp)", []sample{
				{`{chassis_id="0c:42:a1:00:00:01",peer_chassis_id="0c:42:a1:00:01:01"}`, "5"},
				{`{chassis_id="0c:42:a1:00:00:01",peer_chassis_id="0c:42:a1:00:02:01"}`, "8"},
				{`{chassis_id="0c:42:a1:00:00:01",peer_chassis_id="0c:42:a1:00:03:01"}`, "5"}}},
			{"chassis_id:roce_probe_failing_rails:count", []sample{
				{`chassis_id:roce_probe_failing_rails:count{probe="ib_write_bw",chassis_id="0c:42:a1:00:00:01"}`, "6"}}},
			{"chassis_id:roce_probe_passing_rails:count", nil},
			{"chassis_id:roce_probe_switch_suspect:failing_ratio", []sample{
				{`chassis_id:roce_probe_switch_suspect:failing_ratio{probe="ib_write_bw",chassis_id="0c:42:a1:00:00:01",chassis_name="leaf-p0-r1"}`, "1"}}},
			{"count(instance_rail:roce_probe_switch_suspect:info)", []sample{{"{}", "6"}}},
			{"node:roce_probe_name_claims:count", nil},
		},
	})

	// The same without LLDP: the rules behave as before and say so.
	f = railOptimised(pods, perPod, 2, false)
	f.round(7, onset, uplinksLost("leaf-p0-r1"))
	f.round(12, round4, uplinksLost("leaf-p0-r1"))
	var want []alert
	for i := 1; i <= perPod; i++ {
		want = append(want, nicAlert(f, fmt.Sprintf("gpu%03d", i), 1, 3, ""))
	}
	cs = append(cs, testCase{
		comment: `The same fault on nodes without LLDP data: no switch is known, so no switch is
named, and the 6 rails are NIC suspects as before, each saying its switch is unknown.`,
		fleet: f,
		want:  want,
		exprs: []exprTest{{"instance_rail:roce_probe_switch:info", nil}},
		// No switch can be to blame that the rules could name: no hold.
		earlier: []alertAt{{"1m", "RoCEProbeSuspectNICPort", want}},
	})

	// The leaf loses its uplinks with older passes still fresh: nothing alone.
	f = fleet24()
	f.round(1, round1, healthy)
	f.round(6, round2, healthy)
	f.round(7, onset, uplinksLost("leaf-p0-r1"))
	f.round(2, round5, uplinksLost("leaf-p0-r1"))
	cs = append(cs, testCase{
		comment: `leaf-p0-r1 loses every uplink an hour after its rails passed with the nodes 1 and
6 positions on; since, they tested with the nodes 7 positions on (failed, other pods)
and 2 positions on (passed where that stays in the pod). Every rail under the leaf
still has passes, so before nothing was suspected. The passes from before the
failures and those with rails under the same leaf do not count for it: every rail
under it that was tested across switches since failed.`,
		fleet: f,
		want:  []alert{switchAlert("leaf-p0-r1", leafP0R1, 6, 6, 3, 0, "100%")},
	})

	// The leaf loses half its uplinks: about half its tests across switches fail.
	f = fleet24()
	half := flowsLost(1, [2]string{"gpu001", "gpu008"}, [2]string{"gpu001", "gpu018"}, [2]string{"gpu001", "gpu013"},
		[2]string{"gpu002", "gpu009"}, [2]string{"gpu002", "gpu014"}, [2]string{"gpu003", "gpu020"},
		[2]string{"gpu004", "gpu011"}, [2]string{"gpu004", "gpu021"}, [2]string{"gpu004", "gpu016"}, [2]string{"gpu006", "gpu023"})
	f.round(7, onset, half)
	f.round(12, round4, half)
	cs = append(cs, testCase{
		comment: `leaf-p0-r1 has lost half its uplinks: the flows ECMP hashes onto them are lost, 10 of
its rails' 18 tests across switches (with the nodes 7 and 12 positions on). Before:
NIC suspects gpu001 and gpu004 (failed 3 times, passed never) and path suspects
gpu003-gpu020 and gpu006-gpu023, seen from both ends (each end failed once and passed
since). 5 of the leaf's 6 rails failed with healthy peers, gpu005's passed: one switch
suspect, and they all stand aside.`,
		fleet: f,
		want:  []alert{switchAlert("leaf-p0-r1", leafP0R1, 5, 5, 3, 1, "83.33%")},
	})

	// A rack's top-of-rack switch loses its uplinks.
	f = rackOptimised(5, 4, 2)
	f.round(4, onset, uplinksLost("tor-0"))
	f.round(8, round4, uplinksLost("tor-0"))
	cs = append(cs, testCase{
		comment: `A rack-optimised fleet: 5 racks of 4 nodes with 2 rails, every rail of a rack's nodes
on its ToR. tor-0 has lost its uplinks; each node tested with the nodes 4 and 8
positions on and back (other racks). The 4 nodes under it fail on every rail with
peers that pass with others: before, 4 RoCEProbeSuspectNode ("the host, PCIe, driver
or power"). One switch suspect; the nodes stand aside.`,
		fleet: f,
		want:  []alert{switchAlert("tor-0", "0c:42:a1:01:00:00", 8, 4, 4, 0, "100%")},
	})

	// One spine path between two leaves.
	f = fleet24()
	broken := [][2]string{{"gpu001", "gpu007"}, {"gpu003", "gpu009"}, {"gpu005", "gpu011"}}
	f.round(6, onset, flowsLost(1, broken...))
	f.round(7, round4, healthy)
	f.round(12, round5, healthy)
	f.round(1, round6, healthy)
	want = nil
	for _, p := range broken {
		want = append(want, pathAlert(f, p[0], p[1], 1), pathAlert(f, p[1], p[0], 1))
	}
	cs = append(cs, testCase{
		comment: `One spine link between leaf-p0-r1 and leaf-p1-r1 black-holes the flows hashed onto
it: 3 pairs of rails fail once, then pass with others. 3 failing rails under each of
the two leaves, half of those tested across switches since: but each fails only with
rails under the other leaf, which is the path between them, not either switch. 3
path suspects, seen from both ends.`,
		fleet: f,
		want:  want,
		earlier: []alertAt{
			// promtool evaluates the rule groups in a random order: the
			// recording rules' first output is at 0m or 1m, and the alert,
			// pending until then, fires 5 minutes later.
			{"4m", "RoCEProbeSuspectPath", nil},
			{"7m", "RoCEProbeSuspectPath", want},
		},
		exprs: []exprTest{
			{"chassis_id:roce_probe_failing_rails:count", []sample{
				{`chassis_id:roce_probe_failing_rails:count{probe="ib_write_bw",chassis_id="0c:42:a1:00:00:01"}`, "3"},
				{`chassis_id:roce_probe_failing_rails:count{probe="ib_write_bw",chassis_id="0c:42:a1:00:01:01"}`, "3"}}},
			{"chassis_id:roce_probe_passing_rails:count", []sample{
				{`chassis_id:roce_probe_passing_rails:count{probe="ib_write_bw",chassis_id="0c:42:a1:00:00:01"}`, "3"},
				{`chassis_id:roce_probe_passing_rails:count{probe="ib_write_bw",chassis_id="0c:42:a1:00:01:01"}`, "3"}}},
			{"chassis_id:roce_probe_switch_suspect:failing_ratio", nil},
			{"count(instance_peer_rail:roce_probe_path_suspect:timestamp)", []sample{{"{}", "6"}}},
		},
	})

	// The first minutes of a leaf losing some of its uplinks: one failed pair
	// looks like a path until the leaf's second failing rail.
	pathLike := func() *fleet {
		f := fleet24()
		f.round(6, round1, healthy)
		f.test("gpu001", "gpu008", 1, false, onset)
		f.test("gpu001", "gpu013", 1, true, onset+100)
		f.test("gpu008", "gpu020", 1, true, onset+100)
		return f
	}
	f = pathLike()
	f.test("gpu002", "gpu009", 1, false, onset+200)
	f.test("gpu002", "gpu014", 1, false, onset+201)
	cs = append(cs, testCase{
		comment: `Minutes into leaf-p0-r1 losing half its uplinks: gpu001's rail 1 failed with gpu008 (under
leaf-p1-r1), and both passed with others since; for its first minute that is what a
broken path is, and instance_peer_rail:roce_probe_path_suspect:timestamp holds it. Then
gpu002's rail 1 fails with 2 far ends under other leaves: 2 failing rails under the leaf,
which may be becoming a switch suspect, and the pair waits for it. Before:
RoCEProbeSuspectPath for the pair in that first minute (the simulator's half-uplinks
trial, 28 s). A path is named only when it stays one for 2 minutes: no suspect.`,
		before:        pathLike(),
		beforeMinutes: 1,
		fleet:         f,
		earlier: []alertAt{
			{"0m", "RoCEProbeSuspectPath", nil},
			{"1m", "RoCEProbeSuspectPath", nil},
			{"2m", "RoCEProbeSuspectPath", nil},
			{"3m", "RoCEProbeSuspectPath", nil},
		},
		exprs: []exprTest{
			{"count(instance_rail:roce_probe_switch_suspect:info)", []sample{{"{}", "6"}}},
			{"instance_peer_rail:roce_probe_path_suspect:timestamp", nil},
		},
	})

	// Two bad NICs under one 32-port switch.
	f = bigPodAcrossPods(anyOf(nicBad("gpu005", 1), nicBad("gpu017", 1)))
	cs = append(cs, testCase{
		comment: `Pod 0 has 32 nodes, pods 1 and 2 have 8; each node of pod 0 tested with 3 nodes of the
other pods. Two NICs under leaf-p0-r1 are bad (gpu005 and gpu017, rail 1): each fails
with its 3 peers, while the 30 other rails under the leaf pass across switches. Two
NIC suspects, no switch.`,
		fleet: f,
		want:  []alert{nicAlert(f, "gpu005", 1, 3, "leaf-p0-r1"), nicAlert(f, "gpu017", 1, 3, "leaf-p0-r1")},
		exprs: railCounts("0c:42:a1:00:00:01", 2, 30),
		// Two nodes under the leaf fail across switches, fewer than a leaf
		// losing uplinks soon shows: each is held 2 minutes, as one bad NIC
		// (from 0m or 1m: silent at 1m, named at 4m).
		earlier: []alertAt{{"1m", "RoCEProbeSuspectNICPort", nil}, {"4m", "RoCEProbeSuspectNICPort", []alert{nicAlert(f, "gpu005", 1, 3, "leaf-p0-r1"), nicAlert(f, "gpu017", 1, 3, "leaf-p0-r1")}}},
	})

	// One bad NIC under a leaf where two other nodes fail across switches.
	f = bigPodAcrossPods(anyOf(nicBad("gpu005", 1), flowsLost(1, [2]string{"gpu017", "gpu033"}, [2]string{"gpu017", "gpu044"},
		[2]string{"gpu020", "gpu036"}, [2]string{"gpu020", "gpu047"})))
	cs = append(cs, testCase{
		comment: `The same fleet minutes into leaf-p0-r1 losing half its uplinks, or with one bad NIC and
unlucky flows: gpu005's rail 1 fails with its 3 peers, and gpu017's and gpu020's each
with 2 of theirs (passing with the third). 3 failing rails of 32 tested across switches:
no switch suspect yet. With three nodes under its leaf failing across switches the NIC
waits 5 minutes, not 2, for the switch's other rails: silent at 4m, named at 7m.`,
		fleet:   f,
		want:    []alert{nicAlert(f, "gpu005", 1, 3, "leaf-p0-r1")},
		earlier: []alertAt{{"4m", "RoCEProbeSuspectNICPort", nil}, {"7m", "RoCEProbeSuspectNICPort", []alert{nicAlert(f, "gpu005", 1, 3, "leaf-p0-r1")}}},
	})

	// One bad NIC under a leaf where two other nodes failed across switches once.
	f = bigPodAcrossPods(anyOf(nicBad("gpu005", 1), flowsLost(1, [2]string{"gpu017", "gpu033"}, [2]string{"gpu020", "gpu036"})))
	nic := nicAlert(f, "gpu005", 1, 3, "leaf-p0-r1")
	cs = append(cs, testCase{
		comment: `The same fleet with one bad spine link behind leaf-p0-r1, or one bad NIC and two unlucky
flows: gpu005's rail 1 fails with its 3 peers, and gpu017's and gpu020's each with one far
end under leaf-p1-r1 (passing with the others), two path suspects. Under a switch whose
uplinks black-hole some flows a healthy NIC fails with its peer and both witnesses when
all three flows hash onto the bad link (the simulator: a wrong NIC suspect for 4.5
minutes in 1 of 31 trials of a bad spine path, after its 5-minute hold): the NIC waits 12
minutes, for its next turn to pass or fail again: silent at 11m, named at 13m.`,
		fleet: f,
		want: []alert{pathAlert(f, "gpu017", "gpu033", 1), pathAlert(f, "gpu033", "gpu017", 1),
			pathAlert(f, "gpu020", "gpu036", 1), pathAlert(f, "gpu036", "gpu020", 1)},
		earlier: []alertAt{{"11m", "RoCEProbeSuspectNICPort", nil}, {"13m", "RoCEProbeSuspectNICPort", []alert{nic}}},
		// Both ends of each failed flow, under their own leaves; not the bad
		// NIC's victims.
		exprs: []exprTest{{"chassis_id_node:roce_probe_single_cross_switch_failure:info", []sample{
			{`chassis_id_node:roce_probe_single_cross_switch_failure:info{probe="ib_write_bw",chassis_id="0c:42:a1:00:00:01",node="gpu017"}`, "1"},
			{`chassis_id_node:roce_probe_single_cross_switch_failure:info{probe="ib_write_bw",chassis_id="0c:42:a1:00:00:01",node="gpu020"}`, "1"},
			{`chassis_id_node:roce_probe_single_cross_switch_failure:info{probe="ib_write_bw",chassis_id="0c:42:a1:00:01:01",node="gpu033"}`, "1"},
			{`chassis_id_node:roce_probe_single_cross_switch_failure:info{probe="ib_write_bw",chassis_id="0c:42:a1:00:01:01",node="gpu036"}`, "1"}}}},
	})

	// The same with one path-like rail beside two failing ones: the 12-minute
	// hold takes a single other node too.
	f = bigPodAcrossPods(anyOf(nicBad("gpu005", 1), flowsLost(1, [2]string{"gpu017", "gpu033"}, [2]string{"gpu017", "gpu044"},
		[2]string{"gpu020", "gpu036"})))
	cs = append(cs, testCase{
		comment: `The same fleet: gpu005's rail 1 fails with its 3 peers, gpu017's with 2 of its 3, and
gpu020's with one far end under leaf-p1-r1 (passing with the others), a path suspect. Three
nodes under the leaf fail across switches (the 5-minute hold), and one of them, not the
NIC's own, failed with one far end alone: the NIC waits 12 minutes, silent at 11m, named
at 13m.`,
		fleet:   f,
		want:    []alert{pathAlert(f, "gpu020", "gpu036", 1), pathAlert(f, "gpu036", "gpu020", 1)},
		earlier: []alertAt{{"11m", "RoCEProbeSuspectNICPort", nil}, {"13m", "RoCEProbeSuspectNICPort", []alert{nicAlert(f, "gpu005", 1, 3, "leaf-p0-r1")}}},
	})

	// A switch with only two NICs under it, one of them bad.
	f = fleet24()
	for _, name := range []string{"gpu023", "gpu024"} {
		f.byName[name].rails[1] = port(1, "leaf-p3b-r1", "0c:42:a1:00:13:01", true)
	}
	f.round(6, onset, nicBad("gpu024", 1))
	f.round(7, round4, nicBad("gpu024", 1))
	f.round(12, round5, nicBad("gpu024", 1))
	cs = append(cs, testCase{
		comment: `Rail 1 of gpu023 and gpu024 is on a small leaf, leaf-p3b-r1, with no other NIC. gpu024's
NIC is bad: half of the leaf's rails fail with healthy peers under other switches, a
share that alone would blame the switch (R-Pingmesh's weakness with two NICs under a
switch). One failing rail is a NIC: one NIC suspect, no switch.`,
		fleet: f,
		want:  []alert{nicAlert(f, "gpu024", 1, 5, "leaf-p3b-r1")},
		exprs: railCounts("0c:42:a1:00:13:01", 1, 1),
		// A switch of two NICs is never named: no hold.
		earlier: []alertAt{{"1m", "RoCEProbeSuspectNICPort", []alert{nicAlert(f, "gpu024", 1, 5, "leaf-p3b-r1")}}},
	})

	// One bad NIC under a healthy switch, and a healthy fleet.
	f = fleet24()
	f.round(6, onset, nicBad("gpu003", 1))
	f.round(7, round4, nicBad("gpu003", 1))
	f.round(12, round5, nicBad("gpu003", 1))
	cs = append(cs, testCase{
		comment: `One bad NIC (gpu003 rail 1) under a healthy leaf: one NIC suspect, no switch. Its
leaf could be named (6 rails on 6 nodes), so the NIC is held 2 minutes first: silent
at 1m, named at 4m (the suspect begins at 0m or 1m, promtool evaluating the groups
of one instant in either order).`,
		fleet:   f,
		want:    []alert{nicAlert(f, "gpu003", 1, 5, "leaf-p0-r1")},
		earlier: []alertAt{{"1m", "RoCEProbeSuspectNICPort", nil}, {"4m", "RoCEProbeSuspectNICPort", []alert{nicAlert(f, "gpu003", 1, 5, "leaf-p0-r1")}}},
		// The start is carried from the first evaluation on, not renewed.
		exprs: []exprTest{{"instance_rail:roce_probe_nic_suspect:since <= bool 60", []sample{{"{device=\"" + f.byName["gpu003"].rails[1].device + "\", instance=\"gpu003:14791\", job=\"roce-exporter\", node=\"gpu003\", probe=\"" + probe + "\", rail=\"1\"}", "1"}}}},
	})
	f = fleet24()
	f.round(6, onset, healthy)
	f.round(7, round4, healthy)
	f.round(12, round5, healthy)
	cs = append(cs, testCase{
		comment: `Every test passes (noise is retested and passes): nothing is suspected.`,
		fleet:   f,
		exprs:   []exprTest{{"instance_peer_rail:roce_probe_switch_failure:timestamp", nil}},
	})

	// Two faults at once: a leaf without uplinks and a NIC under another leaf.
	f = fleet24()
	fault := anyOf(uplinksLost("leaf-p0-r1"), nicBad("gpu016", 1))
	f.round(7, onset, fault)
	f.round(12, round4, fault)
	cs = append(cs, testCase{
		comment: `Two faults at once: leaf-p0-r1 has lost its uplinks (as in the first case) and gpu016's
rail-1 NIC, under leaf-p2-r1, is bad. gpu016 failed with 2 healthy peers and with a rail
under the broken leaf, which is no healthy peer. The rails under leaf-p2-r1 that fail
with the broken leaf's rails are its victims, no evidence against their own leaf; a far
end that failed with both broken parts is evidence against neither. One switch and one
NIC suspect.`,
		fleet: f,
		want:  []alert{switchAlert("leaf-p0-r1", leafP0R1, 6, 6, 3, 0, "100%"), nicAlert(f, "gpu016", 1, 2, "leaf-p2-r1")},
	})

	// A leaf loses its uplinks and only two of its rails have been tested since.
	f = early(fleet24(), 6, 1, map[string][]string{"gpu001": {"gpu008", "gpu014"}, "gpu002": {"gpu009"}})
	cs = append(cs, testCase{
		comment: `Minutes into leaf-p0-r1 losing its uplinks: gpu001's rail 1 failed with 2 far ends under
other leaves (which pass across switches), gpu002's with 1; no other rail under the leaf
was tested since. Before: RoCEProbeSuspectNICPort for gpu001, minutes before the switch
rule had its 3 rails. 2 failing rails on 2 nodes, all of those tested, one failing with
2 far ends: the switch may be becoming a suspect, and gpu001 waits for it.`,
		fleet: f,
		exprs: []exprTest{
			{"chassis_id:roce_probe_switch_suspect:failing_ratio", nil},
			{"count(instance_rail:roce_probe_switch_suspect:info)", []sample{{"{}", "2"}}},
			{"instance_rail:roce_probe_nic_suspect:healthy_peers", nil},
		},
	})
	f = early(fleet24(), 6, 1, map[string][]string{"gpu001": {"gpu008", "gpu014"}})
	cs = append(cs, testCase{
		comment: `The same first minutes of one bad NIC (gpu001 rail 1) under a healthy leaf: 1 failing rail
is no switch in the making; the NIC is named at once.`,
		fleet: f,
		want:  []alert{nicAlert(f, "gpu001", 1, 2, "leaf-p0-r1")},
		exprs: []exprTest{{"instance_rail:roce_probe_switch_suspect:info", nil}},
	})

	// The same with the far ends' records missing: a black-holed TCP exchange.
	f = earlyBlackHoled(fleet24(), 6, 1, map[string][]string{"gpu001": {"gpu008", "gpu014"}, "gpu002": {"gpu009"}})
	cs = append(cs, testCase{
		comment: `The same minutes into leaf-p0-r1 losing its uplinks, with the test's TCP exchange
black-holed too: only gpu001 and gpu002 recorded their failures, the far ends recorded
nothing (a responder records only a test that connected). No evidence against the leaf
then (the far ends have no failure of their own), and gpu001 was a NIC suspect until the
far ends tested the leaf's rails themselves. The far ends pass across switches and fail
with no one: weak evidence, enough for gpu001 to wait.`,
		fleet: f,
		exprs: []exprTest{
			{"instance_peer_rail:roce_probe_switch_failure:timestamp", nil},
			{"count(instance_peer_rail:roce_probe_switch_weak_failure:timestamp)", []sample{{"{}", "3"}}},
			{"chassis_id:roce_probe_weak_failing_rails:ratio", []sample{
				{`chassis_id:roce_probe_weak_failing_rails:ratio{probe="ib_write_bw",chassis_id="` + leafP0R1 + `"}`, "1"}}},
			{"count(instance_rail:roce_probe_switch_suspect:info)", []sample{{"{}", "2"}}},
			{"instance_rail:roce_probe_nic_suspect:healthy_peers", nil},
		},
	})
	f = earlyBlackHoled(fleet24(), 6, 1, map[string][]string{"gpu001": {"gpu008", "gpu014"}})
	cs = append(cs, testCase{
		comment: `The same first minutes of one bad NIC (gpu001 rail 1) under a healthy leaf, its far ends
with no record of the failures: weak evidence against the leaf from 1 rail is no switch
in the making; the NIC is named at once.`,
		fleet: f,
		want:  []alert{nicAlert(f, "gpu001", 1, 2, "leaf-p0-r1")},
		exprs: []exprTest{{"instance_rail:roce_probe_switch_suspect:info", nil}},
	})

	// A retest refused: the responder recorded the first, transient failure.
	f = fleet24()
	f.round(6, round1, healthy)
	f.testOnly("gpu002:14791", "gpu002", "gpu013", 1, false, onset)
	f.refusedOnly("gpu013:14791", "gpu013", "gpu002", 1, onset+30)
	f.round(7, round4, healthy)
	cs = append(cs, testCase{
		comment: `gpu013's first attempt at gpu002 on rail 1 failed once (a transient: it would pass its
retest), and its responder, gpu002, recorded that failure; the retest found gpu002's
responder busy with another node's retest and was refused. Both pass with others since.
Before: RoCEProbeSuspectPath for the pair, the responder's one transient failure its last
word on the link. A refused connection says nothing of the link, and a broken path is a
failure both ends record: no suspect.`,
		fleet: f,
		exprs: []exprTest{
			{"instance_peer_rail:roce_probe_link_failed:bool{instance=\"gpu013:14791\",peer=\"gpu002\"}", nil},
			{"instance_peer_rail:roce_probe_path_suspect:timestamp", nil},
		},
	})

	// A rack's ToR loses its uplinks and only two of its nodes have been tested since.
	f = early(rackOptimised(5, 4, 2), 4, -1, map[string][]string{"gpu001": {"gpu005", "gpu006"}, "gpu002": {"gpu007"}})
	cs = append(cs, testCase{
		comment: `A rack-optimised fleet (5 racks of 4 nodes, 2 rails) minutes into tor-0 losing its
uplinks: gpu001 failed on both rails with 2 nodes of rack 1 (which pass across
switches), gpu002 with 1; no other node under the ToR was tested since. Before:
RoCEProbeSuspectNode for gpu001 ("the host, PCIe, driver or power"). Failures with one
other switch only are no switch suspect yet (the path between the two ToRs fails so
too), but 4 failing rails on 2 nodes may be becoming one: gpu001 waits for it.`,
		fleet: f,
		exprs: []exprTest{
			{"chassis_id:roce_probe_switch_suspect:failing_ratio", nil},
			{"count(instance_rail:roce_probe_switch_suspect:info)", []sample{{"{}", "4"}}},
			{"node:roce_probe_suspect_node:max", nil},
			{"instance_rail:roce_probe_nic_suspect:healthy_peers", nil},
		},
	})
	// The minute before that: gpu001 alone has failed, which is what a bad node is.
	torFirst := func() *fleet {
		return early(rackOptimised(5, 4, 2), 4, -1, map[string][]string{"gpu001": {"gpu005", "gpu006"}})
	}
	cs = append(cs, testCase{
		comment: `The same ToR a minute earlier: gpu001 alone has failed, on both rails with 2 healthy nodes
of rack 1, which is what a bad node is; a minute later gpu002 fails too and gpu001's
rails wait for the switch. Before: RoCEProbeSuspectNode for gpu001 in that minute (the
simulator's ToR trial, seed 10 of 128 nodes, 58 s). A node is named only when it stays
one for 2 minutes: no suspect.`,
		before:        torFirst(),
		beforeMinutes: 1,
		fleet:         early(rackOptimised(5, 4, 2), 4, -1, map[string][]string{"gpu001": {"gpu005", "gpu006"}, "gpu002": {"gpu007"}}),
		earlier: []alertAt{
			{"0m", "RoCEProbeSuspectNode", nil},
			{"1m", "RoCEProbeSuspectNode", nil},
			{"2m", "RoCEProbeSuspectNode", nil},
			{"3m", "RoCEProbeSuspectNode", nil},
		},
		exprs: []exprTest{{"node:roce_probe_suspect_node:max", nil}},
	})
	f = early(rackOptimised(5, 4, 2), 4, -1, map[string][]string{"gpu001": {"gpu005", "gpu009"}})
	cs = append(cs, testCase{
		comment: `The same first minutes of one bad node (gpu001) under a healthy ToR: one node's rails are
the node's fault, named once it has held 2 minutes: recorded at 0m, and seen by the alerts'
group at 0m or 1m (promtool evaluates the groups of one instant in either order), it is
silent at 1m and named at 3m.`,
		earlier: []alertAt{{"1m", "RoCEProbeSuspectNode", nil}, {"3m", "RoCEProbeSuspectNode", []alert{nodeAlert("gpu001", "gpu001:14791")}}},
		fleet:   f,
		want:    []alert{nodeAlert("gpu001", "gpu001:14791")},
		// Held from its first evaluation (0m or 1m), not restarted at each.
		exprs: []exprTest{{"node:roce_probe_suspect_node:since <= bool 60", []sample{{"{instance=\"gpu001:14791\", job=\"roce-exporter\", node=\"gpu001\", probe=\"" + probe + "\"}", "1"}}}},
	})

	// The ToR's uplinks black-hole the tests' TCP exchange too: no far end has a
	// record of any failure.
	f = earlyBlackHoled(rackOptimised(5, 4, 2), 4, -1, map[string][]string{"gpu001": {"gpu005", "gpu009"}, "gpu002": {"gpu006", "gpu013"}})
	cs = append(cs, testCase{
		comment: `The same ToR with the tests' TCP exchange black-holed: gpu001 and gpu002 each failed on
both rails with 2 nodes of other racks (their scheduled test and a witness), which pass
across switches and recorded nothing, as a responder records only a test that connected.
Before: no suspect at all, the nodes waiting for a switch that the far ends' records alone
could name (the simulator's ToR at 1,024 nodes: named after 22 minutes, or not within the
hour). 4 rails on 2 nodes, each failing with 2 far ends under 3 other switches: the switch.`,
		fleet: f,
		want:  []alert{switchAlertNearEnd("tor-0", "0c:42:a1:01:00:00", 4, 2, 3, "100%")},
		exprs: []exprTest{{"instance_peer_rail:roce_probe_switch_failure:timestamp", nil}},
	})
	f = earlyBlackHoled(rackOptimised(5, 4, 2), 4, -1, map[string][]string{"gpu001": {"gpu005", "gpu009"}})
	cs = append(cs, testCase{
		comment: `One bad node (gpu001) under a healthy ToR, its far ends with no record of the failures:
2 rails on one node are the node's, named once it has held 2 minutes.`,
		earlier: []alertAt{{"1m", "RoCEProbeSuspectNode", nil}},
		fleet:   f,
		want:    []alert{nodeAlert("gpu001", "gpu001:14791")},
	})
	f = earlyBlackHoled(fleet24(), 6, 1, map[string][]string{"gpu001": {"gpu008", "gpu014", "gpu020"}, "gpu002": {"gpu009", "gpu015", "gpu021"}})
	cs = append(cs, testCase{
		comment: `Two bad NICs under leaf-p0-r1 (gpu001 and gpu002, rail 1), each failing with 3 far ends
under 3 other leaves that recorded nothing: 2 rails are two NICs, no switch (they wait
until the leaf's other rails pass across switches, as above).`,
		fleet: f,
		exprs: []exprTest{
			{"chassis_id:roce_probe_switch_suspect:failing_ratio", nil},
			{"count(instance_rail:roce_probe_switch_suspect:info)", []sample{{"{}", "2"}}},
		},
	})

	// A bad node.
	f = fleet24()
	f.round(6, onset, nodeBad("gpu010"))
	f.round(7, round4, nodeBad("gpu010"))
	f.round(12, round5, nodeBad("gpu010"))
	cs = append(cs, testCase{
		comment: `gpu010 fails on both rails with every peer: a node suspect. Each of its leaves has one
failing rail, no switch suspect; its rails under two switches, it is named at once
(a rack's ToR fails every rail of a node only when they all sit under it).`,
		fleet:   f,
		want:    []alert{nodeAlert("gpu010", "gpu010:14791")},
		earlier: []alertAt{{"1m", "RoCEProbeSuspectNode", []alert{nodeAlert("gpu010", "gpu010:14791")}}},
	})

	// A node down.
	f = fleet24()
	f.byName["gpu010"].silent = true
	f.round(6, onset, nodeBad("gpu010"))
	f.round(7, round4, nodeBad("gpu010"))
	f.round(12, round5, nodeBad("gpu010"))
	cs = append(cs, testCase{
		comment: `gpu010 is down and exports nothing; its 5 peers failed with it on both rails and pass
with others: a node suspect (without instance), named at once. Its rails have no known
switch, so the failures with it are no evidence against any switch.`,
		fleet: f,
		earlier: []alertAt{{"1m", "RoCEProbeSuspectNode", []alert{{"RoCEProbeSuspectNode", []string{"severity", "warning", "probe", probe, "node", "gpu010"},
			probe + ": node gpu010 fails on every rail with peers that pass with others (or is down while its peers fail with it): suspect the node itself – host, PCIe, driver or power – rather than one NIC or the fabric."}}}},
		want: []alert{{"RoCEProbeSuspectNode", []string{"severity", "warning", "probe", probe, "node", "gpu010"},
			probe + ": node gpu010 fails on every rail with peers that pass with others (or is down while its peers fail with it): suspect the node itself – host, PCIe, driver or power – rather than one NIC or the fabric."}},
		exprs: []exprTest{{"instance_peer_rail:roce_probe_switch_failure:timestamp", nil}},
	})

	// An exporter started under another node's name.
	cs = append(cs, impostorCases()...)
	return cs
}

// impostorCases: gpu001's rail-1 NIC is bad; a second exporter, gpu009,
// runs under the name gpu001.
func impostorCases() []testCase {
	build := func() *fleet {
		f := railOptimised(1, 4, 2, false)
		f.round(1, onset, nicBad("gpu001", 1))
		f.round(2, round4, nicBad("gpu001", 1))
		return f
	}
	f := build()
	imp := f.add(&node{name: "gpu001", instance: "gpu009:14791", rails: f.byName["gpu002"].rails, impostor: true})
	for r := 0; r < 2; r++ {
		for _, peer := range []string{"gpu003", "gpu004"} {
			f.testOnly(imp.instance, "gpu001", peer, r, false, round5)
		}
	}
	conflict := alert{"RoCEProbeNodeNameConflict",
		[]string{"severity", "warning", "probe", probe, "node", "gpu001"},
		fmt.Sprintf("%s: 2 exporters (gpu001:14791, gpu009:14791) export results under node name gpu001: one of them runs under another node's name. Until it is fixed the localisation neither blames gpu001 nor counts its results.", probe)}

	g := build()
	g.extra = append(g.extra, "      - series: 'roce_probe_identity_mismatch{job=\"roce-exporter\",instance=\"gpu009:14791\"}'\n        values: '1x15'\n")
	mismatch := alert{"RoCEProbeIdentityMismatch",
		[]string{"severity", "warning", "job", "roce-exporter", "instance", "gpu009:14791"},
		"gpu009:14791 was started with a node name whose compute IPs in the probe plan are not on its interfaces: it refuses to run pair probes under that name, so its rails are not tested. Fix its --node.name (default: the short hostname) or the plan."}
	return []testCase{
		{
			comment: `4 nodes without LLDP; gpu001's rail-1 NIC is bad. A fifth exporter, gpu009, was
started with the name gpu001: its tests fail with gpu003 and gpu004 on both rails
(they are not its peers' tests). Before: RoCEProbeSuspectNode{node="gpu001",
instance="gpu009:14791"}, blaming the victim's name, and gpu001's own NIC alert stood
aside for it. Now the name conflict is named, and the name is no suspect until it is
fixed.`,
			fleet: f,
			want:  []alert{conflict},
			exprs: []exprTest{{"node:roce_probe_name_claims:count", []sample{
				{`node:roce_probe_name_claims:count{probe="ib_write_bw",node="gpu001"}`, "2"}}}},
		},
		{
			comment: `The same impostor on an exporter that checks its identity: the plan's compute IPs of
gpu001 are not on its interfaces, so it refuses to run pair probes and says so. No
conflict: gpu001's NIC is named as usual.`,
			fleet: g,
			want:  []alert{mismatch, nicAlert(g, "gpu001", 1, 3, "")},
		},
	}
}

// railCounts expects a switch's failing and passing rails (ib_write_bw).
func railCounts(chassisID string, failing, passing int) []exprTest {
	var tests []exprTest
	for _, c := range []struct {
		what string
		n    int
	}{{"failing", failing}, {"passing", passing}} {
		name := "chassis_id:roce_probe_" + c.what + "_rails:count"
		tests = append(tests, exprTest{
			fmt.Sprintf("%s{chassis_id=%q}", name, chassisID),
			[]sample{{fmt.Sprintf("%s{probe=\"ib_write_bw\",chassis_id=%q}", name, chassisID), strconv.Itoa(c.n)}},
		})
	}
	return tests
}

// bigPodAcrossPods is a fleet of a 32-node pod and two 8-node pods with 2
// rails, each node of the big pod tested on both rails with 3 nodes of the
// small pods: enough rails under one leaf for a share that tells a few bad
// NICs from a switch. fails says which of those tests fail.
func bigPodAcrossPods(fails faultFunc) *fleet {
	f := railOptimisedPods([]int{32, 8, 8}, 2)
	for i := 0; i < 32; i++ {
		a := f.nodes[i]
		for k, peer := range []*node{f.nodes[32+i%8], f.nodes[40+(i+3)%8], f.nodes[32+(i+5)%8]} {
			for r := 0; r < 2; r++ {
				f.test(a.name, peer.name, r, !fails(a, peer, r), onset+100*k+i)
			}
		}
	}
	return f
}
