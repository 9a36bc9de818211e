package config

import (
	"time"

	"github.com/roce-exporter/roce_exporter/node"
)

const (
	defaultMinBandwidthFraction = 0.9
	defaultStateDir             = "/var/lib/roce_exporter"
	defaultMaxPortUtilization   = 0.1
	// defaultJitterShare spreads the start of a thousand nodes over a tenth of the
	// interval without making the runs irregular.
	defaultJitterShare = 0.1
	defaultMPIRun      = "/usr/bin/mpirun"
	defaultPingCount   = 5
	// defaultMaxFabricShare 1 keeps the historical schedule: every pair of a round at once.
	defaultMaxFabricShare = 1.0
	// defaultFreshRounds: a node is tested once per interval, so three intervals hold at
	// least two of its tests (two failures with different peers name a NIC) and one
	// missed round (port busy) does not blank its results.
	defaultFreshRounds = 3
	// defaultNCCLGroupSize: NCCL runs in pairs of nodes, like the perftest probes.
	defaultNCCLGroupSize = 2
)

var (
	defaultIBWriteBW = Perftest{
		Schedule:    Schedule{Enabled: true, Interval: time.Hour, Timeout: 90 * time.Second},
		Command:     "/usr/bin/ib_write_bw",
		Duration:    10 * time.Second,
		MessageSize: 1 << 20,
		QueuePairs:  4,
		PortRange:   PortRange{First: 18515, Last: 18530},
	}
	defaultIBWriteLat = Perftest{
		Schedule:    Schedule{Enabled: false, Interval: time.Hour, Timeout: 60 * time.Second},
		Command:     "/usr/bin/ib_write_lat",
		MessageSize: 2, // perftest's own latency default
		QueuePairs:  1, // perftest latency tests refuse -q
		// Right after the ib_write_bw block, so that both kinds of responder can listen.
		PortRange: PortRange{First: 18531, Last: 18546},
	}
	// defaultIncast is off: an incast congests a switch port on purpose, and the pause
	// frames it draws can spread to the jobs on that switch (congestion spreading), so an
	// operator opts in. Once enabled, once a day: what it proves changes only when a
	// switch's configuration does. The ports follow ib_write_lat's, 4 per rail for 8 rails.
	defaultIncast = Incast{
		Perftest: Perftest{
			Schedule:    Schedule{Enabled: false, Interval: 24 * time.Hour, Timeout: 60 * time.Second},
			Command:     "/usr/bin/ib_write_bw",
			Duration:    10 * time.Second,
			MessageSize: 1 << 20,
			QueuePairs:  4,
			PortRange:   PortRange{First: 18547, Last: 18578},
		},
		Senders: 2,
	}
	defaultNCCLSchedule = Schedule{Enabled: false, Interval: 6 * time.Hour, Timeout: 15 * time.Minute}
	defaultNCCLMinBytes = SizeBytes(8)
	defaultPingSchedule = Schedule{Enabled: true, Interval: time.Minute, Timeout: 10 * time.Second}
)

// DefaultNCCLMaxBytes is the largest message an NCCL run sweeps to when the plan sets
// no max_bytes, on GPUs with the memory for it: nccl-tests holds a send, a receive and
// (with its default -c 1) an expected buffer of that size per GPU, so 8 GiB needs 24 GiB
// besides nccl-tests' own reserve for NCCL, 27 GiB in all. Smaller GPUs get the largest
// power of two that fits (the runner sizes it from nvidia-smi when the run starts).
const DefaultNCCLMaxBytes = SizeBytes(8 << 30)

// defaultNVIDIASMI is where the NVIDIA driver packages install nvidia-smi.
const defaultNVIDIASMI = "/usr/bin/nvidia-smi"

// DefaultNCCLLargeMessageBytes is where an NCCL run's judged bus bandwidth starts. Below
// it an all_reduce is partly latency-bound: each call costs tens of microseconds however
// small it is, so its bus bandwidth says more about latency than about the links. At
// 256 MiB a node with eight 400G NICs (~400 GB/s) spends ~0.7 ms per call moving data,
// and the real captures in probes/parse/testdata have reached at least two thirds of their best
// bus bandwidth there (A100 2x8: 164 of 237.5 GB/s; the best size is usually the largest).
const DefaultNCCLLargeMessageBytes = SizeBytes(256 << 20)

func newInt(v int) *int { return &v }

// defaultTo sets *target unless the plan wrote a value at path.
func defaultTo[T any](l *loader, path string, target *T, value T) {
	if !l.isWritten(path) {
		*target = value
	}
}

// applyDefaults fills in what the plan left out, per the table in the package doc.
// It runs after each value was checked on its own and before the cross-field checks.
func (l *loader) applyDefaults(p *Plan) {
	e := &p.Expectations
	defaultTo(l, "expectations.link_layer", &e.LinkLayer, LinkLayerEthernet)
	if e.LinkLayer == LinkLayerEthernet {
		defaultTo(l, "expectations.roce_mode", &e.RoCEMode, RoCEv2)
		defaultTo(l, "expectations.roce_dscp", &e.RoCEDSCP, newInt(node.DefaultRoCEDSCP))
		defaultTo(l, "expectations.cnp_dscp", &e.CNPDSCP, newInt(node.DefaultCNPDSCP))
	}
	defaultTo(l, "expectations.min_bandwidth_fraction", &e.MinBandwidthFraction, defaultMinBandwidthFraction)
	defaultTo(l, "expectations.firmware_consistent", &e.FirmwareConsistent, true)

	probes := &p.Probes
	defaultTo(l, "probes.state_dir", &probes.StateDir, defaultStateDir)
	defaultTo(l, "probes.max_port_utilization", &probes.MaxPortUtilization, defaultMaxPortUtilization)
	defaultTo(l, "probes.nic_test_interval", &probes.NICTestInterval, defaultIBWriteBW.Interval)
	defaultTo(l, "probes.max_fabric_share", &probes.MaxFabricShare, defaultMaxFabricShare)
	defaultTo(l, "probes.fresh_rounds", &probes.FreshRounds, defaultFreshRounds)
	// nic_test_interval is the pair probes' default interval: one epoch pairs every node.
	bw, lat := defaultIBWriteBW, defaultIBWriteLat
	bw.Interval, lat.Interval = probes.NICTestInterval, probes.NICTestInterval
	l.defaultPerftest("probes.ib_write_bw", &probes.IBWriteBW, bw)
	l.defaultPerftest("probes.ib_write_lat", &probes.IBWriteLat, lat)

	nccl := &probes.NCCL
	l.defaultSchedule("probes.nccl", &nccl.Schedule, defaultNCCLSchedule)
	defaultTo(l, "probes.nccl.mpirun", &nccl.MPIRun, defaultMPIRun)
	defaultTo(l, "probes.nccl.min_bytes", &nccl.MinBytes, defaultNCCLMinBytes)
	defaultTo(l, "probes.nccl.nvidia_smi", &nccl.NVIDIASMI, defaultNVIDIASMI)
	defaultTo(l, "probes.nccl.large_message_bytes", &nccl.LargeMessageBytes, DefaultNCCLLargeMessageBytes)
	defaultTo(l, "probes.nccl.group_size", &nccl.GroupSize, defaultNCCLGroupSize)

	l.defaultPerftest("probes.incast", &probes.Incast.Perftest, defaultIncast.Perftest)
	defaultTo(l, "probes.incast.senders", &probes.Incast.Senders, defaultIncast.Senders)

	ping := &probes.Ping
	l.defaultSchedule("probes.ping", &ping.Schedule, defaultPingSchedule)
	defaultTo(l, "probes.ping.count", &ping.Count, defaultPingCount)
}

func (l *loader) defaultSchedule(path string, s *Schedule, d Schedule) {
	defaultTo(l, path+".enabled", &s.Enabled, d.Enabled)
	defaultTo(l, path+".interval", &s.Interval, d.Interval)
	defaultTo(l, path+".timeout", &s.Timeout, d.Timeout)
	// Jitter follows the interval that will run, written or default.
	defaultTo(l, path+".jitter", &s.Jitter, time.Duration(float64(s.Interval)*defaultJitterShare))
}

func (l *loader) defaultPerftest(path string, p *Perftest, d Perftest) {
	l.defaultSchedule(path, &p.Schedule, d.Schedule)
	defaultTo(l, path+".command", &p.Command, d.Command)
	defaultTo(l, path+".duration", &p.Duration, d.Duration)
	defaultTo(l, path+".message_size", &p.MessageSize, d.MessageSize)
	defaultTo(l, path+".queue_pairs", &p.QueuePairs, d.QueuePairs)
	defaultTo(l, path+".port_range", &p.PortRange, d.PortRange)
}
