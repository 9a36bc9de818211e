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

// ECNSetting is one role's per-priority ECN enable files.
type ECNSetting struct {
	Enabled [8]bool
	// Present marks the priorities whose file could be read.
	Present [8]bool
}
