package node

import "net/netip"

// Interface is a network interface backing an RDMA port (or one the
// operator asked for besides).
type Interface struct {
	Name string
	// RDMADevice and Port name the RDMA port the interface backs; empty and
	// 0 for an interface that backs none.
	RDMADevice string
	Port       int
	MTU        int // 0 when unreadable
	OperState  string
	// SpeedMbps is -1 when unknown (a down link reads EINVAL).
	SpeedMbps      int
	CarrierChanges uint64
	// CarrierChangesKnown is false when the file could not be read.
	CarrierChangesKnown bool
	Driver              string
	FirmwareVersion     string
	BusInfo             string
	// Addresses is known only when AddressesKnown: read from the live
	// system, or from a capture of `ip addr` when replaying a node.
	Addresses      []netip.Prefix
	AddressesKnown bool
}

// Up reports whether the interface is operationally up.
func (i *Interface) Up() bool { return i.OperState == "up" }
