package collector

import (
	"maps"
	"slices"
	"strconv"

	"github.com/roce-exporter/roce_exporter/probes"
)

// The probe families that make a fleet's results judgeable: how long a
// result counts, when a kind last ran, and per rail how many distinct peers
// it failed and passed with among the fresh results. A few series per probe
// kind and rail, whatever the fleet size; the cross-node joins that name a
// suspect NIC, node or path are recording rules (alerts/recording_rules.yml).
var (
	probeFreshnessBound = newGaugeDesc(namespace+"_probe_freshness_bound_seconds", "How long a result of this probe counts: probes.fresh_rounds intervals plus the timeout. Older link results are no longer exported or judged.", "probe")
	probeLastCompleted  = newGaugeDesc(namespace+"_probe_last_completed_timestamp_seconds", "Start (Unix time) of the newest run of this probe that was not skipped, on any link.", "probe")
	probeStale          = newGaugeDesc(namespace+"_probe_stale_results", "Links whose last result is older than the freshness bound and is therefore dropped from the link series and the peer judgement.", "probe")
	probeJudgeLabels    = []string{"probe", "device", "rail", "node"}
	probePeersFailed    = newGaugeDesc(namespace+"_probe_peers_failed", "Distinct peers this rail's last fresh pair-probe result failed with, or whose scheduled test reached this node on other rails but never this one (node is this node's plan name, for the cross-node rules).", probeJudgeLabels...)
	probePeersPassed    = newGaugeDesc(namespace+"_probe_peers_passed", "Distinct peers this rail's last fresh pair-probe result passed with, leaving out a pass followed by failures with three or more other peers (the rail broke since).", probeJudgeLabels...)
	probeLastPassed     = newGaugeDesc(namespace+"_probe_last_passed_timestamp_seconds", "Start (Unix time) of this rail's newest fresh passing pair-probe test; absent when none passed.", probeJudgeLabels...)
	probeUntestable     = newGaugeDesc(namespace+"_probe_untestable_rails", "This node's rails that no peer in the plan can test with this pair probe: it pairs rail i with rail i, and every other node has fewer rails. 0 when every rail is testable.", "probe")
	probeIdentity       = newGaugeDesc(namespace+"_probe_identity_mismatch", "1 while none of the compute IPs the plan gives this node's name is on the node: it runs under another node's name (check --node.name), and its pair probes and ping neither run nor serve; 0 once its addresses match. Absent while they could not be read.")
)

func updateProbeFleet(store *probes.Store, out *Sink) {
	for _, k := range store.Kinds() {
		if k.Bound > 0 {
			out.emit(probeFreshnessBound, k.Bound.Seconds(), k.Probe)
			out.emit(probeStale, float64(k.Stale), k.Probe)
		}
		if !k.LastCompleted.IsZero() {
			out.emit(probeLastCompleted, float64(k.LastCompleted.UnixNano())/1e9, k.Probe)
		}
	}
	for _, kind := range slices.Sorted(maps.Keys(store.UntestableRails())) {
		out.emit(probeUntestable, float64(len(store.UntestableRails()[kind])), kind)
	}
	if mismatch, known := store.IdentityMismatch(); known {
		out.emit(probeIdentity, boolFloat(mismatch))
	}
	self := store.Self()
	for _, j := range store.Judge() {
		l := []string{j.Probe, j.Device, strconv.Itoa(j.Rail), self}
		out.emit(probePeersFailed, float64(j.PeersFailed), l...)
		out.emit(probePeersPassed, float64(j.PeersPassed), l...)
		if !j.LastPassed.IsZero() {
			out.emit(probeLastPassed, float64(j.LastPassed.UnixNano())/1e9, l...)
		}
	}
}
