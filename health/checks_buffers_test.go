package health

import (
	"testing"

	"github.com/roce-exporter/roce_exporter/node"
)

// roceBuffers gives every rail the split of the production ConnectX-7 in
// the research captures (mlnx_qos -i ens4np0, MLNX_OFED 23.10): the RoCE
// priority alone in buffer 1 of 220,896 bytes, the rest in buffer 0, cable
// length 7 m, ETS with RoCE's class strict.
func roceBuffers(s *node.Snapshot) {
	for _, d := range s.DCB {
		d.PFCDelay = 7
		d.Buffer = &node.ReceiveBuffer{Size: [8]uint32{19872, 220896}, TotalSize: 4151520, PriorityBuffer: [8]uint8{0, 0, 0, 1, 0, 0, 0, 0}}
		d.ETS = &node.ETSState{PrioTC: [8]uint8{0, 1, 2, 3, 4, 5, 6, 7},
			TSA:              [8]string{"ets", "ets", "ets", "strict", "strict", "strict", "strict", "strict"},
			BandwidthPercent: [8]uint8{10, 10, 80}}
	}
}

func withBuffers(edit func(d *node.DCBState, i *node.Interface)) func(s *node.Snapshot) {
	return func(s *node.Snapshot) {
		roceBuffers(s)
		if edit != nil {
			edit(s.DCB[netdevName(1)], s.Interfaces[netdevName(1)])
		}
	}
}

func TestBufferIsolationCheck(t *testing.T) {
	const id = "pfc_buffer_no_lossy_priority"
	runCases(t, []checkCase{
		{name: "RoCE alone in its buffer", snap: withBuffers(nil), id: id, subject: netdevName(1), want: StatusOK,
			msg: []string{"only PFC priorities in the lossless buffer 1 (priority 3)"}},
		{name: "everything in buffer 0 with PFC on 3", snap: withBuffers(func(d *node.DCBState, _ *node.Interface) {
			d.Buffer.PriorityBuffer = [8]uint8{}
		}), id: id, subject: netdevName(1), want: StatusFail,
			msg: []string{"receive buffer 0 holds PFC priority 3 and lossy priority 0, 1, 2, 4, 5, 6, 7", "paused together with RoCE"},
			fix: []string{"mlnx_qos -i ens2f0np0 --prio2buffer 0,0,0,1,0,0,0,0", "dcb buffer set dev ens2f0np0 prio-buffer all:0 3:1", "Firmware controlled"}},
		{name: "other rail unaffected", snap: withBuffers(func(d *node.DCBState, _ *node.Interface) {
			d.Buffer.PriorityBuffer = [8]uint8{}
		}), id: id, subject: netdevName(0), want: StatusOK},
		{name: "two PFC priorities share a buffer: both lossless", snap: withBuffers(func(d *node.DCBState, _ *node.Interface) {
			d.PFCEnabled[5] = true
			d.Buffer.PriorityBuffer[5] = 1
		}), id: id, subject: netdevName(1), want: StatusOK, msg: []string{"buffer 1 (priority 3, 5)"}},
		{name: "PFC off everywhere", snap: withBuffers(func(d *node.DCBState, _ *node.Interface) {
			d.PFCEnabled = [8]bool{}
		}), id: id, subject: netdevName(1), want: StatusSkipped, msg: []string{"PFC is off on every priority"}},
		{name: "no buffer object", snap: func(s *node.Snapshot) { s.DCB[netdevName(1)].Buffer = nil }, id: id, subject: netdevName(1), want: StatusSkipped, msg: []string{"no receive-buffer split", "dcb buffer show dev ens2f0np0"}},
		{name: "PFC unknown", snap: withBuffers(func(d *node.DCBState, _ *node.Interface) { d.PFCKnown = false }),
			id: id, subject: netdevName(1), want: StatusSkipped, msg: []string{"PFC state of ens2f0np0 is unknown"}},
	})
}

func TestPFCHeadroomCheck(t *testing.T) {
	const id = "pfc_headroom_sufficient"
	runCases(t, []checkCase{
		// (301 + 15) x 400 + 24480 = 150,880; + 9,216 = 160,096 <= 220,896.
		{name: "production buffer at 400G, 7 m", snap: withBuffers(nil), id: id, subject: netdevName(1), want: StatusOK,
			msg: []string{"buffer 1 (PFC priority 3) is 220,896 bytes", "150,880 bytes of headroom", "160,096 bytes", "7 m is the driver's default"}},
		{name: "30 m of cable", snap: withBuffers(func(d *node.DCBState, _ *node.Interface) { d.PFCDelay = 30 }),
			id: id, subject: netdevName(1), want: StatusOK, msg: []string{"170,480 bytes of headroom"}, notMsg: []string{"default"}},
		{name: "buffer too small for 400G", snap: withBuffers(func(d *node.DCBState, _ *node.Interface) {
			d.Buffer.Size[1] = 130944
		}), id: id, subject: netdevName(1), want: StatusFail,
			msg: []string{"buffer 1 (PFC priority 3) is 130,944 bytes, too small", "160,096 bytes", "rx_discards_phy"},
			fix: []string{"mlnx_qos -i ens2f0np0 --buffer_size 19872,160096,0,0,0,0,0,0", "4,151,520 bytes", "--cable_len=<metres>"}},
		// The same buffer suffices at 100 Gb/s: (316) x 100 + 24480 + 9216 = 65,296.
		{name: "same buffer at 100G", snap: withBuffers(func(d *node.DCBState, i *node.Interface) {
			d.Buffer.Size[1] = 130944
			i.SpeedMbps = 100000
		}), id: id, subject: netdevName(1), want: StatusOK, msg: []string{"65,296 bytes"}},
		// The driver counts at least 40 Gb/s.
		{name: "25G counted as 40G", snap: withBuffers(func(d *node.DCBState, i *node.Interface) {
			d.Buffer.Size[1] = 25000
			i.SpeedMbps, i.MTU = 25000, 1500
		}), id: id, subject: netdevName(1), want: StatusFail, msg: []string{"× 40 +", "25,936 bytes"}},
		{name: "lossy buffer sizes are not judged", snap: withBuffers(func(d *node.DCBState, _ *node.Interface) {
			d.Buffer.Size[0] = 1
		}), id: id, subject: netdevName(1), want: StatusOK},
		{name: "not mlx5", snap: withBuffers(func(_ *node.DCBState, i *node.Interface) { i.Driver = "bnxt_en" }),
			id: id, subject: netdevName(1), want: StatusSkipped, msg: []string{"mlx5's", "bnxt_en"}},
		{name: "link down", snap: withBuffers(func(_ *node.DCBState, i *node.Interface) { i.SpeedMbps = -1 }),
			id: id, subject: netdevName(1), want: StatusSkipped, msg: []string{"speed of ens2f0np0 is unknown"}},
	})
}

func TestETSShareCheck(t *testing.T) {
	const id = "ets_share_for_roce"
	ets := func(tsa [8]string, bw [8]uint8) func(d *node.DCBState, _ *node.Interface) {
		return func(d *node.DCBState, _ *node.Interface) { d.ETS.TSA, d.ETS.BandwidthPercent = tsa, bw }
	}
	allETS := [8]string{"ets", "ets", "ets", "ets", "ets", "ets", "ets", "ets"}
	runCases(t, []checkCase{
		{name: "RoCE strict, CNPs strict", snap: withBuffers(nil), id: id, subject: netdevName(1), want: StatusOK,
			msg: []string{"RoCE priority 3 is in traffic class 3, strict priority", "CNPs (priority 6) in traffic class 6 (strict)"}},
		{name: "RoCE with half the link", snap: withBuffers(ets(allETS, [8]uint8{10, 10, 10, 50, 10, 0, 10, 0})),
			id: id, subject: netdevName(1), want: StatusOK, msg: []string{"ETS share of 50%", "CNPs (priority 6) in traffic class 6 (ets)"}},
		{name: "RoCE with no share", snap: withBuffers(ets(allETS, [8]uint8{50, 0, 50, 0, 0, 0, 0, 0})),
			id: id, subject: netdevName(1), want: StatusFail, msg: []string{"ETS share of 0%: it gets only the bandwidth the other classes leave", "CNPs (priority 6) in traffic class 6 with an ETS share of 0%"},
			fix: []string{"mlnx_qos -i ens2f0np0 -s ets,ets,ets,ets,ets,ets,ets,ets --tcbw 25,0,25,50,0,0,0,0", "dcb ets set dev ens2f0np0 tc-tsa 0:ets"}},
		{name: "RoCE with a small share", snap: withBuffers(ets(allETS, [8]uint8{70, 0, 0, 20, 0, 0, 10, 0})),
			id: id, subject: netdevName(1), want: StatusWarn, msg: []string{"RoCE gets 20% of the link"}},
		{name: "CNPs in a class with no share, RoCE fine", snap: withBuffers(func(d *node.DCBState, _ *node.Interface) {
			d.ETS.TSA[6], d.ETS.BandwidthPercent[6] = "ets", 0
		}), id: id, subject: netdevName(1), want: StatusFail, msg: []string{"CNPs (priority 6) in traffic class 6 with an ETS share of 0%"}},
		{name: "CNPs share RoCE's class", snap: withBuffers(func(d *node.DCBState, _ *node.Interface) {
			d.ETS.PrioTC[6] = 3
		}), id: id, subject: netdevName(1), want: StatusOK, msg: []string{"traffic class 3, with RoCE"}},
		{name: "firmware default scheduling", snap: withBuffers(ets([8]string{"vendor", "vendor", "vendor", "vendor", "vendor", "vendor", "vendor", "vendor"}, [8]uint8{})),
			id: id, subject: netdevName(1), want: StatusSkipped, msg: []string{"tsa vendor"}},
		{name: "no ETS read", snap: func(s *node.Snapshot) { s.DCB[netdevName(1)].ETS = nil }, id: id, subject: netdevName(1), want: StatusSkipped, msg: []string{"no ETS configuration"}},
		{name: "no plan, one PFC priority", noPlan: true, snap: withBuffers(ets(allETS, [8]uint8{50, 0, 50, 0, 0, 0, 0, 0})),
			id: id, subject: netdevName(1), want: StatusFail},
		{name: "no plan, PFC on two priorities", noPlan: true, snap: withBuffers(func(d *node.DCBState, _ *node.Interface) { d.PFCEnabled[5] = true }),
			id: id, subject: netdevName(1), want: StatusSkipped, msg: []string{"RoCE priority of ens2f0np0 is unknown"}},
	})
}
