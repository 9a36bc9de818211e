package sysfixture

import (
	"fmt"
	"maps"
)

// The scenarios below are the layouts of issue 18: devices and drivers whose
// sysfs differs from a ConnectX PF under an upstream kernel. Each follows
// the kernel's (or MLNX_OFED's) own formats; the comments say where each
// format comes from.

// MLX4CountersExt is a dual-port ConnectX-3 InfiniBand HCA under MLNX_OFED
// 3.x. That OFED's drivers/infiniband/core/sysfs.c (mlnx-ofa_kernel 3.x,
// e.g. github.com/gpudirect/mlnx-ofa_kernel @ad0b96e2) creates for every
// port counters/ with the 16 PortCounters attributes, whose data and packet
// counters are 32 bits wide and saturate, and counters_ext/ with the 8
// 64-bit PortCountersExtended ones (port_{xmit,rcv}_{data,packets}_64,
// port_{unicast,multicast}_{xmit,rcv}_packets). The device values (board
// SM_1141000001000, firmware 2.31.5050, MT4099, "40 Gb/sec (4X QDR)") and
// port 2's counters/port_rcv_data of 0 beside counters_ext/port_rcv_data_64
// of 4631917 are node_exporter's mlx4_0 fixture (collector/fixtures/sys.ttar).
func MLX4CountersExt() Node {
	pma := func(rcvData, xmitData, rcvPkts, xmitPkts string) map[string]string {
		return map[string]string{
			"symbol_error": "0", "link_error_recovery": "0", "link_downed": "1",
			"port_rcv_errors": "0", "port_rcv_remote_physical_errors": "0", "port_rcv_switch_relay_errors": "0",
			"port_xmit_discards": "5", "port_xmit_constraint_errors": "0", "port_rcv_constraint_errors": "0",
			"local_link_integrity_errors": "0", "excessive_buffer_overrun_errors": "0", "VL15_dropped": "0",
			"port_xmit_data": xmitData, "port_rcv_data": rcvData, "port_xmit_packets": xmitPkts, "port_rcv_packets": rcvPkts,
		}
	}
	ext := func(rcvData, xmitData, rcvPkts, xmitPkts uint64) map[string]string {
		return map[string]string{
			"port_xmit_data_64": fmt.Sprint(xmitData), "port_rcv_data_64": fmt.Sprint(rcvData),
			"port_xmit_packets_64": fmt.Sprint(xmitPkts), "port_rcv_packets_64": fmt.Sprint(rcvPkts),
			"port_unicast_xmit_packets": fmt.Sprint(xmitPkts - 16), "port_unicast_rcv_packets": fmt.Sprint(rcvPkts - 93),
			"port_multicast_xmit_packets": "16", "port_multicast_rcv_packets": "93",
		}
	}
	const guid = "0002:c903:00a1:b2c0"
	portGID := func(port int) string { return fmt.Sprintf("fe80:0000:0000:0000:0002:c903:00a1:b2c%d", port) }
	m := [6]byte{0x00, 0x02, 0xc9, 0xa1, 0xb2, 0xc1}
	return Node{
		Modules: []string{"ib_core", "ib_uverbs", "ib_umad", "rdma_cm", "ib_ipoib", "mlx4_core", "mlx4_ib"},
		Devices: []Device{{
			Name: "mlx4_0", Driver: "mlx4_core",
			PCIAddress: "0000:04:00.0", RootPort: "0000:00:03.0",
			Vendor: "0x15b3", DeviceID: "0x1003", HCAType: "MT4099", BoardID: "SM_1141000001000", FWVer: "2.31.5050",
			NodeGUID: guid, MAC: macString(m),
			LinkLayer: "InfiniBand", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "40 Gb/sec (4X QDR)", LID: "0x5",
			Netdev: "ib0", MTU: 4092, OperState: "up", Carrier: "1", CarrierChanges: 2, Speed: "40000",
			PCIeCurSpeed: "8.0 GT/s PCIe", PCIeMaxSpeed: "8.0 GT/s PCIe", PCIeCurWidth: 8, PCIeMaxWidth: 8,
			RootSpeed: "8.0 GT/s PCIe", RootWidth: 8,
			// Port 1 has moved more than 2^32 words: the 32-bit counters
			// stick at all ones (IBA PortCounters saturate).
			Counters:    pma("4294967295", "4294967295", "4294967295", "4294967295"),
			CountersExt: ext(12881234567890, 12712345678901, 9912345678, 9873456789),
			GIDs:        []GID{{0, portGID(1), "IB/RoCE v1", ""}},
			GIDSlots:    8, Uverbs: 0,
			MorePorts: []Port{{
				LinkLayer: "InfiniBand", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "40 Gb/sec (4X QDR)", LID: "0x6",
				Counters:    pma("0", "0", "0", "0"),
				CountersExt: ext(4631917, 3733440, 6825908347, 6235865),
				GIDs:        []GID{{0, portGID(2), "IB/RoCE v1", ""}},
				GIDSlots:    8,
				Netdev:      "ib1", MAC: "00:02:c9:a1:b2:c2",
			}},
		}},
	}
}

// IWARPNoPMA is an Intel X722 LOM running iWARP with i40iw on a 4.x
// kernel. Those kernels' add_port() created counters/ for every device and
// show_pma_counter() printed "N/A (no PMA)" for a device without
// process_mad, which i40iw never had: every one of the 17 files reads so
// (node_exporter's i40iw0 fixture, node_exporter#966). From i40iw_verbs.c:
// node_type RNIC, the node GUID and the single GID are the MAC padded with
// zeros, the port reports 4X at SDR ("10 Gb/sec (4X)" on kernels that print
// no name for SDR), hw_counters are i40iw_hw_stat_names, and the device
// attributes hca_type/board_id/fw_ver are node_exporter's ("I40IW",
// "I40IW Board ID", "0.2"). link_layer is what rdma_port_get_link_layer()
// gives an iWARP device without get_link_layer: Ethernet (node_exporter's
// fixture says InfiniBand, which no kernel prints for i40iw).
func IWARPNoPMA() Node {
	m := [6]byte{0x3c, 0xfd, 0xfe, 0x9c, 0x5b, 0x60}
	noPMA := map[string]string{}
	for _, c := range []string{"VL15_dropped", "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery",
		"local_link_integrity_errors", "port_rcv_constraint_errors", "port_rcv_data", "port_rcv_errors", "port_rcv_packets",
		"port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_constraint_errors", "port_xmit_data",
		"port_xmit_discards", "port_xmit_packets", "port_xmit_wait", "symbol_error"} {
		noPMA[c] = "N/A (no PMA)"
	}
	hw := map[string]string{"lifespan": "10"}
	for _, c := range []string{"ip4InDiscards", "ip4InTruncatedPkts", "ip4OutNoRoutes", "ip6InDiscards", "ip6InTruncatedPkts",
		"ip6OutNoRoutes", "tcpRetransSegs", "tcpInOptErrors", "tcpInProtoErrors", "ip4InReasmRqd", "ip4InMcastPkts",
		"ip4OutSegRqd", "ip4OutMcastPkts", "ip6InOctets", "ip6InPkts", "ip6InReasmRqd", "ip6InMcastPkts", "ip6OutOctets",
		"ip6OutPkts", "ip6OutSegRqd", "ip6OutMcastPkts", "iwRdmaBnd", "iwRdmaInv"} {
		hw[c] = "0"
	}
	maps.Copy(hw, map[string]string{
		"ip4InOctets": "91234567890", "ip4InPkts": "61234567", "ip4OutOctets": "88123456789", "ip4OutPkts": "60123456",
		"tcpInSegs": "61234001", "tcpOutSegs": "60123001", "tcpRetransSegs": "12",
		"iwInRdmaReads": "1201", "iwInRdmaSends": "45012", "iwInRdmaWrites": "5512301",
		"iwOutRdmaReads": "1188", "iwOutRdmaSends": "44907", "iwOutRdmaWrites": "5498712",
	})
	return Node{
		Modules: []string{"ib_core", "ib_uverbs", "iw_cm", "rdma_cm", "i40e", "i40iw"},
		Devices: []Device{{
			Name: "i40iw0", Driver: "i40e", NodeType: "4: RNIC",
			PCIAddress: "0000:3d:00.0", RootPort: "0000:3a:00.0",
			Vendor: "0x8086", DeviceID: "0x37d2", HCAType: "I40IW", BoardID: "I40IW Board ID", FWVer: "0.2",
			NodeGUID: fmt.Sprintf("%02x%02x:%02x%02x:%02x%02x:0000", m[0], m[1], m[2], m[3], m[4], m[5]), MAC: macString(m),
			LinkLayer: "Ethernet", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "10 Gb/sec (4X)",
			Netdev: "eno1", MTU: 9000, OperState: "up", Carrier: "1", CarrierChanges: 2, Speed: "10000",
			PCIeCurSpeed: "8.0 GT/s PCIe", PCIeMaxSpeed: "8.0 GT/s PCIe", PCIeCurWidth: 8, PCIeMaxWidth: 8,
			RootSpeed: "8.0 GT/s PCIe", RootWidth: 8,
			Counters: noPMA, HWCounters: hw,
			GIDs: []GID{{0, fmt.Sprintf("%02x%02x:%02x%02x:%02x%02x:0000:0000:0000:0000:0000", m[0], m[1], m[2], m[3], m[4], m[5]),
				"IB/RoCE v1", ""}},
			GIDSlots: 1, Uverbs: 0,
		}},
	}
}

// SRIOVVF is a ConnectX-7 PF with one SR-IOV virtual function bound to
// mlx5_core on the host, as SR-IOV device plugins hand them to pods. The VF
// (device 0x101e, "ConnectX Family mlx5Gen Virtual Function", hca_type
// MT4126) has a physfn link to its PF (drivers/pci/iov.c); its PCIe link
// registers are reserved, which the kernel prints as "Unknown" and width 0
// (pci-sysfs.c current_link_speed_show on LNKSTA 0). mlx5 adds the
// congestion counters and rx_icrc_encapsulated to hw_counters only with
// cc_query_allowed / the PCAM bit, which a VF does not have [inferred from
// drivers/infiniband/hw/mlx5/counters.c; not seen on a VF]. DCB netlink is
// registered on PFs only (see NIC.VF).
func SRIOVVF() Node {
	n := HealthyCX7(1)
	vf := cx7(1)
	vf.Name, vf.PCIAddress, vf.RootPort, vf.PhysFn = "mlx5_1", "0000:18:00.2", n.Devices[0].RootPort, n.Devices[0].PCIAddress
	vf.DeviceID, vf.HCAType = "0x101e", "MT4126"
	vf.PCIeCurSpeed, vf.PCIeMaxSpeed, vf.PCIeCurWidth, vf.PCIeMaxWidth = "Unknown", "Unknown", 0, 0
	vf.Netdev, vf.RoCEMode = "ens1f0v0", ""
	for _, c := range []string{"np_cnp_sent", "np_ecn_marked_roce_packets", "rp_cnp_handled", "rp_cnp_ignored", "rx_icrc_encapsulated"} {
		delete(vf.HWCounters, c)
	}
	m := mac(1)
	for i := range vf.GIDs {
		vf.GIDs[i].Ndev = vf.Netdev
		if i >= 2 {
			vf.GIDs[i].GID = ipv4GID(192, 168, 100, 12)
		}
	}
	vf.MAC, vf.NodeGUID = macString(m), nodeGUID(m)
	n.Devices = append(n.Devices, vf)
	return n
}

// SRIOVVFScenario is SRIOVVF with the captures of its PF and VF.
func SRIOVVFScenario() Scenario {
	return Scenario{Node: SRIOVVF(), Replay: map[string]NIC{"mlx5_1": {VF: true, KernelVersion: "6.8.0-49-generic", Channels: 2}}}
}

// EFA is an AWS instance with one Elastic Fabric Adapter beside its ENA
// netdev. From drivers/infiniband/hw/efa: the device registers as "efa_%d"
// with node_type RDMA_NODE_UNSPECIFIED ("7: unspecified"), no process_mad
// (so no counters/), get_link_layer returning IB_LINK_LAYER_UNSPECIFIED,
// which link_layer_show prints as "Unknown", query_port ACTIVE/LinkUp at
// 4X EDR, one GID (the EFA address), no netdev of its own, port hw_counters
// EFA_DEFINE_PORT_STATS (bytes, not words) and device-level hw_counters
// EFA_DEFINE_DEVICE_STATS (admin commands). Newer kernels add rdma_write_*
// port counters; udev may name the device rdmap<bus>s<slot> instead. The
// function sits on the VM's root bus without PCIe link attributes.
func EFA() Node {
	m := [6]byte{0x06, 0xd7, 0xa2, 0x12, 0x34, 0x56}
	return Node{
		Modules: []string{"ib_core", "ib_uverbs", "efa", "ena"},
		Devices: []Device{{
			Name: "efa_0", Driver: "efa", NodeType: "7: unspecified", NoDriverAttrs: true,
			PCIAddress: "0000:00:06.0",
			Vendor:     "0x1d0f", DeviceID: "0xefa1", NodeGUID: "16c0:9d2a:37e5:0b01",
			LinkLayer: "Unknown", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "100 Gb/sec (4X EDR)",
			HWCounters: map[string]string{
				"lifespan": "10", "tx_bytes": "91322331884412", "tx_pkts": "11823344551", "rx_bytes": "90112233445566",
				"rx_pkts": "11712233441", "rx_drops": "0", "send_bytes": "1223344556", "send_wrs": "1123344",
				"recv_bytes": "1198877665", "recv_wrs": "1101122", "rdma_read_wrs": "8812233", "rdma_read_bytes": "89012233445566",
				"rdma_read_wr_err": "0", "rdma_read_resp_bytes": "88912233445500",
			},
			DeviceHWCounters: map[string]string{
				"lifespan": "10", "submitted_cmds": "4412", "completed_cmds": "4412", "cmds_err": "0",
				"no_completion_cmds": "0", "keep_alive_rcvd": "172811", "alloc_pd_err": "0", "create_qp_err": "0",
				"create_cq_err": "0", "reg_mr_err": "0", "alloc_ucontext_err": "0", "create_ah_err": "0", "mmap_err": "0",
			},
			GIDs:     []GID{{0, linkLocalGID(m), "IB/RoCE v1", ""}},
			GIDSlots: 1, Uverbs: 0,
		}},
		UnboundNICs: []PCIFunction{{Address: "0000:00:05.0", Vendor: "0x1d0f", Device: "0xec20", Class: "0x020000",
			Driver: "ena", Netdev: "ens5", MAC: macString(m), MTU: 9001, Speed: "100000"}},
	}
}

// RoCELAG is a ConnectX-6 Dx whose two ports are bonded (802.3ad) with the
// RoCE LAG offload: mlx5 then registers one RDMA device, mlx5_bond_0, on
// the first PF, whose GIDs belong to the bond (roce_gid_mgmt puts the
// master's addresses on the port), and none on the second PF. bonding
// lists bond0 in /sys/class/net/bonding_masters, a regular file, and links
// master and slaves (bond_sysfs.c, netdev_adjacent).
func RoCELAG() Node {
	m0, m1 := [6]byte{0x0c, 0x42, 0xa1, 0x7e, 0x10, 0x20}, [6]byte{0x0c, 0x42, 0xa1, 0x7e, 0x10, 0x21}
	d := cx7(0)
	d.Name, d.PCIAddress, d.RootPort = "mlx5_bond_0", "0000:3b:00.0", "0000:3a:00.0"
	d.DeviceID, d.HCAType, d.BoardID, d.FWVer = "0x101d", "MT4125", "MT_0000000359", "22.39.1002"
	d.PCIeCurSpeed, d.PCIeMaxSpeed, d.RootSpeed = "16.0 GT/s PCIe", "16.0 GT/s PCIe", "16.0 GT/s PCIe"
	d.Rate, d.Speed, d.Netdev = "100 Gb/sec (4X EDR)", "100000", "ens1f0np0"
	d.MAC, d.NodeGUID = macString(m0), nodeGUID(m0)
	d.GIDs = []GID{
		{0, linkLocalGID(m0), "IB/RoCE v1", "bond0"},
		{1, linkLocalGID(m0), "RoCE v2", "bond0"},
		{2, ipv4GID(192, 168, 100, 31), "IB/RoCE v1", "bond0"},
		{3, ipv4GID(192, 168, 100, 31), "RoCE v2", "bond0"},
	}
	return Node{
		Modules: append([]string{"bonding"}, mlx5Modules...),
		Devices: []Device{d},
		UnboundNICs: []PCIFunction{{Address: "0000:3b:00.1", RootPort: d.RootPort, Vendor: "0x15b3", Device: "0x101d",
			Class: "0x020000", Driver: "mlx5_core", Netdev: "ens1f1np1", MAC: macString(m1), MTU: 9000, Speed: "100000"}},
		Bonds: []Bond{{Name: "bond0", Mode: "802.3ad 4", Slaves: []string{"ens1f0np0", "ens1f1np1"}, MAC: macString(m0), MTU: 9000, Speed: "200000"}},
	}
}
