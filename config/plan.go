package config

import (
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/roce-exporter/roce_exporter/node"
)

// Plan is the cluster plan: the operator's IP plan written down, the expectations every
// node must meet, and the probe schedule. A Plan returned by Parse or Load has passed
// validation and has every default filled in.
type Plan struct {
	// Cluster is a display name only; nothing keys on it.
	Cluster      string
	Networks     Networks
	Expectations Expectations
	// Nodes are in file order.
	Nodes  []*Node
	Probes Probes
	// Warnings are values that are legal but cost performance (e.g. an MTU too small for
	// a 4096-byte RoCE path MTU). The caller should log them; they never stop a start.
	Warnings []*FieldError
}

// Networks are the subnets the plan's addresses must fall in.
type Networks struct {
	Management netip.Prefix
	// Compute holds one CIDR, or one per rail in multi-rail plans. It may be empty only
	// on InfiniBand, where compute interfaces need no IP.
	Compute []netip.Prefix
}

// LinkLayer is spelt as /sys/class/infiniband/<dev>/ports/<n>/link_layer spells it, so
// checks can compare it with sysfs directly.
type LinkLayer string

const (
	LinkLayerEthernet   LinkLayer = node.LinkLayerEthernet
	LinkLayerInfiniBand LinkLayer = node.LinkLayerInfiniBand
)

// RoCEMode is the rdma_cm default RoCE version expected on every port.
type RoCEMode string

const (
	RoCEv1 RoCEMode = "v1"
	RoCEv2 RoCEMode = "v2"
)

// Trust is the QoS trust mode: which header field a NIC reads a packet's priority from.
type Trust string

const (
	TrustDSCP Trust = node.TrustDSCP
	TrustPCP  Trust = node.TrustPCP
)

// Expectations are what every node's compute interfaces must look like. A zero or nil
// value means "not checked", except where a default fills it in.
type Expectations struct {
	LinkLayer LinkLayer
	// MTU is the netdev MTU; 0 means not checked.
	MTU int
	// RoCEMode is empty on InfiniBand.
	RoCEMode RoCEMode
	// PFCPriority is the priority that carries RoCE losslessly; nil means the fabric is
	// lossy RoCE by design and PFC checks are skipped.
	PFCPriority *int
	// Trust is empty when not checked.
	Trust Trust
	// ECN is nil when not checked; true means DCQCN/ECN must be on for the RoCE priority.
	ECN *bool
	// RoCEDSCP is the DSCP (0–63) RoCE data carries, default 26 on Ethernet; nil on
	// InfiniBand. With DSCP trust it must map to PFCPriority.
	RoCEDSCP *int
	// CNPDSCP is the DSCP (0–63) of DCQCN's congestion notification packets, default 48
	// (MLNX_OFED's roce_np/cnp_dscp default); nil on InfiniBand.
	CNPDSCP *int
	// VLAN is the VLAN (1–4094) the compute network runs in on the switches:
	// the port VLAN ID untagged RoCE lands in, or the tag of a VLAN device
	// that carries it; nil when the plan names none (VLAN not checked).
	VLAN *int
	// IBServiceLevel is the InfiniBand service level (0–15) NCCL_IB_SL should select;
	// nil when the plan leaves it to NCCL's default (0).
	IBServiceLevel *int
	// MinBandwidthFraction is the share of the port rate a bandwidth probe must reach.
	MinBandwidthFraction float64
	// LinkRateGbps is the expected port rate; 0 means each port's own reported rate is used.
	// A plan's value is within minLinkRateGbps..maxLinkRateGbps.
	LinkRateGbps float64
	// FirmwareConsistent asks that NICs of one model run one firmware version fleet-wide.
	FirmwareConsistent bool
	// OtherRDMAClasses are the RDMA traffic classes besides RoCE's compute
	// traffic that run on priorities of their own (storage: NVMe-oF,
	// GPUDirect Storage); RDMA bytes on their priorities are theirs, not RoCE
	// gone astray, and PFC on them is planned. Ethernet only; each priority
	// differs from PFCPriority and from the others'.
	OtherRDMAClasses []RDMAClass
}

// RDMAClass is one RDMA traffic class of the plan that is not RoCE's
// compute traffic.
type RDMAClass struct {
	// Name names the class in findings (storage, nvmeof, gds).
	Name string
	// Priority is the 802.1p priority (0–7) the class's traffic runs on.
	Priority int
}

// OtherRDMAClassOn returns the plan's other RDMA class on priority p.
func (e Expectations) OtherRDMAClassOn(p int) (RDMAClass, bool) {
	for _, c := range e.OtherRDMAClasses {
		if c.Priority == p {
			return c, true
		}
	}
	return RDMAClass{}, false
}

// RoCETrafficClass is the IP traffic class (ToS byte) RoCE should be sent with: the plan's
// DSCP with ECT(0), node.RoCETrafficClass. ok is false when the plan has no RoCE DSCP
// (InfiniBand).
func (e Expectations) RoCETrafficClass() (tc int, ok bool) {
	if e.RoCEDSCP == nil {
		return 0, false
	}
	return node.RoCETrafficClass(*e.RoCEDSCP), true
}

// Node is one machine of the cluster.
type Node struct {
	// Name is what the node calls itself (short hostname unless the exporter is told
	// otherwise); it is the node's label in metrics and its key in the plan.
	Name         string
	ManagementIP netip.Addr
	// Interfaces are the compute interfaces in rail order: Interfaces[i].Rail == i, and
	// probes pair rail i of one node with rail i of another.
	Interfaces []*ComputeInterface
}

// ComputeInterface is one compute port of the plan (node.Interface is what the kernel shows): a netdev, the RDMA device behind it, and its address.
type ComputeInterface struct {
	Rail   int
	Netdev string
	// RDMADevice is empty when the plan leaves it to discovery from the netdev.
	RDMADevice string
	// Address is the compute IP with its prefix length as `ip addr` shows it
	// (192.168.100.11/24), not masked. It is invalid only on InfiniBand plans
	// that give the interface no IPoIB address.
	Address netip.Prefix
}

// IP is the interface's compute address.
func (i *ComputeInterface) IP() netip.Addr { return i.Address.Addr() }

// Node finds a node by name. A linear scan keeps Plan a plain value (safe to copy and
// compare); even at a few thousand nodes it costs microseconds.
func (p *Plan) Node(name string) (*Node, bool) {
	for _, n := range p.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return nil, false
}

// NodeNames returns every node name, sorted, so every node derives the same order.
func (p *Plan) NodeNames() []string {
	names := make([]string, len(p.Nodes))
	for i, n := range p.Nodes {
		names[i] = n.Name
	}
	slices.Sort(names)
	return names
}

// Peers returns every node except self, sorted by name so that all nodes agree on the order.
func (p *Plan) Peers(self string) []*Node {
	peers := make([]*Node, 0, len(p.Nodes))
	for _, n := range p.Nodes {
		if n.Name != self {
			peers = append(peers, n)
		}
	}
	slices.SortFunc(peers, func(a, b *Node) int { return strings.Compare(a.Name, b.Name) })
	return peers
}

// Probes is the active-test schedule. Nothing runs unless Enabled is true, because probes
// put real load on the fabric and need responders listening on every node.
type Probes struct {
	Enabled bool
	// StateDir keeps per-link baselines across restarts.
	StateDir string
	// MaxPortUtilization skips a probe while the port already carries more than this share
	// of its rate: the probe would disturb real jobs and measure less than the link can do.
	MaxPortUtilization float64
	IBWriteBW          Perftest
	IBWriteLat         Perftest
	NCCL               NCCL
	Ping               Ping
	// Incast is the N:1 probe that proves the switch's PFC and ECN from the hosts.
	Incast Incast

	// NICTestInterval is how often every NIC must be tested by a pair probe: the length
	// of one pairing of the whole plan (an epoch). It is the default interval of
	// ib_write_bw and ib_write_lat. See fleet.go.
	NICTestInterval time.Duration
	// MaxFabricShare is the largest share of the plan's nodes (and so of its NICs: a
	// pair tests all its rails at once) a pair probe may load at one time. 1 runs every
	// pair of an epoch at once; 0.25 splits the epoch into rounds of a quarter each.
	MaxFabricShare float64
	// FreshRounds is how many intervals a probe result counts for: older results are
	// dropped from the exported link results and from the peer judgement.
	FreshRounds int
}

// Schedule is when a probe runs: every Interval, started up to Jitter late so that nodes
// don't all start at the same instant, and killed after Timeout.
type Schedule struct {
	Enabled  bool
	Interval time.Duration
	Timeout  time.Duration
	Jitter   time.Duration
}

// Perftest configures one perftest binary (ib_write_bw or ib_write_lat). Commands run
// with an argv, never through a shell.
type Perftest struct {
	Schedule
	Command string
	// Duration is perftest's -D. Zero runs perftest's iteration mode, which latency tests
	// need to report percentiles.
	Duration    time.Duration
	MessageSize SizeBytes
	QueuePairs  int
	// GIDIndex is perftest's -x; nil lets perftest pick the best GID (RoCE v2, IPv4).
	GIDIndex *int
	// PortRange holds the TCP ports of the per-device responders, one port per device.
	PortRange PortRange
	// ExtraArgs are appended on both sides; they never hold the flags the runner sets.
	ExtraArgs []string
	// UseCUDA runs each end from GPU memory (perftest --use_cuda_bus_id=<bdf>), the GPU
	// nearest the tested NIC in the PCIe tree, so the probe crosses the same
	// GPU↔NIC path NCCL uses. It needs a perftest built with CUDA.
	UseCUDA bool
}

// PortRange is an inclusive range of TCP ports.
type PortRange struct {
	First, Last uint16
}

// Len is how many ports the range holds.
func (r PortRange) Len() int {
	if r.Last < r.First {
		return 0
	}
	return int(r.Last) - int(r.First) + 1
}

func (r PortRange) overlaps(o PortRange) bool {
	return r.Len() > 0 && o.Len() > 0 && r.First <= o.Last && o.First <= r.Last
}

func (r PortRange) String() string {
	return strconv.Itoa(int(r.First)) + "-" + strconv.Itoa(int(r.Last))
}

// NCCL configures the all_reduce_perf run that the leader launches with mpirun across
// every node of the plan.
type NCCL struct {
	Schedule
	// Leader is the one node that runs mpirun; it needs ssh access to the others.
	Leader      string
	MPIRun      string
	Command     string
	GPUsPerNode int
	MinBytes    SizeBytes
	// MaxBytes is nccl-tests' -e. Zero sizes it from the GPUs' memory when the run
	// starts (nccl-tests holds three buffers of it per GPU), at most DefaultNCCLMaxBytes.
	MaxBytes SizeBytes
	// NVIDIASMI is the nvidia-smi the runner asks for the GPUs' memory when MaxBytes is 0.
	NVIDIASMI string
	// ExtraMPIRunArgs go to mpirun before the command; they never set hosts or rank counts.
	ExtraMPIRunArgs []string
	// Env is exported to every rank (mpirun -x KEY=VALUE).
	Env map[string]string
	// NodeEnv holds variables for the ranks of one node, by node name, over Env: what
	// differs between nodes, such as NCCL_IB_GID_INDEX where one node's GID table
	// differs (an extra IPv6 or VLAN address shifts the index).
	NodeEnv map[string]map[string]string
	// LargeMessageBytes is where the judged number starts: a run is judged on the best
	// bus bandwidth among the message sizes at or above it (the largest size when none
	// reaches it), never on nccl-tests' "Avg bus bandwidth", which averages in the
	// latency-bound small sizes.
	LargeMessageBytes SizeBytes
	// MinBusBandwidthGBps is an absolute floor in GB/s (10^9 bytes/s, as nccl-tests
	// prints busbw) for that large-message bus bandwidth; 0 means no floor.
	MinBusBandwidthGBps float64
	// GroupSize is the number of nodes of each NCCL group run: every interval the plan is
	// cut into groups of this size (the last one takes the remainder), led by a member the
	// schedule names, so a slow group points at its few nodes. Leader, when set, adds the
	// whole-cluster run. 0 runs no groups.
	GroupSize int
}

// Incast configures the incast probe: Senders nodes write at full rate into one
// receiver's NIC on the RoCE traffic class, one perftest server per sender on the
// receiver, so that the switch port towards the receiver is oversubscribed Senders:1 and
// must pause (PFC) or mark (ECN) instead of dropping. Its Perftest part is the perftest
// run of every sender and server; PortRange holds Senders ports per rail on the receiver.
type Incast struct {
	Perftest
	// Senders is how many nodes write into the receiver at once (at least 2).
	Senders int
}

// Ping pings every peer's compute IPs.
type Ping struct {
	Schedule
	Count int
}

// SelfName is the name this node goes by in the plan: the flag value when set, else the
// short hostname (the part before the first dot), which is what `hostname -s` prints and
// what operators write in plans. It is empty when neither is available.
func SelfName(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	host, err := os.Hostname()
	if err != nil {
		return ""
	}
	short, _, _ := strings.Cut(host, ".")
	return short
}
