package probes

import (
	"time"

	"github.com/roce-exporter/roce_exporter/probes/parse"
)

// Probe kinds.
const (
	KindIBWriteBW  = "ib_write_bw"
	KindIBWriteLat = "ib_write_lat"
	KindNCCL       = "nccl"
	// KindNCCLGroup is the NCCL all_reduce run on a group of
	// probes.nccl.group_size nodes.
	KindNCCLGroup = "nccl_group"
	KindPing      = "ping"
	// KindIncast is the N:1 incast into one receiver's NIC (incast.go).
	KindIncast = "incast"
)

// Result is one probe run, as exported and shown on the landing page: the
// header every kind shares, then the measurement of its kind. Only the parts
// of the run's kind are set (a bandwidth run has Bandwidth, NCCL also NCCL,
// a latency run Latency, ping Latency and Ping), and only once the run
// measured them. The parts are embedded so that the JSON of `probe run`
// stays one flat object.
type Result struct {
	Probe  string `json:"probe"`
	Peer   string `json:"peer"`
	Device string `json:"device"`
	// PeerDevice is the rail-matched device on the peer.
	PeerDevice string `json:"peer_device,omitempty"`
	// Rail is the plan's rail index of Device (pair probes only): rail-matched
	// devices may have different names on different nodes, so cross-node rules
	// join on it.
	Rail int `json:"rail,omitempty"`
	// Role is "server" when a peer's client ran the test against one of
	// this node's responders; empty for tests this node started.
	Role     string        `json:"role,omitempty"`
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"duration_ns"`

	Success    bool   `json:"success"`
	Skipped    bool   `json:"skipped,omitempty"`
	SkipReason string `json:"skip_reason,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Hint       string `json:"hint,omitempty"`

	*Bandwidth
	*Latency
	*Ping
	*NCCL
	*PriorityProof
	*Incast

	Command    []string `json:"command,omitempty"`
	ExitCode   int      `json:"exit_code"`
	StderrTail string   `json:"stderr_tail,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
}

// Bandwidth is the number a bandwidth run (ib_write_bw, nccl, nccl_group) is
// judged on, and what it was judged against.
type Bandwidth struct {
	// BytesPerSecond is perftest's BW average at the largest size; for NCCL
	// the large-message bus bandwidth (the best busbw at or above the plan's
	// large_message_bytes).
	BytesPerSecond float64 `json:"bandwidth_bytes_per_second,omitempty"`
	// ExpectedBytesPerSecond is the floor: the plan's share of the port rate,
	// or NCCL's min_bus_bandwidth_gbytes.
	ExpectedBytesPerSecond float64 `json:"expected_bandwidth_bytes_per_second,omitempty"`
	// BaselineBytesPerSecond is the median of the link's recent good runs.
	BaselineBytesPerSecond float64 `json:"baseline_bandwidth_bytes_per_second,omitempty"`
}

// PriorityProof says on which 802.1p priority an ib_write_bw run's bytes
// went, measured from the node's counters around it.
type PriorityProof struct {
	// RoCEPriorityShare is the share of the bytes the test sent that the
	// RoCE priority's tx byte counter counted.
	RoCEPriorityShare float64 `json:"roce_priority_share"`
	// CarriedOnPriority is the priority that counted most of them when it
	// was another; nil when the RoCE priority did.
	CarriedOnPriority *int `json:"carried_on_priority,omitempty"`
}

// Latency is what a latency run (ib_write_lat, ping) measured.
type Latency struct {
	// Seconds holds the statistics measured: avg, min, max and p99 when
	// perftest printed it.
	Seconds map[string]float64 `json:"latency_seconds,omitempty"`
}

// Ping is what a ping run measured besides its round trips.
type Ping struct {
	// LossRatio is the share of echo requests without a reply.
	LossRatio float64 `json:"loss_ratio"`
}

// NCCL is what an nccl-tests run reported besides its judged bandwidth.
type NCCL struct {
	// BandwidthMessageBytes is the message size Bandwidth was measured at.
	BandwidthMessageBytes uint64 `json:"bandwidth_message_bytes,omitempty"`
	// LargeMessageFallback: no message reached large_message_bytes, so the
	// largest size was judged (a warning says so too).
	LargeMessageFallback bool `json:"large_message_fallback,omitempty"`
	// AverageBusBandwidthBytesPerSecond is nccl-tests' own "Avg bus
	// bandwidth", the mean over every size, for reference only: the small,
	// latency-bound sizes pull it far below what the links carry. Nil when
	// the run printed no usable average.
	AverageBusBandwidthBytesPerSecond *float64 `json:"average_bus_bandwidth_bytes_per_second,omitempty"`
	// BusBandwidth is the bus bandwidth per message size (bytes/s, in-place).
	BusBandwidth map[uint64]float64 `json:"bus_bandwidth_bytes_per_second,omitempty"`
	WrongResults int64              `json:"wrong_results,omitempty"`
	// Transport is NCCL's own report of its transport (NCCL_DEBUG=INFO); nil
	// when the output held none.
	Transport *parse.Transport `json:"nccl_transport,omitempty"`
	// GPUDirect is the GPUDirect RDMA verdict of each host of the run that
	// had RDMA channels or said something about GPUDirect.
	GPUDirect []HostGPUDirect `json:"gpudirect,omitempty"`
}

// Incast is what one side of an incast saw (incast.go, incast_judge.go).
type Incast struct {
	// Role is IncastReceiver or IncastSender.
	Role     string   `json:"incast_role"`
	Receiver string   `json:"incast_receiver"`
	Senders  []string `json:"incast_senders"`
	// SendersConnected is how many senders the receiver served (receiver only).
	SendersConnected int `json:"incast_senders_connected,omitempty"`
	// OverlapSeconds is how long every connected sender wrote at once (receiver only).
	OverlapSeconds float64 `json:"incast_overlap_seconds,omitempty"`
	// BytesPerSecond is what the senders reached together (receiver) or this
	// sender alone, as perftest reported it.
	BytesPerSecond float64 `json:"incast_bandwidth_bytes_per_second,omitempty"`
	// Counters is what moved on this side's port over the run, by name: the
	// hw_counters by their own names, pause frames and drops by priority.
	Counters map[string]uint64 `json:"incast_counters,omitempty"`
	// Unseen is what this side cannot count and where to read it.
	Unseen []string `json:"incast_unseen,omitempty"`

	// want is what the plan expects of the fabric, runFailed why the run's
	// own perftest failed (the counters may still prove more).
	want      incastExpect
	runFailed string
}

// The roles of an incast.
const (
	IncastReceiver = "receiver"
	IncastSender   = "sender"
)

// Key identifies the link (or run) a result belongs to. Both ends of a
// link record it, each with the other as peer.
func (r *Result) Key() string { return r.Probe + "|" + r.Peer + "|" + r.Device }

// baselineKey names the link's history in the baseline store. NCCL runs
// used to be judged on nccl-tests' average, a fraction of the large-message
// number: that history stays under the old key, so the two never share a
// median that would hide a regression for the next several runs.
func (r *Result) baselineKey() string {
	if r.Probe == KindNCCL {
		return r.Key() + "|large_message"
	}
	if r.Probe == KindNCCLGroup {
		// Groups rotate: one baseline for every group this node leads.
		return KindNCCLGroup + "|large_message"
	}
	return r.Key()
}

// measuredBandwidth is the run's judged bandwidth, 0 when it measured none.
func (r *Result) measuredBandwidth() float64 {
	if r.Bandwidth == nil {
		return 0
	}
	return r.Bandwidth.BytesPerSecond
}
