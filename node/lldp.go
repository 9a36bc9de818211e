package node

import (
	"strconv"
	"strings"
)

// SourceLLDP reads the LLDP neighbour of each interface from the local
// lldpd.
const SourceLLDP = "lldp"

// LLDPNeighbor is what the switch port an interface is cabled to announces
// about itself (IEEE 802.1AB), as the local lldpd last received it.
type LLDPNeighbor struct {
	Interface string
	// ChassisName is the switch's system name (TLV 5), "" when it sends
	// none; ChassisID is its chassis ID (TLV 1, usually a MAC) and
	// ChassisIDType its subtype as lldpd spells it (mac, local, ip, ...).
	ChassisName   string
	ChassisID     string
	ChassisIDType string
	// PortID is the switch port's ID (TLV 2) with its subtype (ifname, mac,
	// local, ...); PortDescr its description (TLV 4), "" when not sent.
	PortID     string
	PortIDType string
	PortDescr  string
	// LinkDown: lldpd no longer lists this neighbour because the
	// interface's link is down; it is the last one seen before.
	LinkDown bool

	// What the switch port says about itself in the optional TLVs, each
	// unknown (zero, nil) when it does not send them. Linux switch
	// operating systems that run lldpd (SONiC, Cumulus) send no maximum
	// frame size: lldpd never sets its own.

	// MaxFrameSize is the IEEE 802.3 maximum frame size TLV: the largest
	// frame the switch port takes, Ethernet header and FCS included
	// (1518 for a plain 1500-byte MTU, 1522 with a VLAN tag).
	MaxFrameSize int
	// PVID is the IEEE 802.1 port VLAN ID: the VLAN untagged frames from
	// this host land in. VLANs are the VLANs the port announces: its VLAN
	// name TLVs (IEEE 802.1) in the switch's order, and the PVID.
	PVID  int
	VLANs []int
	// MACPHY is the IEEE 802.3 MAC/PHY configuration/status TLV.
	MACPHY *LLDPMACPHY
}

// LLDPMACPHY is the switch port's IEEE 802.3 MAC/PHY configuration and
// status: its auto-negotiation and its operational MAU type, as lldpd
// names it ("400GbaseDR4 - 400GBASE-R PCS/PMA over 4-lane single-mode
// fiber PMD", "unknown" for a type lldpd has no name for).
type LLDPMACPHY struct {
	AutonegSupported, AutonegEnabled bool
	MAU                              string
}

// SpeedMbps reads the link speed from the MAU type's name: the number and
// unit before "base" (10GbaseT, 1000BaseTFD, 10GigBaseSR, 2p5GigT,
// 400GbaseDR4). ok is false for a type without a speed lldpd names
// ("unknown") or an asymmetric one (10G1GbasePRXD1).
func (m *LLDPMACPHY) SpeedMbps() (int, bool) {
	name, _, _ := strings.Cut(m.MAU, " ")
	i := 0
	for i < len(name) && name[i] >= '0' && name[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, false
	}
	whole, _ := strconv.Atoi(name[:i])
	rest := name[i:]
	tenths := 0
	if len(rest) >= 2 && rest[0] == 'p' && rest[1] >= '0' && rest[1] <= '9' {
		tenths, rest = int(rest[1]-'0'), rest[2:]
	}
	unit := 1
	switch {
	case strings.HasPrefix(rest, "Gig"):
		unit, rest = 1000, rest[3:]
	case strings.HasPrefix(rest, "G"):
		unit, rest = 1000, rest[1:]
	}
	lower := strings.ToLower(rest)
	if !strings.HasPrefix(lower, "base") && !strings.HasPrefix(lower, "pass") && !(unit == 1000 && strings.HasPrefix(rest, "T")) {
		return 0, false
	}
	return whole*unit + tenths*unit/10, true
}

// Switch names the neighbour: its system name, else its chassis ID.
func (n *LLDPNeighbor) Switch() string {
	if n.ChassisName != "" {
		return n.ChassisName
	}
	return n.ChassisID
}

// SwitchPort names the neighbour's port the way an engineer finds it on
// the switch: the port ID when it is an interface name or a locally
// assigned name, else the port description (a MAC port ID says nothing
// on a faceplate), else the ID whatever its kind.
func (n *LLDPNeighbor) SwitchPort() string {
	switch {
	case n.PortIDType == "ifname" || n.PortIDType == "local" || n.PortIDType == "ifalias":
		if n.PortID != "" {
			return n.PortID
		}
	case n.PortDescr != "":
		return n.PortDescr
	}
	if n.PortID != "" {
		return n.PortID
	}
	return n.PortDescr
}
