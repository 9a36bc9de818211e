package probes

import (
	"context"
	"time"

	"github.com/roce-exporter/roce_exporter/node"
)

// Link is one rail-matched pair: a local device and the peer's device on
// the same rail.
type Link struct {
	Rail       int
	Device     string // local RDMA device
	LocalIP    string
	Peer       string // peer node name
	PeerDevice string
	PeerIP     string
}

// target is what one run tests: a rail-matched link to a peer (pair probes
// and ping), or the nodes an NCCL run spans, whose label the Link's Peer
// carries.
type target struct {
	Link
	// nodes are the plan nodes of an NCCL run, or an incast's senders.
	nodes []string
	// slot is an incast sender's place among the senders: which of the
	// receiver's servers it writes into.
	slot int
	// devices are the local devices the run loads: locked against other
	// probes and watched by the load gate.
	devices []string
}

// linkTarget is a pair probe's target: one link, loading its local device.
func linkTarget(l Link) target { return target{Link: l, devices: []string{l.Device}} }

// prober is one probe kind's runner (blackbox_exporter's ProbeFn): it runs
// its program against a target and reads what it printed. Everything every
// kind shares is measure's: the result's header, start and duration, the
// reads of the node, the load gate, the verdict with its hint, the baseline.
type prober interface {
	kind() string
	// readsNode says whether a run needs the node: then measure reads it just
	// before (and the load gate applies).
	readsNode() bool
	// probe runs one test of t; before is the node read just before it (nil
	// when the prober reads none or the read failed). It sets the result's
	// command, exit status and measurement, and returns the run's own
	// verdict: why what it printed fails, the zero verdict when it measured.
	probe(ctx context.Context, t target, before *node.Snapshot, res *Result) verdict
	// ownTraffic is at most what the run itself moved through t's devices
	// over elapsed, per direction: traffic beyond it came from others.
	ownTraffic(t target, res *Result, elapsed time.Duration) traffic
}

// afterJudge is a prober that also proves something from how the node's
// counters moved over the run (ib_write_bw: the priority its bytes went on).
type afterJudge interface {
	// wantsAfter says whether judgeAfter can judge this run, so that the
	// node is read after it only when something will be proved.
	wantsAfter(before *node.Snapshot, res *Result) bool
	judgeAfter(before, after *node.Snapshot, res *Result) verdict
}

// measure runs one probe of p on t, the one path every probe this node
// starts takes. It reads the node at most twice: before the run (everything
// the run needs, and the load gate on the collection before that one) and,
// only when something needs what moved meanwhile, after it.
//
// The load gate skips a run while a port of t already carries more than
// probes.max_port_utilization of its rate, judged on the previous collection
// to this one when that window is usable (usableWindow). Without one the
// gate adds no read: the run goes ahead, and when the ports moved clearly
// more than the run's own traffic while it ran, its result is set aside as
// skipped, neither a failure nor a baseline sample.
func (s *Scheduler) measure(ctx context.Context, p prober, t target) *Result {
	res := &Result{Probe: p.kind(), Peer: t.Peer, Device: t.Device, PeerDevice: t.PeerDevice, Rail: t.Rail}
	var before *node.Snapshot
	watch := false
	if p.readsNode() {
		before = s.readNode(ctx, res.Probe)
		if s.gate.on() && before != nil {
			if !usableWindow(before) {
				watch = true
			} else if why := s.gate.busyBefore(before, t.devices); why != "" {
				res.Start = s.opts.Now()
				return res.skip(why)
			}
		}
	}
	// Stamped by the scheduler's clock, which the store judges freshness and
	// order by; timed by the monotonic one.
	res.Start = s.opts.Now()
	began := time.Now()
	run := p.probe(ctx, t, before, res)
	res.Duration = time.Since(began)
	if ctx.Err() != nil {
		return res // shut down mid-run: not a measurement, nothing to record
	}

	judge, proves := p.(afterJudge)
	proves = proves && before != nil && judge.wantsAfter(before, res)
	var after *node.Snapshot
	if watch || proves {
		after = s.readNode(ctx, res.Probe)
	}
	if watch && after != nil {
		own := p.ownTraffic(t, res, after.Time.Sub(before.Time))
		if why := s.gate.busyDuring(before, after, t.devices, own); why != "" {
			s.logger.Info("probe result set aside: its port carried other traffic while it ran",
				"probe", res.Probe, "peer", res.Peer, "device", res.Device, "why", why)
			return res.skip(why)
		}
	}
	var proof verdict
	if proves && after != nil {
		proof = judge.judgeAfter(before, after, res)
	}
	conclude(res, run, proof, s.base, s.logger)
	return res
}

// readNode collects the node for a run; nil without a Node or when the read
// fails, which leaves what it would have told unknown, as an unreadable file
// would.
func (s *Scheduler) readNode(ctx context.Context, kind string) *node.Snapshot {
	if s.opts.Node == nil {
		return nil
	}
	snap, err := s.opts.Node.Collect(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.logger.Warn("probe cannot read the node", "probe", kind, "err", err)
		}
		return nil
	}
	return snap
}

// configMaxAge is how old a collection may be for what changes only with the
// node's configuration (GID index, nearest GPU, port rate). Every scrape
// collects, so on a scraped node a restarting responder reads nothing; an
// unscraped one still reads at most every few minutes, not once per restart.
const configMaxAge = 5 * time.Minute

// configOfNode is the node's configuration for a responder: the newest
// collection when it is recent, else a fresh one.
func (s *Scheduler) configOfNode(ctx context.Context, kind string) *node.Snapshot {
	if s.opts.Node == nil {
		return nil
	}
	if snap := s.opts.Node.Latest(); snap != nil && s.opts.Now().Sub(snap.Time) < configMaxAge {
		return snap
	}
	return s.readNode(ctx, kind)
}

// skip marks a result as a run that did not count: neither a success nor
// a failure.
func (r *Result) skip(why string) *Result {
	r.Skipped, r.SkipReason = true, why
	return r
}
