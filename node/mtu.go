package node

// RoCEHeaderBytes is what RoCE carries inside the Ethernet MTU, as the
// kernel's iboe_get_mtu() reserves it: GRH 40, UDP 8, BTH 12, XRC 4,
// AtomicETH 28, ICRC 4.
const RoCEHeaderBytes = 96

// MinMTUForRoCE4096 is the smallest netdev MTU that lets RoCE use its largest
// path MTU, 4096 bytes.
const MinMTUForRoCE4096 = 4096 + RoCEHeaderBytes

// RoCEActiveMTU is the IB path MTU RoCE uses for a netdev MTU, as the kernel's
// iboe_get_mtu(): the largest of 4096, 2048, 1024, 512, 256 that fits in the
// netdev MTU minus the RoCE headers; 0 when not even 256 fits.
func RoCEActiveMTU(netdevMTU int) int {
	for mtu := 4096; mtu >= 256; mtu /= 2 {
		if netdevMTU-RoCEHeaderBytes >= mtu {
			return mtu
		}
	}
	return 0
}
