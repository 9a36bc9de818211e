package probes

import (
	"bytes"
	"context"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/probes/parse"
)

// responder keeps one perftest server listening for a local device.
// perftest servers have no accept timeout and exit after one test, so the
// responder restarts the server after every test and kills one that nobody
// connected to within the idle timeout (a hung server would otherwise
// hold the port forever).
type responder struct {
	runner *perftestRunner
	link   Link
	locks  *deviceLocks
	logger *slog.Logger
	// readNode reads the node before each server starts: its GID index and
	// nearest GPU for the argv, its port rate for the tests it serves.
	readNode func(ctx context.Context) *node.Snapshot
	// onServed receives the output of every test a client ran against
	// this responder (perftest prints the same report on both sides), with
	// the node as read before the server started.
	onServed func(l Link, out execResult, connectedAt time.Time, completed bool, snap *node.Snapshot)
	// refuse, when set, says from the node read before a server starts that
	// it must not serve (identity.go: not the plan entry it runs as).
	refuse func(snap *node.Snapshot) bool
	// served counts tests a client ran against this responder; only
	// run's goroutine touches it.
	served int
}

// newResponder is r's responder for the local link l.
func (s *Scheduler) newResponder(r *perftestRunner, l Link, logger *slog.Logger) *responder {
	return &responder{runner: r, link: l, locks: s.locks, logger: logger,
		readNode: func(ctx context.Context) *node.Snapshot { return s.configOfNode(ctx, r.kind()) },
		refuse:   func(snap *node.Snapshot) bool { return s.judgeIdentity(snap) == identityMismatch },
		onServed: s.served(r)}
}

var closedChannel = func() <-chan struct{} { c := make(chan struct{}); close(c); return c }()

// connectedMarker: perftest prints the queue pair addresses once a client
// has connected and the out-of-band exchange is done.
var connectedMarker = []byte("remote address")

func (rs *responder) run(ctx context.Context) {
	var backoff restartBackoff
	for ctx.Err() == nil {
		snap := rs.readNode(ctx)
		if rs.refuse != nil && rs.refuse(snap) {
			// Not the plan entry it would serve as: a test served here would be
			// recorded in another node's name.
			if !sleepCtx(ctx, min(rs.runner.cfg.Timeout, 30*time.Second)) {
				return
			}
			continue
		}
		// A local client is testing the device: serve no one until it is done.
		if !rs.locks.waitFree(ctx, rs.link.Device) {
			return
		}
		argv := rs.runner.args(rs.link, rs.runner.placement(snap, rs.link), true)
		connected := make(chan struct{})
		var once sync.Once
		var seen []byte
		p, err := startCommand(ctx, argv, nil, func(b []byte) {
			seen = append(seen, b...)
			if bytes.Contains(seen, connectedMarker) {
				once.Do(func() { close(connected) })
			}
			if len(seen) > 64<<10 {
				seen = seen[len(seen)-4096:]
			}
		})
		if err != nil {
			delay := backoff.failed()
			rs.logger.Warn("probe responder cannot start", "device", rs.link.Device, "err", err, "retry_in", delay)
			if !sleepCtx(ctx, delay) {
				return
			}
			continue
		}
		idle := time.NewTimer(rs.runner.cfg.Timeout)
		locked := false
		finished := false
		preempted := false
		var connectedAt time.Time
		overran := false
		onConnect := func() {
			connected = nil
			connectedAt = time.Now()
			locked = rs.locks.tryLock(rs.link.Device)
			idle.Reset(rs.runner.cfg.Duration + 30*time.Second)
			rs.served++
		}
		// Closed: the first turn of the loop looks at the lock as it is now.
		changed := closedChannel
		for !finished {
			select {
			case <-p.done: // also when ctx ends: that kills the process
				finished = true
			case <-idle.C:
				// Nobody connected (or a test overran): restart it.
				overran = !connectedAt.IsZero()
				p.kill()
				<-p.done
				finished = true
			case <-connected:
				onConnect()
			case <-changed:
				var busy bool
				busy, changed = rs.locks.state(rs.link.Device)
				if !busy || !connectedAt.IsZero() {
					continue
				}
				select {
				case <-connected: // a client got in first: serve it
					onConnect()
					continue
				default:
				}
				// A local client took the device while nobody was connected:
				// stop listening, so that a peer arriving now finds the port
				// closed (a busy witness, which it skips) instead of a server
				// that would halve both tests.
				preempted = true
				p.kill()
				<-p.done
				finished = true
			}
		}
		idle.Stop()
		if locked {
			rs.locks.unlock(rs.link.Device)
		}
		out := p.result()
		if !connectedAt.IsZero() && ctx.Err() == nil && rs.onServed != nil {
			out.TimedOut = overran
			rs.onServed(rs.link, out, connectedAt, !overran, snap)
		}
		if p.endedBy == nil && connectedAt.IsZero() && !preempted {
			// A perftest server waits for its client; one that ends on its
			// own without one (no device, port in use, a wrapper that exits
			// 0 at once) was restarted 1,511 times in 10 s.
			delay := backoff.failed()
			rs.logger.Warn("probe responder exited without serving a test; restarting after a delay", "device", rs.link.Device,
				"exit", out.ExitCode, "ran", time.Since(p.begin).Round(time.Millisecond), "stderr", lastLine(out.Stderr), "retry_in", delay)
			if !sleepCtx(ctx, delay) {
				return
			}
			continue
		}
		backoff.reset()
	}
}

// served records a test a peer's client ran against one of our
// responders, so that both ends of a link report it: without this a node
// that is the server for many rounds in a row would look idle. The peer is
// the owner of the remote GID's address, else the peer the schedule
// assigned to us for the round.
func (s *Scheduler) served(r *perftestRunner) func(Link, execResult, time.Time, bool, *node.Snapshot) {
	return func(l Link, out execResult, connectedAt time.Time, completed bool, snap *node.Snapshot) {
		res := &Result{Probe: r.kind(), Device: l.Device, Rail: l.Rail, Start: connectedAt, Duration: out.Duration, ExitCode: out.ExitCode, StderrTail: out.Stderr, Role: "server"}
		if addr, ok := parse.RemoteGIDAddress(out.Stdout); ok {
			res.Peer, res.PeerDevice = s.nodeOfAddress(addr)
		}
		if res.Peer == "" {
			if turn, ok := s.fleet[r.kind()].PeerAt(s.self.Name, connectedAt); ok && !turn.IsClient {
				peer := turn.Peer
				res.Peer = peer
				if pn, ok := s.opts.Plan.Node(peer); ok && l.Rail < len(pn.Interfaces) {
					res.PeerDevice = pn.Interfaces[l.Rail].RDMADevice
				}
			}
		}
		if res.Peer == "" {
			s.logger.Debug("served a probe for an unknown peer; not recorded", "device", l.Device)
			return
		}
		conclude(res, r.evaluate(res, out, snap), verdict{}, s.base, s.logger)
		s.store.Add(res)
	}
}

// nodeOfAddress finds the plan node and RDMA device that own a compute IP.
func (s *Scheduler) nodeOfAddress(a netip.Addr) (string, string) {
	for _, n := range s.opts.Plan.Nodes {
		for _, i := range n.Interfaces {
			if i.Address.IsValid() && i.IP() == a {
				return n.Name, i.RDMADevice
			}
		}
	}
	return "", ""
}
