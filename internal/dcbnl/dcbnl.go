// Package dcbnl reads the Data Center Bridging state of a NIC (PFC per
// priority, the APP table that decides the trust mode, ETS, DCBX) through
// rtnetlink RTM_GETDCB, the interface behind iproute2's `dcb` and
// MLNX_OFED's `mlnx_qos`.
//
// Encoding and decoding are pure functions over byte slices so they can be
// tested and fuzzed without a DCB-capable NIC; Client is the thin I/O layer.
// Everything here only ever reads: encodeGetRequest refuses SET commands,
// because on mlx5 a PFC change renegotiates the link.
//
// Sources: include/uapi/linux/dcbnl.h and net/dcb/dcbnl.c (dcb_doit,
// dcbnl_ieee_fill) of the Linux kernel.
package dcbnl

import (
	"errors"
	"fmt"
)

// rtmGetDCB is the netlink message type of a DCB request (include/uapi/linux/rtnetlink.h).
const rtmGetDCB = 78 // RTM_GETDCB

// Commands (enum dcbnl_commands). Only the GET commands are listed; the
// package never sends anything else.
const (
	cmdGState      = 1  // DCB_CMD_GSTATE
	cmdPFCGCfg     = 7  // DCB_CMD_PFC_GCFG (CEE)
	cmdGPermHWAddr = 10 // DCB_CMD_GPERM_HWADDR
	cmdGCap        = 11 // DCB_CMD_GCAP
	cmdGNumTCs     = 12 // DCB_CMD_GNUMTCS
	cmdPFCGState   = 14 // DCB_CMD_PFC_GSTATE
	cmdBCNGCfg     = 16 // DCB_CMD_BCN_GCFG
	cmdGApp        = 18 // DCB_CMD_GAPP
	cmdIEEEGet     = 21 // DCB_CMD_IEEE_GET
	cmdGDCBX       = 22 // DCB_CMD_GDCBX
	cmdGFeatCfg    = 24 // DCB_CMD_GFEATCFG
	cmdCEEGet      = 26 // DCB_CMD_CEE_GET
)

// Top-level attributes (enum dcbnl_attrs).
const (
	attrIfname = 1  // DCB_ATTR_IFNAME, NUL-terminated string
	attrIEEE   = 13 // DCB_ATTR_IEEE, nested (enum ieee_attrs)
	attrDCBX   = 14 // DCB_ATTR_DCBX, u8
)

// Attributes nested in attrIEEE (enum ieee_attrs), listed in full so that
// the ones the decoder skips are visible.
const (
	ieeeAttrETS           = 1  // DCB_ATTR_IEEE_ETS, struct ieee_ets
	ieeeAttrPFC           = 2  // DCB_ATTR_IEEE_PFC, struct ieee_pfc
	ieeeAttrAppTable      = 3  // DCB_ATTR_IEEE_APP_TABLE, nested
	ieeeAttrPeerETS       = 4  // DCB_ATTR_IEEE_PEER_ETS
	ieeeAttrPeerPFC       = 5  // DCB_ATTR_IEEE_PEER_PFC
	ieeeAttrPeerApp       = 6  // DCB_ATTR_IEEE_PEER_APP
	ieeeAttrMaxRate       = 7  // DCB_ATTR_IEEE_MAXRATE
	ieeeAttrQCN           = 8  // DCB_ATTR_IEEE_QCN
	ieeeAttrQCNStats      = 9  // DCB_ATTR_IEEE_QCN_STATS
	ieeeAttrDCBBuffer     = 10 // DCB_ATTR_DCB_BUFFER, struct dcbnl_buffer
	ieeeAttrAppTrustTable = 11 // DCB_ATTR_DCB_APP_TRUST_TABLE, nested u8 selectors
	ieeeAttrRewrTable     = 12 // DCB_ATTR_DCB_REWR_TABLE
)

// Entries of the APP (and trust/rewrite) tables (enum ieee_attrs_app).
// Kernels since 6.3 put non-standard selectors (PCP) in DCB_ATTR_DCB_APP.
const (
	appAttrIEEE = 1 // DCB_ATTR_IEEE_APP, struct dcb_app
	appAttrDCB  = 2 // DCB_ATTR_DCB_APP, struct dcb_app
)

// APP selectors (IEEE_8021QAZ_APP_SEL_*, DCB_APP_SEL_PCP).
const (
	selEthertype = 1
	selStream    = 2 // TCP/SCTP port
	selDgram     = 3 // UDP/DCCP port
	selAny       = 4 // any L4 port
	selDSCP      = 5
	selPCP       = 255
)

// DCBX mode bits (DCB_CAP_DCBX_*).
const (
	dcbxHost       = 0x01
	dcbxLLDManaged = 0x02
	dcbxVerCEE     = 0x04
	dcbxVerIEEE    = 0x08
	dcbxStatic     = 0x10
)

// Transmission selection algorithms (IEEE_8021QAZ_TSA_*).
const (
	tsaStrict   = 0
	tsaCBShaper = 1
	tsaETS      = 2
	tsaVendor   = 255
)

// TSAName names a transmission selection algorithm as node.ETSState
// does ("strict", "ets", "cbs", "vendor"; "tsa N" for any other value).
func TSAName(tsa uint8) string {
	switch tsa {
	case tsaStrict:
		return "strict"
	case tsaCBShaper:
		return "cbs"
	case tsaETS:
		return "ets"
	case tsaVendor:
		return "vendor"
	}
	return fmt.Sprintf("tsa %d", tsa)
}

// Wire sizes of the kernel structs (all fields naturally aligned).
const (
	sizeofDcbmsg  = 4   // struct dcbmsg
	sizeofPFC     = 136 // struct ieee_pfc: 3 x u8, pad, u16, pad[2], u64[8], u64[8]
	sizeofETS     = 59  // struct ieee_ets: 3 x u8 + 7 x u8[8]
	sizeofApp     = 4   // struct dcb_app: u8 selector, u8 priority, u16 protocol
	sizeofBuffer  = 44  // struct dcbnl_buffer: u8[8], u32[8], u32
	maxIfnameLen  = 15  // IFNAMSIZ - 1
	numPriorities = 8   // IEEE_8021QAZ_MAX_TCS
)

// Errors a caller can test with errors.Is.
var (
	// ErrNotSupported: the kernel answered EOPNOTSUPP, i.e. the netdev has no
	// dcbnl_ops (veth, lo, an mlx5 VF/SF, most non-DCB NICs) or the driver
	// lacks the requested operation.
	ErrNotSupported = errors.New("dcbnl: DCB not supported by this device")
	// ErrNoDevice: the kernel answered ENODEV, no such interface in the
	// namespace the Client lives in.
	ErrNoDevice = errors.New("dcbnl: no such device")
)

// errMalformed is wrapped by every error about a message or a recorded file
// that could not be decoded; callers treat those like any other read error.
var errMalformed = errors.New("dcbnl: malformed input")

// PFC is struct ieee_pfc.
type PFC struct {
	// Cap is how many traffic classes may have PFC at once (mlx5: 8).
	Cap uint8
	// Enabled[p] is bit p of pfc_en.
	Enabled [numPriorities]bool
	// MBC is the MACsec bypass capability flag.
	MBC uint8
	// Delay is the "allowance for round-trip propagation delay" in bit
	// times; mlx5 reports the configured cable length in meters here.
	Delay uint16
	// Requests/Indications are PFC frames sent/received per priority, as
	// the driver fills them (mlx5: tx/rx per-priority pause counters).
	Requests    [numPriorities]uint64
	Indications [numPriorities]uint64
}

// ETS is struct ieee_ets; the arrays are indexed by traffic class, except
// PrioTC and RecoPrioTC which are indexed by priority.
type ETS struct {
	Willing    uint8
	Cap        uint8
	CBS        uint8
	TCTxBW     [numPriorities]uint8
	TCRxBW     [numPriorities]uint8
	TSA        [numPriorities]uint8
	PrioTC     [numPriorities]uint8
	RecoTCBW   [numPriorities]uint8
	RecoTSA    [numPriorities]uint8
	RecoPrioTC [numPriorities]uint8
}

// App is struct dcb_app: traffic matching (Selector, Protocol) gets Priority.
type App struct {
	Selector uint8
	Priority uint8
	Protocol uint16
}

// Buffer is struct dcbnl_buffer (receive buffer split, mlx5).
type Buffer struct {
	Prio2Buffer [numPriorities]uint8
	Size        [numPriorities]uint32
	TotalSize   uint32
}

// IEEE is the decoded reply to DCB_CMD_IEEE_GET (or a recorded equivalent).
// Pointers are nil when the source did not carry that object: a missing PFC
// attribute means "the driver has no ieee_getpfc", not "PFC off".
type IEEE struct {
	Ifname string
	PFC    *PFC
	ETS    *ETS
	// PeerPFC is what the link partner advertised over LLDP, if known.
	PeerPFC *PFC
	Buffer  *Buffer
	// Apps is the local APP table in kernel order.
	Apps []App
	// AppTrust is the ordered selector trust list (DCB_ATTR_DCB_APP_TRUST_TABLE,
	// switch drivers only); nil when absent.
	AppTrust []uint8
	// DCBX is the DCBX mode byte that follows the IEEE nest when the driver
	// implements getdcbx.
	DCBX *uint8
	// TrustHint is set by ParseRecorded when the source states the trust
	// mode outright (mlnx_qos "Priority trust state:"), which MLNX_OFED can
	// keep in sysfs without any DSCP APP entry.
	TrustHint string
}

// DSCPPrio calls fn for every DSCP entry of the APP table, in table order.
func (i *IEEE) DSCPPrio(fn func(dscp, prio uint8)) {
	for _, a := range i.Apps {
		if a.Selector == selDSCP && a.Protocol < 64 {
			fn(uint8(a.Protocol), a.Priority)
		}
	}
}

// Trust returns "dscp" or "pcp". mlx5 has no trust getter in dcbnl: it
// fills the APP table with all 64 DSCP entries when trust is DSCP and empties
// them when it goes back to PCP, so trust is DSCP iff any APP entry uses the
// DSCP selector (the same rule mlnx_qos applies without MLNX_OFED's sysfs).
func (i *IEEE) Trust() string {
	if i.TrustHint != "" {
		return i.TrustHint
	}
	for _, a := range i.Apps {
		if a.Selector == selDSCP {
			return "dscp"
		}
	}
	return "pcp"
}
