package node

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
