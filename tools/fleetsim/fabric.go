package fleetsim

import (
	"slices"
	"time"

	"github.com/roce-exporter/roce_exporter/probes"
)

// attempt is one run of ib_write_bw on one rail between two machines.
type attempt struct {
	// connected: the client reached the server's responder (perftest's TCP
	// exchange), so the server records the run too.
	connected bool
	ok        bool
	bandwidth float64 // bytes/s; 0 when no data moved
	reason    string
}

// Healthy links run at 97 % of line rate (a healthy RoCE link reaches 96–98 %);
// the plan's floor is 90 %.
const healthyShare, degradedShare = 0.97, 0.6

// flapPeriod: a flapping port is down the first half of every period.
const flapPeriod = 6 * time.Minute

// linkDown reports whether machine n's rail has no link at t.
func (tr *trial) linkDown(n, rail int, t time.Time) bool {
	for _, f := range tr.faults {
		if f.Kind == faultFlap && f.Node == n && f.Rail == rail && tr.active(t) && t.Sub(tr.onset)%flapPeriod < flapPeriod/2 {
			return true
		}
	}
	return false
}

// machineDown reports whether machine n (and its exporter) is down at t.
func (tr *trial) machineDown(n int, t time.Time) bool {
	for _, f := range tr.faults {
		if f.Kind == faultNodeDown && f.Node == n && tr.active(t) {
			return true
		}
	}
	return false
}

// run is what happens to one attempt from client to server on rail at t;
// nonce tells the attempts of one test apart (each has its own queue pairs,
// so its own ECMP hash).
func (tr *trial) run(client, server, rail int, t time.Time, nonce uint64) attempt {
	fail := func(connected bool, reason string) attempt {
		return attempt{connected: connected, reason: reason}
	}
	if tr.machineDown(server, t) {
		return fail(false, probes.ReasonTimeout)
	}
	if tr.linkDown(client, rail, t) || tr.linkDown(server, rail, t) {
		return fail(false, probes.ReasonTimeout)
	}
	share := healthyShare
	if tr.active(t) {
		for _, f := range tr.faults {
			switch f.Kind {
			case faultNIC:
				if f.Rail == rail && (f.Node == client || f.Node == server) {
					return fail(false, probes.ReasonTimeout)
				}
			case faultUplinks:
				// perftest's TCP exchange and its RDMA traffic are different
				// flows: each takes its own spine.
				tcp := tr.fleet.topo.Route(client, server, rail, mix(tr.seed, "tcp", client, server, rail, nonce))
				roce := tr.fleet.topo.Route(client, server, rail, mix(tr.seed, "roce", client, server, rail, nonce))
				if f.breaks(tcp) {
					return fail(false, probes.ReasonTimeout)
				}
				if f.breaks(roce) {
					return fail(true, probes.ReasonRetryExceeded)
				}
			case faultNode:
				if f.Node == client || f.Node == server {
					return fail(true, probes.ReasonRetryExceeded)
				}
			case faultDegradedNIC:
				if f.Rail == rail && (f.Node == client || f.Node == server) {
					share = degradedShare
				}
			}
		}
	}
	a := attempt{connected: true, bandwidth: share * lineRate}
	a.ok = a.bandwidth >= tr.fleet.plan.Expectations.MinBandwidthFraction*lineRate
	if !a.ok {
		a.reason = probes.ReasonBelowThreshold
	}
	return a
}

// breaks reports whether the broken uplinks carry a flow's hop.
func (f Fault) breaks(h Hop) bool {
	if h.Spine < 0 || (h.From != f.Switch && h.To != f.Switch) {
		return false
	}
	return slices.Contains(f.Uplinks, h.Spine)
}
