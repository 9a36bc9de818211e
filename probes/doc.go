// Package probes runs the active fabric probes of the cluster plan and
// judges them: rail-matched RDMA bandwidth and latency pairs (perftest's
// ib_write_bw / ib_write_lat), NCCL collectives across the cluster and in
// rotating groups (nccl-tests through mpirun), and ping.
//
// It is split by job:
//
//   - probes/parse reads what the programs print (perftest and nccl-tests,
//     text and JSON, NCCL's INFO transport report); pure, like node's
//     kernel-format parsers.
//   - probes/schedule is the pure schedule: who pairs with whom in which
//     round, whom a node retests with after a confirmed failure and when
//     (triangulation), which peers it pings, the NCCL groups, the jitter
//     every node derives alike.
//   - The runners (perftest.go, nccl.go, ping.go) implement one prober
//     interface; prober.go's measure runs every probe this node starts the
//     same way: the node read before and, only when needed, after the run
//     (Node, node.go, priority.go), the load gate (load.go), and the verdict
//     set in one place (verdict.go).
//   - Child processes (process.go) and the supervised perftest servers
//     (responder.go) are apart from what they run.
//   - scheduler.go runs the loops, the device locks (locks.go) and the NCCL
//     window; triangulate.go and ping_rotation.go run what the schedule
//     decides; identity.go keeps a node from probing under another's name;
//     result.go, store.go, freshness.go, judge.go, switch_verdict.go,
//     baseline.go and reasons.go are the results, their store and their
//     judgement, which the exporter reads at scrape time.
package probes
