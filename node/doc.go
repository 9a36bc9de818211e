// Package node is the typed model of one node's RDMA side: its RDMA devices
// and ports with their counters and GID tables, the network interfaces behind
// them, their PCI functions, the mapped ethtool statistics and the DCB state.
//
// The readers (package reader) fill a Snapshot; everything else reads it: the
// collector turns it into metrics, the health checks judge it, the probes ask
// it for GID indices, port rates and traffic counters. The package also holds
// the pure parsers of the kernel's formats that give the model its meaning
// (port states, rates, GIDs, counter names, PCIe speeds, the RoCE path MTU),
// so that every consumer reads a value the same way.
//
// It imports nothing of Prometheus, HTTP, flags, the cluster plan or the
// probes, does no I/O, and builds on every OS.
package node
