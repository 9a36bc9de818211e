package probes

import "github.com/roce-exporter/roce_exporter/probes/parse"

// Failure reasons. They become the `reason` label of
// roce_probe_failure_info, so they are part of the metrics contract: add new
// ones, never rename. Those an output shows are parse's (it classifies the
// output); the others only a runner can judge.
const (
	ReasonConnectRefused   = parse.ReasonConnectRefused
	ReasonTimeout          = parse.ReasonTimeout
	ReasonNoDevice         = parse.ReasonNoDevice
	ReasonGIDIndex         = parse.ReasonGIDIndex
	ReasonRetryExceeded    = parse.ReasonRetryExceeded
	ReasonWrongResults     = parse.ReasonWrongResults
	ReasonBelowThreshold   = parse.ReasonBelowThreshold
	ReasonExecError        = parse.ReasonExecError
	ReasonQPConnectTimeout = parse.ReasonQPConnectTimeout
	ReasonIncompleteOutput = parse.ReasonIncompleteOutput
	ReasonParseError       = parse.ReasonParseError
	ReasonNotToolOutput    = parse.ReasonNotToolOutput
	// ReasonRegression: the bandwidth fell clearly below the link's own history.
	ReasonRegression = "regression"
	// ReasonWrongPriority: the bandwidth test's bytes were not counted on the RoCE
	// priority's byte counters but on another, lossy priority, however fast it ran.
	ReasonWrongPriority = "wrong_priority"
	// ReasonSocketFallback: NCCL's own report (NCCL_DEBUG=INFO) shows inter-node
	// traffic over TCP sockets (NET/Socket) instead of RDMA, whatever the bandwidth.
	ReasonSocketFallback = "socket_fallback"
	// ReasonNoGDRDMA: NCCL used RDMA, but this node's ranks used no GPUDirect RDMA
	// although its GPUs and NICs share a PCIe switch (PIX/PXB, within NCCL's default
	// NCCL_NET_GDR_LEVEL), or NCCL found no GPUDirect for any of its HCAs there: data
	// was staged through host memory. GPUDirect off by NCCL's distance rule is not it.
	ReasonNoGDRDMA = "no_gdrdma"
	// The incast verdicts (incast_judge.go): what the switch did when several
	// senders wrote into one receiver's port on the lossless RoCE priority.
	//
	// ReasonSwitchNoPFC: packets were lost (out of sequence at the receiver,
	// retransmitted by a sender) and the switch did not pause the senders on the
	// RoCE priority.
	ReasonSwitchNoPFC = "switch_no_pfc"
	// ReasonSwitchNoECN: the receiver's port was oversubscribed and not one
	// packet arrived ECN-marked, so no CNP went back: DCQCN never slowed anyone.
	ReasonSwitchNoECN = "switch_no_ecn"
	// ReasonPFCOnWrongPriority: the switch paused a sender, but on another
	// priority than the one RoCE travels on.
	ReasonPFCOnWrongPriority = "pfc_on_wrong_priority"
	// ReasonHostECNOff: the switch marked, but the receiving NIC sent no CNP
	// (notification point off), or a sender ignored the CNPs it got (reaction
	// point off): the host's DCQCN, not the switch.
	ReasonHostECNOff = "host_ecn_off"
	// ReasonIncastReceiverDrops: the receiving NIC itself dropped for lack of
	// buffer: the host's PFC or buffer, or a host that cannot take line rate.
	ReasonIncastReceiverDrops = "receiver_nic_drops"
)

var hints = map[string]string{
	ReasonConnectRefused:      "The peer did not accept the test connection: check that the peer's responder (ib_write_bw server) is running, that both sides use the same TCP port, and that no firewall blocks it on the management network.",
	ReasonTimeout:             "The test did not finish in time: check that the peer is up and reachable, that the link is not flapping, and that PFC/ECN are configured the same on both ends.",
	ReasonNoDevice:            "No usable RDMA device was found: check `ibv_devices` / `rdma link` on the node, that the driver (mlx5_ib) is loaded, and that the device names in the plan match the node.",
	ReasonGIDIndex:            "The queue pair could not connect, which on RoCE almost always means a wrong GID index: run `show_gids` (or `roce_gid_info`) on both nodes, pick the RoCE v2 entry with the IPv4 address (often index 3), and set it as the GID index in the plan.",
	ReasonRetryExceeded:       "Packets to the peer were lost until the retry limit ran out: check the cable and switch port (link errors, flaps), MTU on both ends, and that PFC is enabled on the RoCE priority along the whole path.",
	ReasonWrongResults:        "The collective returned wrong data: this points to a faulty GPU, NIC or PCIe path, or mismatched NCCL/driver versions; run the test on each node alone to find the bad one.",
	ReasonBelowThreshold:      "Bandwidth was below the expected minimum: check the link speed and width (`ethtool`, `ibstat`), PCIe link status, PFC pause counters, and that nothing else was using the link.",
	ReasonRegression:          "Bandwidth dropped compared with this link's own history: look for new link errors, a changed cable or switch port, firmware or driver changes, or congestion on the path.",
	ReasonExecError:           "The test program failed to run or printed no result: run the same command by hand on the node and read its error output (missing binary, wrong flags, CUDA or MPI problems).",
	ReasonQPConnectTimeout:    "The queue pair could not reach the peer (ibv_modify_qp: Connection timed out, errno 110). On RoCE that step resolves the peer from the GID each side chose, so check the GID index first: on each node `show_gids` (or roce_gid_info) must show the index NCCL used as the RoCE v2 entry holding that node's compute IPv4. The index is per node (an extra IPv6 or VLAN address shifts it): an NCCL_IB_GID_INDEX forced on every rank (probes.nccl.env, the job environment) fails on a node whose table differs, so unset it (NCCL 2.21 and later pick the RoCE v2 GID themselves) or set it per node (probes.nccl.node_env). Then the compute network: on both nodes check the peer's entry on the compute interface with `ip neigh show dev <interface>` (REACHABLE is good, FAILED or INCOMPLETE means ARP gets no answer), ping the peer's compute IP from it (`ping -I <interface> <peer compute IP>`), check that both switch ports are in the same VLAN with PFC on the RoCE priority and that a route exists when the peers are in different subnets; on a rail-only fabric also set NCCL_CROSS_NIC=0.",
	ReasonIncompleteOutput:    "The output stops before the test's closing summary (nccl-tests prints \"# Avg bus bandwidth\" at the end): the run was killed, timed out or its log was cut off, so the largest message sizes may be missing. Run it again to the end; if it stops at the same place, read the last lines of the rank that stopped.",
	ReasonWrongPriority:       "The test's RDMA bytes travelled on another priority than the PFC-protected RoCE priority, so RoCE runs lossy there and will drop instead of pausing under congestion: run `roce_exporter doctor` and read roce_dscp_maps_to_pfc_priority (the DSCP to priority map: `mlnx_qos -i <if> --dscp2prio set,26,3`) and default_traffic_class (the traffic class RDMA is marked with: NCCL_IB_TC=106, or /sys/class/infiniband/<dev>/tc/1/traffic_class).",
	ReasonSocketFallback:      "NCCL moved data between nodes over TCP sockets (its log says NET/Socket or \"Using network Socket\"), not RDMA: a small job can still meet the floor, a real one will not. Look for the reason above those lines in the probe's NCCL_DEBUG=INFO output: \"NET/IB : No device found\" (RDMA stack or libibverbs missing in the environment mpirun starts, or NCCL_IB_HCA names no usable device), NCCL_IB_DISABLE=1 or NCCL_NET=Socket set somewhere, or a container without /dev/infiniband. `ibv_devinfo` on each node must list the HCAs as PORT_ACTIVE.",
	ReasonNoGDRDMA:            "NCCL used RDMA, but the ranks of a node whose GPUs and NICs share a PCIe switch (PIX or PXB, where NCCL uses GPUDirect RDMA by default) used none (no \"/GDRDMA\" on their \"via NET/...\" lines): every transfer was staged through host memory. On that node load the peer-memory module (`modprobe nvidia_peermem`; `lsmod | grep peermem` must list it) or meet the DMA-BUF conditions (open GPU kernel modules, driver 515 or newer, Linux 5.12 or newer); NCCL's \"GPU Direct RDMA Disabled for HCA\" lines mean it found neither. Check that NCCL_NET_GDR_LEVEL is not set below PXB and NCCL_DMABUF_ENABLE not to 0 in the job environment, and that ACS is off on the switch ports between the GPU and the NIC (`roce_exporter doctor`). GPUDirect off on boards whose NICs hang off the CPU (PHB, NODE, SYS) is NCCL's design, not this failure.",
	ReasonSwitchNoPFC:         "Under an incast the switch dropped RoCE packets instead of pausing the senders: PFC is not on for the RoCE priority on the switch ports towards the receiver (or on every hop), or its headroom is too small for the cable. On the switch, enable PFC on the RoCE priority (the plan's pfc_priority) on every port of the path, trust DSCP and map the RoCE DSCP to that priority, e.g. Cumulus `nv set qos roce mode lossless`, SONiC `pfc_enable` on the port's PORT_QOS_MAP, Arista `priority-flow-control priority <p> no-drop`. A sender's own result shows whether the switch paused it on another priority (pfc_on_wrong_priority).",
	ReasonSwitchNoECN:         "Under an incast the switch marked no RoCE packet (no ECN CE bits, so the receiver sent no CNP and DCQCN never slowed the senders): the fabric stays lossless only through PFC pauses, which spread congestion to other flows. On the switch, enable ECN (WRED/ECN marking) on the RoCE queue with thresholds below the PFC threshold, e.g. Cumulus `nv set qos roce mode lossless` (ECN included), SONiC `ecn_mode: ecn_all` in the queue's WRED profile, Arista `random-detect ecn` on the traffic class.",
	ReasonPFCOnWrongPriority:  "The switch paused a sender on another priority than the RoCE priority: its PFC, or its DSCP-to-priority map, protects a class RoCE does not travel on, so RoCE is dropped under congestion while an idle class is paused. Make the switch map the RoCE DSCP (expectations.roce_dscp) to the plan's pfc_priority and enable PFC on exactly that priority; on the host, `roce_exporter doctor` checks the same map (roce_dscp_maps_to_pfc_priority).",
	ReasonHostECNOff:          "The switch marked RoCE packets but a host's DCQCN did not act: the receiving NIC sent no CNP (notification point off) or a sender ignored the CNPs it got (reaction point off). Enable both on the RoCE priority on every node: MLNX_OFED `echo 1 > /sys/class/net/<if>/ecn/roce_np/enable/<p>` and `.../roce_rp/enable/<p>`, lasting across reboots with `mlxconfig -d <dev> set ROCE_CC_PRIO_MASK_P1=255`; `roce_exporter doctor` checks it (ecn_enabled).",
	ReasonIncastReceiverDrops: "The receiving NIC dropped packets for lack of buffer under an incast instead of pausing the switch: PFC is off on its RoCE priority, its receive buffer has no headroom for the cable, or the host (PCIe, memory) cannot take line rate. Run `roce_exporter doctor` on the receiver (pfc_enabled_on_roce_priority, no_packet_discards, pcie_bandwidth_sufficient) and check `mlnx_qos -i <if>`.",
	ReasonNotToolOutput:       "Nothing in the output is the probe program's own (no perftest banner or table, no nccl-tests header or summary, no NCCL or mpirun log line): it is another file or another program's output. For `probe parse`, give it the saved output of ib_write_bw, ib_write_lat or all_reduce_perf; for a scheduled probe, check that the plan's command (probes.ib_write_bw.command, probes.nccl.command) is that program and not a wrapper that prints something else.",
	ReasonParseError:          "Could not parse the probe output: it holds no result table this version can read, or a number in it is impossible (above any port's rate). Check that it is the complete, unedited output of the program this probe kind names (ib_write_bw, ib_write_lat or all_reduce_perf, as text or its JSON file) and that nothing else was written into it.",
}

// Hint returns a one-line, beginner-friendly next step for a failure reason,
// or "" for an unknown reason or for success.
func Hint(reason string) string {
	return hints[reason]
}
