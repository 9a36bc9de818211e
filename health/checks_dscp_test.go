package health

import (
	"testing"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/node"
)

func TestDSCPChecks(t *testing.T) {
	const nd = "ens2f0np0"
	runCases(t, []checkCase{
		{name: "26 on 3", id: "roce_dscp_maps_to_pfc_priority", subject: nd, want: StatusOK, msg: []string{"DSCP 26 maps to priority 3"}},
		{name: "26 on 0", snap: func(s *node.Snapshot) { s.DCB[nd].DSCP.Set(26, 0) },
			id: "roce_dscp_maps_to_pfc_priority", subject: nd, want: StatusFail,
			msg: []string{"DSCP 26 maps to priority 0", "PFC protects priority 3", "DSCP 24, 25, 27, 28, 29, 30, 31"},
			fix: []string{"mlnx_qos -i ens2f0np0 --dscp2prio set,26,3", "dcb app replace dev ens2f0np0 dscp-prio 26:3", "systemd"}},
		{name: "26 unmapped", snap: func(s *node.Snapshot) { s.DCB[nd].DSCP.Mapped[26] = false },
			id: "roce_dscp_maps_to_pfc_priority", subject: nd, want: StatusFail, msg: []string{"no entry", "priority 0"}},
		{name: "plan DSCP 34 lands on 4", plan: func(p *config.Plan) { p.Expectations.RoCEDSCP = intp(34) },
			id: "roce_dscp_maps_to_pfc_priority", subject: nd, want: StatusFail, msg: []string{"DSCP 34 maps to priority 4"}, fix: []string{"set,34,3"}},
		{name: "PFC off on the mapped priority", snap: func(s *node.Snapshot) { s.DCB[nd].PFCEnabled = [8]bool{} },
			id: "roce_dscp_maps_to_pfc_priority", subject: nd, want: StatusOK, msg: []string{"see pfc_enabled_on_roce_priority"}},
		{name: "map unreadable", snap: func(s *node.Snapshot) { s.DCB[nd].DSCP = nil },
			id: "roce_dscp_maps_to_pfc_priority", subject: nd, want: StatusSkipped},
		{name: "lossy by design", plan: func(p *config.Plan) { p.Expectations.PFCPriority = nil },
			id: "roce_dscp_maps_to_pfc_priority", subject: "node", want: StatusSkipped},
		{name: "pcp trust, untagged", plan: func(p *config.Plan) { p.Expectations.Trust = config.TrustPCP },
			snap: func(s *node.Snapshot) { s.DCB[nd].Trust, s.DCB[nd].DSCP = "pcp", nil },
			id:   "roce_dscp_maps_to_pfc_priority", subject: nd, want: StatusFail, msg: []string{"untagged", "priority 0"}, fix: []string{"NCCL_IB_SL=3", "`egress-qos-map 2:3`", "never `0:3`"}, notFix: []string{"type vlan id 100 egress-qos-map"}},
		{name: "pcp trust, on a VLAN", plan: func(p *config.Plan) { p.Expectations.Trust = config.TrustPCP },
			snap: func(s *node.Snapshot) {
				s.DCB[nd].Trust, s.DCB[nd].DSCP = "pcp", nil
				port(s, 1).GIDs = gids(nd+".100", railIP(1), 3)
			},
			id: "roce_dscp_maps_to_pfc_priority", subject: nd, want: StatusOK, msg: []string{"tagged on ens2f0np0.100", "NCCL_IB_SL=3"}},

		{name: "48 on 6", id: "cnp_dscp_priority", subject: nd, want: StatusOK, msg: []string{"DSCP 48 maps to priority 6", "queue of its own"}},
		{name: "CNP on priority 0", snap: func(s *node.Snapshot) { s.DCB[nd].DSCP.Set(48, 0) },
			id: "cnp_dscp_priority", subject: nd, want: StatusFail, msg: []string{"priority 0", "best-effort"}, fix: []string{"--dscp2prio set,48,6"}},
		{name: "CNP on the RoCE priority", snap: func(s *node.Snapshot) { s.DCB[nd].DSCP.Mapped[48], s.DCB[nd].DSCP.Prio[48] = true, 3 },
			id: "cnp_dscp_priority", subject: nd, want: StatusOK, msg: []string{"lossless"}},
		{name: "NIC sends another CNP DSCP", snap: func(s *node.Snapshot) { s.DCB[nd].CNPDSCP = intp(0) },
			id: "cnp_dscp_priority", subject: nd, want: StatusWarn, msg: []string{"CNPs with DSCP 0"}, fix: []string{"echo 48 > /sys/class/net/ens2f0np0/ecn/roce_np/cnp_dscp"}},
		{name: "pcp trust from cnp_802p_prio", snap: func(s *node.Snapshot) {
			s.DCB[nd].Trust, s.DCB[nd].DSCP, s.DCB[nd].CNPPrio = "pcp", nil, intp(0)
		}, id: "cnp_dscp_priority", subject: nd, want: StatusFail, msg: []string{"cnp_802p_prio"}},
		{name: "CNP priority unknown", snap: func(s *node.Snapshot) { s.DCB[nd].DSCP, s.DCB[nd].CNPPrio = nil, nil },
			id: "cnp_dscp_priority", subject: nd, want: StatusSkipped},

		{name: "106", id: "default_traffic_class", subject: "mlx5_1", want: StatusOK, msg: []string{"device traffic class 106 (DSCP 26)"}},
		{name: "device class DSCP 0", snap: func(s *node.Snapshot) { port(s, 1).TrafficClass = intp(0) },
			id: "default_traffic_class", subject: "mlx5_1", want: StatusFail, msg: []string{"traffic class is 0 (DSCP 0)", "plan's RoCE DSCP is 26"},
			fix: []string{"echo 106 > /sys/class/infiniband/mlx5_1/tc/1/traffic_class", "NCCL_IB_TC=106"}},
		{name: "device class unset", snap: func(s *node.Snapshot) { port(s, 1).TrafficClass = nil },
			id: "default_traffic_class", subject: "mlx5_1", want: StatusWarn, msg: []string{"no device traffic class"}},
		{name: "rdma_cm ToS wrong", snap: func(s *node.Snapshot) { port(s, 1).DefaultRoCETOS = intp(0) },
			id: "default_traffic_class", subject: "mlx5_1", want: StatusWarn, msg: []string{"rdma_cm default ToS is 0"}, fix: []string{"cma_roce_tos -d mlx5_1 -p 1 -t 106"}},
		{name: "rdma_cm ToS right", snap: func(s *node.Snapshot) {
			port(s, 1).TrafficClass, port(s, 1).TrafficClassFile, port(s, 1).DefaultRoCETOS = nil, false, intp(106)
		},
			id: "default_traffic_class", subject: "mlx5_1", want: StatusOK, msg: []string{"rdma_cm default ToS 106"}},
		{name: "upstream kernel", snap: func(s *node.Snapshot) { port(s, 1).TrafficClass, port(s, 1).TrafficClassFile = nil, false },
			id: "default_traffic_class", subject: "mlx5_1", want: StatusSkipped, msg: []string{"NCCL_IB_TC=106"}},

		{name: "TC from the plan", id: "nccl_env", subject: "node", want: StatusOK, msg: []string{"NCCL_IB_GID_INDEX=3 NCCL_IB_TC=106 NCCL_IB_FIFO_TC=106"}, notMsg: []string{"NCCL_IB_SL"}},
		{name: "pcp trust adds SL", plan: func(p *config.Plan) { p.Expectations.Trust = config.TrustPCP },
			id: "nccl_env", subject: "node", want: StatusOK, msg: []string{"NCCL_IB_TC=106 NCCL_IB_FIFO_TC=106 NCCL_IB_SL=3"}},
		{name: "no plan, no TC", noPlan: true, id: "nccl_env", subject: "node", want: StatusOK, notMsg: []string{"NCCL_IB_TC"}},
		{name: "infiniband SL", snap: makeIB, plan: func(p *config.Plan) {
			p.Expectations.LinkLayer, p.Expectations.RoCEDSCP, p.Expectations.IBServiceLevel = config.LinkLayerInfiniBand, nil, intp(5)
		}, id: "nccl_env", subject: "node", want: StatusOK, msg: []string{"NCCL_IB_SL=5"}, notMsg: []string{"NCCL_IB_TC", "NCCL_IB_FIFO_TC"}},

		{name: "bytes on 3 since boot", id: "rdma_bytes_on_roce_priority", subject: nd, want: StatusOK, msg: []string{"on priority 3 since the counters started"}},
		{name: "bytes on 0 since boot", snap: func(s *node.Snapshot) {
			st := s.Ethtool[nd]
			setEth(st, node.FamilyPriorityBytes, "tx", 0, "", 4_500_000_000)
			setEth(st, node.FamilyPriorityBytes, "tx", 3, "", 1000)
		}, id: "rdma_bytes_on_roce_priority", subject: nd, want: StatusWarn,
			msg: []string{"tx: RDMA moved 4.1 GiB since the counters started", "priority 0 carried 4.2 GiB", "history"}, notMsg: []string{"rx:"}, fix: []string{"NCCL_IB_TC=106", "--tclass=106"}},
		{name: "interval on 0 because the map sends DSCP 26 there", prev: func(prev, cur *node.Snapshot) {
			cur.DCB[nd].DSCP = dscpMap(map[int]int{26: 0})
			setCounter(&port(cur, 1).Counters, "port_xmit_data", 1_100_000_000+2_500_000_000)
			setEth(cur.Ethtool[nd], node.FamilyPriorityBytes, "tx", 0, "", 80_000_000+10_100_000_000)
		}, id: "rdma_bytes_on_roce_priority", subject: nd, want: StatusFail, msg: []string{"in the last interval", "sends DSCP 26 to priority 0", "the map is the cause"},
			fix: []string{"--dscp2prio set,26,3", "dcb app replace dev " + nd + " dscp-prio 26:3"}, notFix: []string{"NCCL_IB_TC"}},
		{name: "history on 3 while the map now sends DSCP 26 to 0", snap: func(s *node.Snapshot) { s.DCB[nd].DSCP = dscpMap(map[int]int{26: 0}) },
			id: "rdma_bytes_on_roce_priority", subject: nd, want: StatusOK, msg: []string{"on priority 3 since the counters started", "that is history", "sends DSCP 26 to priority 0"}},
		{name: "interval on 0 although the totals look fine", prev: func(prev, cur *node.Snapshot) {
			// 10 GB of RDMA in the interval, all of it counted on priority 0.
			setCounter(&port(cur, 1).Counters, "port_xmit_data", 1_100_000_000+2_500_000_000)
			setEth(cur.Ethtool[nd], node.FamilyPriorityBytes, "tx", 0, "", 80_000_000+10_100_000_000)
		}, id: "rdma_bytes_on_roce_priority", subject: nd, want: StatusFail, msg: []string{"in the last interval", "priority 0 carried 9.4 GiB"}},
		{name: "interval on 3", prev: func(prev, cur *node.Snapshot) {
			setCounter(&port(cur, 1).Counters, "port_xmit_data", 1_100_000_000+2_500_000_000)
			setEth(cur.Ethtool[nd], node.FamilyPriorityBytes, "tx", 3, "", 4_500_000_000+10_100_000_000)
		}, id: "rdma_bytes_on_roce_priority", subject: nd, want: StatusOK, msg: []string{"in the last interval"}},
		{name: "idle port", snap: func(s *node.Snapshot) {
			setCounter(&port(s, 1).Counters, "port_xmit_data", 1000)
			setCounter(&port(s, 1).Counters, "port_rcv_data", 1000)
		}, id: "rdma_bytes_on_roce_priority", subject: nd, want: StatusOK, msg: []string{"too little RDMA traffic"}},
		{name: "no priority counters", snap: func(s *node.Snapshot) { dropEth(s.Ethtool[nd], node.FamilyPriorityBytes) },
			id: "rdma_bytes_on_roce_priority", subject: nd, want: StatusSkipped},
	})
}

// TestRDMABytesOnRoCELAG: a RoCE LAG port's frames are counted by the bond's slaves,
// whose per-priority bytes add up.
func TestRDMABytesOnRoCELAG(t *testing.T) {
	lag := func(slaveTX3 uint64) func(s *node.Snapshot) {
		return func(s *node.Snapshot) {
			makeLAG(s)
			s.DCB["bond0"] = s.DCB["ens1f0np0"]
			st := s.Ethtool["ens1f0np0"]
			setEth(st, node.FamilyPriorityBytes, "tx", 3, "", slaveTX3)
			setEth(st, node.FamilyPriorityBytes, "tx", 0, "", 2_300_000_000-slaveTX3)
			setEth(st, node.FamilyPriorityBytes, "rx", 3, "", 2_100_000_000)
			s.Ethtool["ens1f1np1"] = &node.EthtoolStats{Interface: "ens1f1np1", Values: []node.EthtoolValue{
				{Family: node.FamilyPriorityBytes, Direction: "tx", Priority: 0, Value: 2_300_000_000 - slaveTX3},
				{Family: node.FamilyPriorityBytes, Direction: "tx", Priority: 3, Value: slaveTX3},
				{Family: node.FamilyPriorityBytes, Direction: "rx", Priority: 3, Value: 2_100_000_000},
			}}
		}
	}
	runCases(t, []checkCase{
		{name: "both slaves on 3", noPlan: true, snap: lag(2_300_000_000), id: "rdma_bytes_on_roce_priority", subject: "bond0", want: StatusOK,
			msg: []string{"tx 4.1 GiB of RDMA, 4.3 GiB on priority 3"}},
		{name: "both slaves on 0", noPlan: true, snap: lag(0), id: "rdma_bytes_on_roce_priority", subject: "bond0", want: StatusWarn,
			msg: []string{"tx: RDMA moved 4.1 GiB", "priority 0 carried 4.3 GiB", "history"}, notMsg: []string{"rx:"}},
		{name: "slave without statistics", noPlan: true, snap: func(s *node.Snapshot) { lag(0)(s); delete(s.Ethtool, "ens1f1np1") },
			id: "rdma_bytes_on_roce_priority", subject: "bond0", want: StatusSkipped},
	})
}

// rt_tos2priority as the kernel has it: RoCE's ToS 106 (DSCP 26, ECT(0))
// is socket priority 2 (bulk), not 0, so mapping 0 would move everything else.
func TestRtTOS2Priority(t *testing.T) {
	for tos, want := range map[int]int{0: 0, 106: 2, 0x10: 6, 0x08: 2, 0x18: 4, 0xb8: 4} {
		if got := rtTOS2Priority(tos); got != want {
			t.Errorf("rtTOS2Priority(%#x) = %d, want %d", tos, got, want)
		}
	}
}

// nccl_env's fix names the checks to fix, and the root one when the check
// its message points to is skipped for the port (a port that is down has
// no GID to judge).
func TestNCCLEnvFixNamesTheChecks(t *testing.T) {
	runCases(t, []checkCase{
		{name: "port down", snap: func(s *node.Snapshot) {
			p := port(s, 1)
			p.State, p.GIDs = 1, nil
		}, id: "nccl_env", subject: "node", want: StatusWarn, msg: []string{"(see port_active: the port is down)"},
			fix: []string{"fix what port_active report(s)"}, notFix: []string{"named in the message", "roce_v2_gid_present"}},
		{name: "GID missing on an up port", snap: func(s *node.Snapshot) { port(s, 1).GIDs = nil },
			id: "nccl_env", subject: "node", want: StatusWarn, fix: []string{"fix what roce_v2_gid_present report(s)"}},
		{name: "healthy", id: "nccl_env", subject: "node", want: StatusOK},
	})
}

// Without a plan the DSCP map is judged against RoCE's usual setup, and the
// finding says that these are defaults.
func TestDSCPWithoutPlanUsesDefaults(t *testing.T) {
	nd := "ens2f0np0"
	runCases(t, []checkCase{
		{name: "default map", noPlan: true, id: "roce_dscp_maps_to_pfc_priority", subject: nd, want: StatusOK,
			msg: []string{"DSCP 26 maps to priority 3, the PFC priority", "no plan: judged against the usual RoCE setup"}},
		{name: "26 sent to 0", noPlan: true, snap: func(s *node.Snapshot) { s.DCB[nd].DSCP = dscpMap(map[int]int{26: 0}) },
			id: "roce_dscp_maps_to_pfc_priority", subject: nd, want: StatusFail, msg: []string{"DSCP 26 maps to priority 0", "no plan"},
			fix: []string{"--dscp2prio set,26,3"}},
		{name: "PFC on two priorities", noPlan: true, snap: func(s *node.Snapshot) { s.DCB[nd].PFCEnabled[5] = true },
			id: "roce_dscp_maps_to_pfc_priority", subject: nd, want: StatusSkipped, msg: []string{"several", "expectations.pfc_priority"}},
		{name: "CNPs on the lossy queue", noPlan: true, snap: func(s *node.Snapshot) {
			s.DCB[nd].DSCP = dscpMap(map[int]int{48: 0})
			s.DCB[nd].CNPDSCP = nil
		}, id: "cnp_dscp_priority", subject: nd, want: StatusFail, msg: []string{"DSCP 48 maps to priority 0", "no plan"}},
		{name: "CNPs at home", noPlan: true, id: "cnp_dscp_priority", subject: nd, want: StatusOK},
		{name: "device traffic class off the default", noPlan: true, snap: func(s *node.Snapshot) { port(s, 1).TrafficClass = intp(0) },
			id: "default_traffic_class", subject: "mlx5_1", want: StatusFail, msg: []string{"traffic class 106", "no plan"}},
	})
}

func TestDSCPWithoutPlanPFCOnBestEffort(t *testing.T) {
	nd := "ens2f0np0"
	runCases(t, []checkCase{
		{name: "PFC only on 0", noPlan: true, snap: func(s *node.Snapshot) {
			s.DCB[nd].PFCEnabled[3], s.DCB[nd].PFCEnabled[0] = false, true
		}, id: "roce_dscp_maps_to_pfc_priority", subject: nd, want: StatusSkipped, msg: []string{"best-effort", "expectations.pfc_priority"}},
	})
}

// A plan's other RDMA class (storage on priority 4) moves RDMA bytes on its
// own priority: those are the class's, not RoCE gone astray; bytes on a
// priority of no class still fail, and without the class in the plan the
// same bytes on 4 fail. PFC on the class's priority is planned, and the PFC
// fix keeps it.
func TestOtherRDMAClassInThePlan(t *testing.T) {
	const nd = "ens2f0np0"
	storage := func(p *config.Plan) {
		p.Expectations.OtherRDMAClasses = []config.RDMAClass{{Name: "storage", Priority: 4}}
	}
	// 10 GB of RDMA in the interval, all of it counted on priority prio.
	onPriority := func(prio int) func(prev, cur *node.Snapshot) {
		return func(prev, cur *node.Snapshot) {
			setCounter(&port(cur, 1).Counters, "port_xmit_data", 1_100_000_000+2_500_000_000)
			setEth(cur.Ethtool[nd], node.FamilyPriorityBytes, "tx", prio, "", 10_100_000_000)
		}
	}
	pfcOn := func(prios ...int) func(s *node.Snapshot) {
		return func(s *node.Snapshot) {
			s.DCB[nd].PFCEnabled = [8]bool{}
			for _, p := range prios {
				s.DCB[nd].PFCEnabled[p] = true
			}
		}
	}
	runCases(t, []checkCase{
		{name: "interval on the storage class's priority", plan: storage, prev: onPriority(4),
			id: "rdma_bytes_on_roce_priority", subject: nd, want: StatusOK, msg: []string{"in the last interval", "on storage's priority 4"}},
		{name: "interval on 4 without the class in the plan", prev: onPriority(4),
			id: "rdma_bytes_on_roce_priority", subject: nd, want: StatusFail, msg: []string{"in the last interval", "priority 4 carried 9.4 GiB"}},
		{name: "interval on a priority of no class", plan: storage, prev: onPriority(5),
			id: "rdma_bytes_on_roce_priority", subject: nd, want: StatusFail,
			msg: []string{"the RoCE priority 3 and the plan's other RDMA classes (storage on 4) only", "priority 5 carried 9.4 GiB"}},
		{name: "interval on 3 with the class idle", plan: storage, prev: onPriority(3),
			id: "rdma_bytes_on_roce_priority", subject: nd, want: StatusOK, msg: []string{"in the last interval"}, notMsg: []string{"storage"}},

		{name: "PFC on the class's priority is planned", plan: storage, snap: pfcOn(3, 4),
			id: "pfc_only_on_roce_priority", subject: nd, want: StatusOK, msg: []string{"other RDMA classes on 4 (storage)"}},
		{name: "PFC on 4 without the class", snap: pfcOn(3, 4),
			id: "pfc_only_on_roce_priority", subject: nd, want: StatusWarn, msg: []string{"PFC is also on for priority 4"}},
		{name: "PFC on the class and on 5", plan: storage, snap: pfcOn(3, 4, 5),
			id: "pfc_only_on_roce_priority", subject: nd, want: StatusWarn, msg: []string{"PFC is also on for priority 5", "(storage)"},
			fix: []string{"--pfc 0,0,0,1,1,0,0,0", "prio-pfc all:off 3:on 4:on"}},
		{name: "the PFC fix keeps the class's PFC", plan: storage, snap: pfcOn(4),
			id: "pfc_enabled_on_roce_priority", subject: nd, want: StatusFail, fix: []string{"--pfc 0,0,0,1,1,0,0,0", "prio-pfc all:off 3:on 4:on"}},
		{name: "the PFC fix without a class", snap: pfcOn(4),
			id: "pfc_enabled_on_roce_priority", subject: nd, want: StatusFail, fix: []string{"--pfc 0,0,0,1,0,0,0,0", "prio-pfc all:off 3:on`"}},
	})
}
