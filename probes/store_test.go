package probes

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
)

// A freshness bound near the longest Duration (a plan from before the plan
// bounded it, or a simulation) must not make the store forget every result
// as it is added: four times the bound wrapped negative.
func TestFreshnessLongBoundKeepsResults(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := NewStore()
	s.SetClock(func() time.Time { return now })
	s.SetFreshness(KindIBWriteBW, config.FreshFor(config.Schedule{Interval: 6500 * time.Hour, Timeout: 90 * time.Second}, 100))
	s.Add(&Result{Probe: KindIBWriteBW, Peer: "b", Device: "mlx5_0", Start: now, Success: true})
	if got := len(s.Latest()); got != 1 {
		t.Fatalf("%d results kept, want the one just added", got)
	}
	s.SetFreshness(KindIBWriteBW, config.FreshFor(config.Schedule{Interval: 2_000_000 * time.Hour}, 100))
	now = now.Add(2 * time.Minute)
	s.Add(&Result{Probe: KindIBWriteBW, Peer: "c", Device: "mlx5_0", Start: now, Success: true})
	if got := len(s.Latest()); got != 2 {
		t.Fatalf("%d results kept, want 2", got)
	}
}

func TestFreshnessDropsOldResults(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := NewStore()
	s.SetClock(func() time.Time { return now })
	s.SetFreshness(KindIBWriteBW, 3*time.Hour)
	s.Add(&Result{Probe: KindIBWriteBW, Peer: "old", Device: "mlx5_0", Start: now.Add(-4 * time.Hour), Success: false})
	s.Add(&Result{Probe: KindIBWriteBW, Peer: "b", Device: "mlx5_0", Start: now.Add(-2 * time.Hour), Success: false})
	s.Add(&Result{Probe: KindIBWriteBW, Peer: "c", Device: "mlx5_0", Start: now.Add(-time.Hour), Success: true})
	s.Add(&Result{Probe: KindPing, Peer: "b", Device: "mlx5_0", Start: now.Add(-100 * time.Hour), Success: true}) // no bound
	var keys []string
	for _, r := range s.Latest() {
		keys = append(keys, r.Key())
	}
	if got := strings.Join(keys, " "); got != "ib_write_bw|b|mlx5_0 ib_write_bw|c|mlx5_0 ping|b|mlx5_0" {
		t.Errorf("fresh results %s", got)
	}
	kinds := s.Kinds()
	if len(kinds) != 2 || kinds[0].Probe != KindIBWriteBW || kinds[0].Stale != 1 || !kinds[0].LastCompleted.Equal(now.Add(-time.Hour)) {
		t.Errorf("kinds %+v", kinds)
	}
	j := s.Judge()
	if len(j) != 1 || j[0].PeersFailed != 1 || j[0].PeersPassed != 1 || j[0].FailedPeers[0] != "b" {
		t.Errorf("judgement %+v: the stale failure must not count", j)
	}
	// The failing link passes on its next test: it stops counting as failed at once.
	s.Add(&Result{Probe: KindIBWriteBW, Peer: "b", Device: "mlx5_0", Start: now, Success: true})
	if j := s.Judge(); j[0].PeersFailed != 0 || j[0].PeersPassed != 2 {
		t.Errorf("after the fix %+v", j)
	}
	// Results four bounds old are forgotten.
	now = now.Add(13 * time.Hour)
	s.Add(&Result{Probe: KindIBWriteBW, Peer: "d", Device: "mlx5_0", Start: now, Success: true})
	if k := s.Kinds(); k[0].Stale != 0 {
		t.Errorf("old results kept: %+v", k)
	}
}

func TestLocalVerdict(t *testing.T) {
	nic := []DeviceJudgement{
		{Probe: KindIBWriteBW, Device: "mlx5_0", PeersPassed: 2},
		{Probe: KindIBWriteBW, Device: "mlx5_3", Rail: 3, PeersFailed: 2, FailedPeers: []string{"b", "c"}},
	}
	if v := LocalVerdict(nic, KindIBWriteBW); !strings.Contains(v, "mlx5_3 (rail 3) fails with 2 peers (b, c)") || !strings.Contains(v, "RoCEProbeSuspectNICPort") {
		t.Errorf("NIC: %s", v)
	}
	node := []DeviceJudgement{
		{Probe: KindIBWriteBW, Device: "mlx5_0", PeersFailed: 2},
		{Probe: KindIBWriteBW, Device: "mlx5_1", PeersFailed: 3},
	}
	if v := LocalVerdict(node, KindIBWriteBW); !strings.Contains(v, "suspect this node") {
		t.Errorf("node: %s", v)
	}
	path := []DeviceJudgement{{Probe: KindIBWriteBW, Device: "mlx5_0", PeersFailed: 1, PeersPassed: 2, FailedPeers: []string{"b"}}}
	if v := LocalVerdict(path, KindIBWriteBW); !strings.Contains(v, "fails with b only") {
		t.Errorf("path: %s", v)
	}
	ok := []DeviceJudgement{{Probe: KindIBWriteBW, Device: "mlx5_0", PeersPassed: 2}}
	if v := LocalVerdict(ok, KindIBWriteBW); !strings.Contains(v, "every rail passes") {
		t.Errorf("healthy: %s", v)
	}
	if v := LocalVerdict(nil, KindIBWriteBW); !strings.Contains(v, "no fresh") {
		t.Errorf("empty: %s", v)
	}
}

// A rail that passed with old peers and then failed with its scheduled peer
// and two witnesses no longer counts those passes; one or two failures after
// a pass (a peer's or a path's fault) leave it passing, and so does a pass
// after the failures (a flapping link).
func TestPassesSupersededByLaterFailures(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	at := func(m int) time.Time { return now.Add(time.Duration(m) * time.Minute) }
	add := func(s *Store, peer string, m int, ok bool) {
		s.Add(&Result{Probe: KindIBWriteBW, Peer: peer, Device: "mlx5_3", Rail: 3, Start: at(m), Success: ok})
	}
	judge := func(s *Store) DeviceJudgement {
		t.Helper()
		js := s.Judge()
		if len(js) != 1 {
			t.Fatalf("judgements %+v", js)
		}
		return js[0]
	}
	s := NewStore()
	s.SetClock(func() time.Time { return at(30) })
	add(s, "old1", 0, true)
	add(s, "old2", 10, true)
	add(s, "peer", 20, false)
	if j := judge(s); j.PeersPassed != 2 || j.PeersFailed != 1 || !j.LastPassed.Equal(at(10)) {
		t.Errorf("one failure after the passes: %+v, want both passes still counted", j)
	}
	add(s, "witness1", 21, false)
	if j := judge(s); j.PeersPassed != 2 || j.PeersFailed != 2 {
		t.Errorf("two failures after the passes (a path can do that): %+v, want the passes still counted", j)
	}
	add(s, "witness2", 22, false)
	if j := judge(s); j.PeersPassed != 0 || j.PeersFailed != 3 || !j.LastPassed.IsZero() {
		t.Errorf("three failures after every pass: %+v, want the passes superseded", j)
	}
	add(s, "witness3", 23, true) // the link came back (a flap): this pass counts
	if j := judge(s); j.PeersPassed != 1 || !j.LastPassed.Equal(at(23)) {
		t.Errorf("a pass after the failures: %+v", j)
	}
	// The far end of the failure: failed with one peer, then passed with its witnesses.
	far := NewStore()
	far.SetClock(func() time.Time { return at(30) })
	add(far, "old", 0, true)
	add(far, "broken", 20, false)
	add(far, "w1", 21, true)
	add(far, "w2", 22, true)
	if j := judge(far); j.PeersPassed != 3 || j.PeersFailed != 1 || !j.LastPassed.Equal(at(22)) {
		t.Errorf("the healthy far end: %+v", j)
	}
}

// A dead NIC at the far end of a test: its client never reached it on that
// rail (silence), and its own two witness tests failed. The silence is the
// third failure after its passes; a newer result of the link replaces it,
// and nothing of it is exported.
func TestUnreachedCountsAsAFailureUntilReplaced(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	at := func(m int) time.Time { return now.Add(time.Duration(m) * time.Minute) }
	s := NewStore()
	s.SetClock(func() time.Time { return at(30) })
	add := func(peer string, m int, ok bool) {
		s.Add(&Result{Probe: KindIBWriteBW, Peer: peer, Device: "mlx5_3", Rail: 3, Start: at(m), Success: ok})
	}
	add("client", 0, true) // the scheduled client passed with this rail an interval ago
	add("old", 5, true)
	add("w1", 21, false)
	add("w2", 22, false)
	if j := s.Judge()[0]; j.PeersPassed != 2 {
		t.Fatalf("two witness failures alone: %+v, want the passes still counted", j)
	}
	s.NoteUnreached(KindIBWriteBW, "client", []int{3}, func(int) string { return "mlx5_3" }, at(20))
	j := s.Judge()[0]
	if j.PeersPassed != 0 || j.PeersFailed != 3 || !j.LastPassed.IsZero() || !slices.Equal(j.FailedPeers, []string{"client", "w1", "w2"}) {
		t.Errorf("silence and two witness failures: %+v, want failed with 3 peers, passes superseded", j)
	}
	for _, r := range s.Latest() {
		if r.Reason == "not_reached" {
			t.Errorf("the silence is exported as a result: %+v", r)
		}
	}
	add("client", 25, true) // the link passes again: two failures after "old" no longer supersede it
	if j := s.Judge()[0]; j.PeersPassed != 2 || j.PeersFailed != 2 || !j.LastPassed.Equal(at(25)) {
		t.Errorf("after a newer pass of the link: %+v", j)
	}
	// An older silence than the link's result counts for nothing.
	s.NoteUnreached(KindIBWriteBW, "client", []int{3}, func(int) string { return "mlx5_3" }, at(24))
	if j := s.Judge()[0]; j.PeersPassed != 2 || j.PeersFailed != 2 {
		t.Errorf("an older silence: %+v", j)
	}
}

// A refused connection measures nothing (the peer's responder was busy or
// not running; the recording rules count it as neither pass nor failure):
// the link stays judged by its measurement before, it is no failure with
// its peer, and the refusal itself is still exported (RoCEProbeFailing).
func TestRefusedConnectionKeepsTheLinksMeasurement(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	at := func(m int) time.Time { return now.Add(time.Duration(m) * time.Minute) }
	s := NewStore()
	s.SetClock(func() time.Time { return at(30) })
	add := func(peer string, m int, ok bool, reason string) {
		s.Add(&Result{Probe: KindIBWriteBW, Peer: peer, Device: "mlx5_3", Rail: 3, Start: at(m), Success: ok, Reason: reason})
	}
	add("a", 0, true, "")
	add("a", 10, false, ReasonConnectRefused)
	add("b", 11, false, ReasonConnectRefused) // refused only: no judgement of the link at all
	if j := s.Judge()[0]; j.PeersPassed != 1 || j.PeersFailed != 0 || !j.LastPassed.Equal(at(0)) {
		t.Errorf("a pass, then refusals: %+v, want judged by the pass alone", j)
	}
	if o := s.Outcomes(KindIBWriteBW); len(o) != 1 || o[0].Peer != "a" || !o[0].Passed {
		t.Errorf("outcomes %+v, want the pass with a only", o)
	}
	var refused int
	for _, r := range s.Latest() {
		if r.Reason == ReasonConnectRefused {
			refused++
		}
	}
	if refused != 2 {
		t.Errorf("%d refusals exported, want both", refused)
	}
	add("a", 12, false, ReasonConnectRefused) // a second refusal keeps the same measurement
	add("b", 13, false, "timeout")            // a measured failure replaces the refusal
	if j := s.Judge()[0]; j.PeersPassed != 1 || j.PeersFailed != 1 || !slices.Equal(j.FailedPeers, []string{"b"}) {
		t.Errorf("after a measured failure with b: %+v", j)
	}
	add("a", 14, false, "timeout")
	add("a", 15, false, ReasonConnectRefused)
	if j := s.Judge()[0]; j.PeersPassed != 0 || j.PeersFailed != 2 {
		t.Errorf("a refusal after a measured failure: %+v, want the failure to stand", j)
	}
	// The shadowed measurement is forgotten with the link.
	s.ForgetLinks(KindIBWriteBW, func(peer string) bool { return peer != "a" })
	if j := s.Judge()[0]; j.PeersFailed != 1 || j.PeersPassed != 0 {
		t.Errorf("after forgetting a: %+v", j)
	}
}

// The switch verdicts: a victim only when the fleet's rules name the switch;
// without them, the local pattern or "cannot tell"; an unknown switch says so.
func TestSwitchVerdicts(t *testing.T) {
	leafA, leafB := RailSwitch{ChassisID: "c8:00:00:00:00:0a", Name: "leaf-a"}, RailSwitch{ChassisID: "c8:00:00:00:00:0b", Name: "leaf-b"}
	rack := []DeviceJudgement{ // rails 0–1 under leaf-a fail, rails 2–3 under leaf-b pass
		{Probe: KindIBWriteBW, Device: "mlx5_0", PeersFailed: 2},
		{Probe: KindIBWriteBW, Device: "mlx5_1", Rail: 1, PeersFailed: 2},
		{Probe: KindIBWriteBW, Device: "mlx5_2", Rail: 2, PeersPassed: 2},
		{Probe: KindIBWriteBW, Device: "mlx5_3", Rail: 3, PeersPassed: 2},
	}
	rails := map[string]RailSwitch{"mlx5_0": leafA, "mlx5_1": leafA, "mlx5_2": leafB, "mlx5_3": leafB}
	join := func(v SwitchView) string { return strings.Join(SwitchVerdicts(rack, KindIBWriteBW, v), "\n") }

	if v := join(SwitchView{Rails: rails, Asked: true, Suspects: map[string]bool{leafA.ChassisID: true}}); !strings.Contains(v, "mlx5_0 (rail 0), mlx5_1 (rail 1) under switch leaf-a (chassis_id c8:00:00:00:00:0a), which the fleet's rules name RoCEProbeSuspectSwitch: this node is a victim") {
		t.Errorf("firing switch suspect: %s", v)
	}
	if v := join(SwitchView{Rails: rails, Asked: true, Suspects: map[string]bool{leafB.ChassisID: true}}); strings.Contains(v, "victim of that switch") || !strings.Contains(v, "do not name as a switch suspect") {
		t.Errorf("a suspect over the passing rails only: %s", v)
	}
	if v := join(SwitchView{Rails: rails}); !strings.Contains(v, "every rail of this node under switch leaf-a") || !strings.Contains(v, "one node cannot tell") || strings.Contains(v, "victim of") {
		t.Errorf("no Prometheus: %s", v)
	}
	// One failing rail under a switch that also carries a passing one: no pattern.
	rails["mlx5_2"] = leafA
	if v := join(SwitchView{Rails: rails}); !strings.Contains(v, "cannot tell from this node") {
		t.Errorf("mixed switch: %s", v)
	}
	if v := join(SwitchView{Rails: map[string]RailSwitch{}, AskErr: "connection refused"}); !strings.Contains(v, "mlx5_0 (rail 0), mlx5_1 (rail 1): switch unknown") || !strings.Contains(v, "could not be read: connection refused") {
		t.Errorf("no LLDP: %s", v)
	}
	healthy := []DeviceJudgement{{Probe: KindIBWriteBW, Device: "mlx5_0", PeersPassed: 3}}
	if v := SwitchVerdicts(healthy, KindIBWriteBW, SwitchView{Rails: rails, Asked: true, Suspects: map[string]bool{leafA.ChassisID: true}}); v != nil {
		t.Errorf("a healthy node is told %v", v)
	}
}
