package node

// Trust modes: which header field a NIC reads a packet's priority from.
const (
	TrustDSCP = "dscp"
	TrustPCP  = "pcp"
)

// ECN roles of DCQCN: the notification point marks CNPs back to the sender,
// the reaction point slows down when it receives them.
const (
	ECNRoleNP = "np"
	ECNRoleRP = "rp"
)

// ECNRoles are the roles in report order.
var ECNRoles = [2]string{ECNRoleNP, ECNRoleRP}

// DCBState is the data-center-bridging configuration of an interface.
type DCBState struct {
	Interface string
	// PFCKnown is false when the driver has no IEEE PFC object (then
	// PFCCap and PFCEnabled mean nothing).
	PFCKnown   bool
	PFCCap     int
	PFCEnabled [8]bool
	// PFCDelay is the PFC object's delay field: IEEE 802.1Qaz's allowance
	// for the link's round trip in bit times, where mlx5 keeps the cable
	// length in metres instead (mlnx_qos's "Cable len", 7 by default),
	// which its PFC headroom is sized for. Meaningful only when PFCKnown.
	PFCDelay int
	// ETS is the transmit scheduling of the traffic classes; nil where the
	// driver reports none or the capture does not show it.
	ETS *ETSState
	// Trust is TrustDSCP or TrustPCP; "" when the DCB state could not be
	// read (only ECN files were found).
	Trust string
	// ECN holds the MLNX_OFED per-priority enable files, keyed by role
	// (ECNRoleNP, ECNRoleRP); nil when the driver does not expose them.
	ECN map[string]*ECNSetting
	// DSCP is the DSCP → priority map of the APP table; nil when the table has no
	// DSCP entry (PCP trust on mlx5) or the DCB state could not be read.
	DSCP *DSCPMap
	// CNPDSCP and CNPPrio are MLNX_OFED's ecn/roce_np/cnp_dscp and cnp_802p_prio, the
	// marking of the CNPs this NIC sends; nil where the files do not exist.
	CNPDSCP *int
	CNPPrio *int
	// DCQCN are the port's congestion control parameters (dcqcn.go); nil
	// where neither MLNX_OFED's ecn/ files nor upstream's debugfs show them.
	DCQCN *DCQCNParams
	// Buffer is the split of the port's receive buffer (mlx5's dcbnl
	// buffer object, or mlnx_qos's "Receive buffer size" line); nil where
	// the driver has none or the capture does not show it.
	Buffer *ReceiveBuffer
}

// ReceiveBuffer is how a NIC's port receive buffer is split among its
// buffers and which buffer each priority lands in.
type ReceiveBuffer struct {
	// Size is each buffer's size in bytes.
	Size [8]uint32
	// TotalSize is the whole port buffer in bytes (mlnx_qos prints it as
	// max_buffer_size, total_size before mlnx-tools v23.07), 0 when not
	// reported.
	TotalSize uint32
	// PriorityBuffer is the buffer each priority's packets are held in.
	PriorityBuffer [8]uint8
}

// Transmission selection algorithms of a traffic class (IEEE 802.1Qaz),
// as iproute2's dcb and mlnx_qos name them.
const (
	TSAStrict = "strict"
	TSAETS    = "ets"
	TSACBS    = "cbs"
	// TSAVendor is the driver's own scheduling: mlx5's firmware default
	// before anyone sets ETS, with no bandwidth shares to read.
	TSAVendor = "vendor"
)

// ETSState is how the NIC schedules its traffic classes on transmit.
type ETSState struct {
	// PrioTC is the traffic class each priority is queued in.
	PrioTC [8]uint8
	// TSA is each traffic class's algorithm (TSA*; "tsa N" for a value
	// without a name).
	TSA [8]string
	// BandwidthPercent is each ETS class's guaranteed share of the link
	// while every class has traffic; meaningless for other algorithms.
	BandwidthPercent [8]uint8
}

// MLX5MinimumMaxMTU is the least maximum MTU mlx5 reserves above a lossless
// buffer's xoff threshold (port_buffer.c MINIMUM_MAX_MTU; it takes the
// netdev's max_mtu when larger).
const MLX5MinimumMaxMTU = 9216

// MLX5PFCXoffBytes is the PFC headroom mlx5 keeps in a lossless receive
// buffer: the bytes still arriving after it sends a pause, sized for the
// cable length and link speed, by the driver's own formula (port_buffer.c
// calculate_xoff, commit 0696d60853d5):
//
//	xoff = (301 + 2.16 × length [m]) × speed [Gb/s] + 2.72 × MTU [B]
//
// in the driver's integer arithmetic, with the speed at least 40 Gb/s.
func MLX5PFCXoffBytes(cableMeters, speedMbps, mtu int) int {
	speedMbps = max(speedMbps, 40000)
	return (301+216*cableMeters/100)*speedMbps/1000 + 272*mtu/100
}

// ECNSetting is one role's per-priority ECN enable files.
type ECNSetting struct {
	Enabled [8]bool
	// Present marks the priorities whose file could be read.
	Present [8]bool
}
