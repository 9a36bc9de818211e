package fleetsim

import (
	"fmt"
	"hash/fnv"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/probes"
	"github.com/roce-exporter/roce_exporter/probes/schedule"
)

// Fault kinds.
const (
	FaultNone     = "none (noise only)"
	FaultNIC      = "bad NIC"
	FaultNode     = "bad node"
	FaultPath     = "bad path between two leaves"
	FaultFlapping = "flapping link"
	FaultNodeDown = "node down during the run"
)

// Faults are the scenarios, in table order.
var Faults = []string{FaultNone, FaultNIC, FaultNode, FaultPath, FaultFlapping, FaultNodeDown}

// ExpectedAlert is the alert a person gets for each fault.
var ExpectedAlert = map[string]string{
	FaultNone:     "none",
	FaultNIC:      AlertNIC + "{instance, device}",
	FaultNode:     AlertNode + "{node}",
	FaultPath:     AlertPath + "{instance, peer, device}",
	FaultFlapping: AlertNIC + "{instance, device} (and RoCELinkFlapping from the counters)",
	FaultNodeDown: AlertNode + "{node} (and RoCEExporterDown)",
}

// Config is one simulated fleet.
type Config struct {
	Nodes, Rails int
	// Interval is probes.nic_test_interval, Share probes.max_fabric_share.
	Interval time.Duration
	Share    float64
	Timeout  time.Duration
	// FreshRounds is probes.fresh_rounds.
	FreshRounds int
	// Epochs is how many intervals run; the fault starts at FaultEpoch.
	Epochs, FaultEpoch int
	// PodSize nodes share a leaf per rail; Spines is the ECMP width between leaves.
	PodSize, Spines int
	// Noise is the share of first attempts that fail and pass on the retest.
	Noise float64
}

// DefaultConfig is the fleet of the README table.
func DefaultConfig(nodes int) Config {
	pod := 32
	if nodes < 64 {
		pod = nodes / 2
	}
	return Config{Nodes: nodes, Rails: 8, Interval: time.Hour, Share: 0.25, Timeout: 90 * time.Second, FreshRounds: 3,
		Epochs: 24, FaultEpoch: 3, PodSize: pod, Spines: 8, Noise: 0.02}
}

// Report is one row of the table.
type Report struct {
	Nodes int
	Fault string
	// Named is the time from the fault's start until the right suspect is
	// first named; negative when it never was.
	Named time.Duration
	// Wrong are the distinct wrong suspects named at any time.
	Wrong []string
	// PeakShare is the largest share of the nodes under test at one time.
	PeakShare float64
	Rounds    int
	RoundLen  time.Duration
	Tests     int
}

type sim struct {
	cfg    Config
	fault  string
	names  []string
	stores map[string]*probes.Store
	now    time.Time
	onset  time.Time
	// the faulty elements
	nic      NodeRail
	node     string
	flap     NodeRail
	down     string
	pathPods [2]int
	pathRail int
}

func (s *sim) pod(n string) int {
	for i, m := range s.names {
		if m == n {
			return i / s.cfg.PodSize
		}
	}
	return -1
}

func hash(parts ...any) uint64 {
	h := fnv.New64a()
	fmt.Fprint(h, parts...)
	return h.Sum64()
}

// ecmpBad reports whether the flow between a and b on the bad leaf pair
// hashes onto the broken spine link.
func (s *sim) pathBroken(a, b string, rail int) bool {
	pa, pb := s.pod(a), s.pod(b)
	if rail != s.pathRail || !(pa == s.pathPods[0] && pb == s.pathPods[1] || pa == s.pathPods[1] && pb == s.pathPods[0]) {
		return false
	}
	return hash(min(a, b), max(a, b), rail)%uint64(s.cfg.Spines) == 0
}

func (s *sim) isDown(n string, t time.Time) bool {
	return s.fault == FaultNodeDown && n == s.down && !t.Before(s.onset)
}

// linkDown is the flapping port's state: down three minutes of every six.
func (s *sim) linkDown(t time.Time) bool {
	return s.fault == FaultFlapping && !t.Before(s.onset) && t.Sub(s.onset)%(6*time.Minute) < 3*time.Minute
}

// attempt is one run of the test between a and b on rail at t.
func (s *sim) attempt(a, b string, rail int, t time.Time) bool {
	if !t.Before(s.onset) {
		switch s.fault {
		case FaultNIC:
			if (a == s.nic.Node || b == s.nic.Node) && rail == s.nic.Rail {
				return false
			}
		case FaultNode:
			if a == s.node || b == s.node {
				return false
			}
		case FaultPath:
			if s.pathBroken(a, b, rail) {
				return false
			}
		case FaultFlapping:
			if (a == s.flap.Node || b == s.flap.Node) && rail == s.flap.Rail && s.linkDown(t) {
				return false
			}
		}
	}
	if s.isDown(a, t) || s.isDown(b, t) {
		return false
	}
	return true
}

// test is one rail's probe with the scheduler's retest: a failure counts
// only when the retest 15 s later (5 s pause, 10 s run) fails too.
func (s *sim) test(a, b string, rail int, t time.Time, epoch int64) bool {
	ok := s.attempt(a, b, rail, t)
	if ok && float64(hash("noise", a, b, rail, epoch)%10000)/10000 < s.cfg.Noise {
		ok = false // a transient failure of the first attempt
	}
	if ok {
		return true
	}
	return s.attempt(a, b, rail, t.Add(15*time.Second))
}

// Run simulates one fault on one fleet.
func Run(cfg Config, fault string) Report {
	s := &sim{cfg: cfg, fault: fault, stores: map[string]*probes.Store{}}
	for i := range cfg.Nodes {
		s.names = append(s.names, fmt.Sprintf("gpu%04d", i+1))
	}
	sch := config.Schedule{Enabled: true, Interval: cfg.Interval, Timeout: cfg.Timeout, Jitter: cfg.Interval / 10}
	fleet := schedule.NewFleetSchedule(s.names, sch, cfg.Share)
	bound := config.FreshFor(sch, cfg.FreshRounds)
	for _, n := range s.names {
		st := probes.NewStore()
		st.SetClock(func() time.Time { return s.now })
		st.SetSelf(n)
		st.SetFreshness(probes.KindIBWriteBW, bound)
		s.stores[n] = st
	}
	n := cfg.Nodes
	s.nic = NodeRail{s.names[n/3], 5}
	s.node = s.names[n/2+1]
	s.flap = NodeRail{s.names[n/5], 2}
	s.down = s.names[n-2]
	s.pathPods, s.pathRail = [2]int{0, 1}, 6
	const start = 1_800_000_000 // an epoch boundary for intervals dividing an hour
	first := int64(start) / int64(cfg.Interval.Seconds())
	s.onset = time.Unix(0, (first+int64(cfg.FaultEpoch))*int64(cfg.Interval))

	rep := Report{Nodes: n, Fault: fault, Named: -1, Rounds: fleet.Rounds(), RoundLen: fleet.RoundLength()}
	wrong := map[string]bool{}
	for e := first; e < first+int64(cfg.Epochs); e++ {
		for r := range fleet.Rounds() {
			pairs := fleet.Pairs(e, r)
			at := fleet.RoundStart(e, r)
			if share := float64(2*len(pairs)) / float64(n); share > rep.PeakShare {
				rep.PeakShare = share
			}
			for _, p := range pairs {
				for rail := range cfg.Rails {
					ok := s.test(p.Client, p.Server, rail, at, e)
					rep.Tests++
					dev := fmt.Sprintf("mlx5_%d", rail)
					for _, end := range [][2]string{{p.Client, p.Server}, {p.Server, p.Client}} {
						if s.isDown(end[0], at) {
							continue // a node that is down records nothing
						}
						res := &probes.Result{Probe: probes.KindIBWriteBW, Peer: end[1], Device: dev, Rail: rail, Start: at, Success: ok}
						if !ok {
							res.Reason = probes.ReasonBelowThreshold
						}
						s.stores[end[0]].Add(res)
					}
				}
			}
			// Prometheus evaluates the rules once the round's runs are done.
			s.now = at.Add(cfg.Timeout)
			for _, sus := range Localise(s.exports()) {
				if s.right(sus) {
					if rep.Named < 0 && !s.now.Before(s.onset) {
						rep.Named = s.now.Sub(s.onset)
					}
				} else {
					wrong[sus.String()] = true
				}
			}
		}
	}
	for w := range wrong {
		rep.Wrong = append(rep.Wrong, w)
	}
	return rep
}

// exports is what Prometheus holds: every up node's fresh results.
func (s *sim) exports() Exports {
	ex := Exports{Rails: map[NodeRail]Rail{}}
	for _, n := range s.names {
		if s.isDown(n, s.now) {
			continue
		}
		st := s.stores[n]
		for _, j := range st.Judge() {
			nr := NodeRail{n, j.Rail}
			ex.Rails[nr] = Rail{Failed: j.PeersFailed, Passed: j.PeersPassed, LastPassed: j.LastPassed,
				Flapped: s.fault == FaultFlapping && nr == s.flap && !s.now.Before(s.onset)}
		}
		for _, r := range st.Latest() {
			ex.Links = append(ex.Links, Link{Node: n, Peer: r.Peer, Rail: r.Rail, Success: r.Success, Start: r.Start})
		}
	}
	return ex
}

// right reports whether a suspect is the injected fault.
func (s *sim) right(sus Suspect) bool {
	switch s.fault {
	case FaultNIC:
		return sus.Alert == AlertNIC && sus.Node == s.nic.Node && sus.Rail == s.nic.Rail
	case FaultNode:
		return sus.Alert == AlertNode && sus.Node == s.node
	case FaultPath:
		return sus.Alert == AlertPath && s.pathBroken(sus.Node, sus.Peer, sus.Rail)
	case FaultFlapping:
		return sus.Alert == AlertNIC && sus.Node == s.flap.Node && sus.Rail == s.flap.Rail
	case FaultNodeDown:
		return sus.Alert == AlertNode && sus.Node == s.down
	}
	return false
}
