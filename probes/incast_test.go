package probes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/probes/schedule"
)

// incastPlan is a three-node, two-rail plan with the incast on and the
// stand-in perftest; extra is YAML appended under probes.
func incastPlan(t *testing.T, extra string) *config.Plan {
	t.Helper()
	doc := fmt.Sprintf(`
networks:
  management: 10.0.0.0/24
  compute: [192.168.100.0/24, 192.168.101.0/24]
expectations:
  mtu: 9000
  pfc_priority: 3
nodes:
  - name: node01
    management_ip: 10.0.0.11
    interfaces:
      - {netdev: ens1f0np0, rdma_device: mlx5_0, ip: 192.168.100.11/24}
      - {netdev: ens2f0np0, rdma_device: mlx5_1, ip: 192.168.101.11/24}
  - name: node02
    management_ip: 10.0.0.12
    interfaces:
      - {netdev: ens1f0np0, rdma_device: mlx5_0, ip: 192.168.100.12/24}
      - {netdev: ens2f0np0, rdma_device: mlx5_1, ip: 192.168.101.12/24}
  - name: node03
    management_ip: 10.0.0.13
    interfaces:
      - {netdev: ens1f0np0, rdma_device: mlx5_0, ip: 192.168.100.13/24}
      - {netdev: ens2f0np0, rdma_device: mlx5_1, ip: 192.168.101.13/24}
probes:
  enabled: true
  ib_write_bw: {command: %[1]s, timeout: 5s, duration: 1s}
  incast:
    enabled: true
    command: %[1]s
    timeout: 8s
    duration: 1s
%[2]s`, standin(t, "perftest"), extra)
	plan, err := config.Parse("incast.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// fabricSide is how one side's port counters move over an incast on a fabric:
// deltas of hw_counters, of pause frames per priority, of every MAC control
// frame and of the port's buffer drops. The host has PFC on priority 3 only,
// so (as mlx5 does) it shows pause counters for priority 3 alone, unless
// pfcPrios says otherwise.
type fabricSide struct {
	hw         map[string]uint64
	rxPause    map[int]uint64
	txPause    map[int]uint64
	macControl uint64
	phyDrops   uint64
	pfcPrios   []int
}

// fabricNode is node self of incastPlan as a probes.Node whose port counters
// move as side says once perftest has run (the stand-in logs every call to
// $STANDIN_DIR/calls): its data counters 10 GB in the direction of its role
// (a receiver takes in, a sender sends), the others by side's deltas.
type fabricNode struct {
	fakeNode
	dir      string
	side     fabricSide
	self     string
	receiver bool
	// frozen: nothing moves, as on a replayed node.
	frozen bool
}

func newFabricNode(dir, self string, side fabricSide) *fabricNode {
	return &fabricNode{fakeNode: fakeNode{rate: 400e9, gid: 3}, dir: dir, side: side, self: self, receiver: self == "node01"}
}

func (f *fabricNode) Collect(context.Context) (*node.Snapshot, error) {
	_, err := os.Stat(filepath.Join(f.dir, "calls"))
	moved := err == nil && !f.frozen
	s := f.at(time.Now(), 0)
	prios := f.side.pfcPrios
	if prios == nil {
		prios = []int{3}
	}
	host := strings.TrimPrefix(f.self, "node0")
	for i, d := range s.Devices {
		p := d.Ports[0]
		p.GIDs[0].GID = fmt.Sprintf("::ffff:192.168.%d.1%s", 100+i, host)
		if moved {
			for c := range p.Counters {
				if (p.Counters[c].Name == node.CounterPortRcvData) == f.receiver {
					p.Counters[c].Value += 10e9 / node.PMADataWordBytes
				}
			}
		}
		for _, name := range incastHWCounters {
			v := uint64(1000)
			if moved {
				v += f.side.hw[name]
			}
			p.HWCounters = append(p.HWCounters, node.Counter{Name: name, Value: v})
		}
		add := func(v uint64) uint64 {
			if moved {
				return 500 + v
			}
			return 500
		}
		st := &node.EthtoolStats{Interface: p.Interface}
		for _, prio := range prios {
			st.Values = append(st.Values,
				node.EthtoolValue{Family: node.FamilyPFCPauseFrames, Direction: node.DirRX, Priority: prio, Value: add(f.side.rxPause[prio])},
				node.EthtoolValue{Family: node.FamilyPFCPauseFrames, Direction: node.DirTX, Priority: prio, Value: add(f.side.txPause[prio])})
		}
		var pauses uint64
		for _, prio := range prios {
			pauses += f.side.rxPause[prio]
		}
		st.Values = append(st.Values,
			node.EthtoolValue{Family: node.FamilyMACControlFrames, Direction: node.DirRX, Priority: -1, Value: add(pauses + f.side.macControl)},
			node.EthtoolValue{Family: node.FamilyPHYDiscards, Direction: node.DirRX, Priority: -1, Value: add(f.side.phyDrops)})
		// The counted pause frames are MAC control frames too.
		for i := range st.Values {
			if st.Values[i].Family == node.FamilyMACControlFrames {
				st.Values[i].Value += uint64(len(prios)) * 500
			}
		}
		s.Ethtool[p.Interface] = st
	}
	return s, nil
}

// The fabrics: what each side's port counts under a 2:1 incast.
var (
	// PFC and ECN on the RoCE priority: the switch marks and pauses, nothing is lost.
	fabricHealthy = [2]fabricSide{
		{hw: map[string]uint64{hwECNMarked: 480000, hwCNPSent: 21000}},
		{hw: map[string]uint64{hwCNPHandled: 10500}, rxPause: map[int]uint64{3: 3100}},
	}
	// PFC without ECN: paused, never marked.
	fabricNoECN = [2]fabricSide{
		{hw: map[string]uint64{}},
		{hw: map[string]uint64{}, rxPause: map[int]uint64{3: 41000}},
	}
	// Neither: the switch drops; the receiver sees gaps, the senders retransmit.
	fabricNoPFC = [2]fabricSide{
		{hw: map[string]uint64{hwOutOfSequence: 1200}},
		{hw: map[string]uint64{hwPacketSeqErr: 640, hwLocalAckTimeout: 3}},
	}
	// PFC on priority 4 on the switch, RoCE on 3: pause frames for 4, which this
	// host counts only as MAC control frames (its PFC is on 3 only), and drops on 3.
	fabricWrongPriority = [2]fabricSide{
		{hw: map[string]uint64{hwOutOfSequence: 900}},
		{hw: map[string]uint64{hwPacketSeqErr: 500}, macControl: 52000},
	}
	// The same with PFC on 3 and 4 on this host: it counts priority 4's pause
	// frames itself; ECN keeps the queue short, so nothing is lost.
	fabricWrongPriorityCounted = [2]fabricSide{
		{hw: map[string]uint64{hwECNMarked: 480000, hwCNPSent: 21000}, pfcPrios: []int{3, 4}},
		{hw: map[string]uint64{hwCNPHandled: 10500}, rxPause: map[int]uint64{4: 8800}, pfcPrios: []int{3, 4}},
	}
	// The switch marks, the receiving NIC's notification point is off.
	fabricReceiverNPOff = [2]fabricSide{
		{hw: map[string]uint64{hwECNMarked: 480000}},
		{hw: map[string]uint64{}, rxPause: map[int]uint64{3: 3100}},
	}
	// The switch marks, the receiver sends CNPs, the sender's reaction point ignores them.
	fabricSenderRPOff = [2]fabricSide{
		{hw: map[string]uint64{hwECNMarked: 480000, hwCNPSent: 21000}},
		{hw: map[string]uint64{hwCNPIgnored: 21000}, rxPause: map[int]uint64{3: 3100}},
	}
	// The receiving NIC drops for want of buffer (no PFC on the host).
	fabricReceiverNICDrops = [2]fabricSide{
		{hw: map[string]uint64{hwOutOfSequence: 800, hwECNMarked: 480000, hwCNPSent: 21000}, phyDrops: 800},
		{hw: map[string]uint64{hwCNPHandled: 10500}},
	}
)

// runIncastSide runs node self's side of the incast of node02 and node03 into
// node01 on a fabric, with the stand-ins, and returns its two rails' results.
func runIncastSide(t *testing.T, self string, side fabricSide, serverMode string) []*Result {
	t.Helper()
	dir := standinEnv(t, serverMode)
	t.Setenv("STANDIN_SERVER", "serve")
	t.Setenv("STANDIN_SERVE_SECONDS", "0.8")
	s := newTestSchedulerAs(t, incastPlan(t, ""), newFabricNode(dir, self, side), self)
	s.incastHeadStart = 10 * time.Millisecond
	results, err := s.RunIncast(context.Background(), "node01", []string{"node03", "node02"})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 {
		t.Fatalf("%d results, want one per rail: %+v", len(results), results)
	}
	return results
}

// Every verdict, on both sides of the incast: each side fails on what its own
// port counts and is silent (or says it cannot tell) on what only the other
// side sees.
func TestIncastVerdictsBothSides(t *testing.T) {
	type want struct{ reason, skip string }
	pass := want{}
	for _, tc := range []struct {
		name             string
		fabric           [2]fabricSide
		receiver, sender want
	}{
		{"pfc and ecn", fabricHealthy, pass, pass},
		{"pfc without ecn", fabricNoECN, want{reason: ReasonSwitchNoECN}, pass},
		{"no pfc", fabricNoPFC, want{reason: ReasonSwitchNoPFC}, want{reason: ReasonSwitchNoPFC}},
		{"pfc on the wrong priority", fabricWrongPriority, want{reason: ReasonSwitchNoPFC}, want{reason: ReasonPFCOnWrongPriority}},
		{"pfc on the wrong priority, counted there", fabricWrongPriorityCounted, pass, want{reason: ReasonPFCOnWrongPriority}},
		{"receiver's notification point off", fabricReceiverNPOff, want{reason: ReasonHostECNOff}, pass},
		{"sender's reaction point off", fabricSenderRPOff, pass, want{reason: ReasonHostECNOff}},
		{"receiving NIC drops", fabricReceiverNICDrops, want{reason: ReasonIncastReceiverDrops}, pass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for role, w := range map[string]want{"node01": tc.receiver, "node02": tc.sender} {
				side := tc.fabric[0]
				if role != "node01" {
					side = tc.fabric[1]
				}
				for _, res := range runIncastSide(t, role, side, "bw_ok") {
					if res.Skipped || res.Reason != w.reason || res.Success != (w.reason == "") {
						t.Errorf("%s (%s) %s: success %v skipped %v (%s) reason %q, want %q\nwarnings %q\nunseen %q",
							role, res.Incast.Role, res.Device, res.Success, res.Skipped, res.SkipReason, res.Reason, w.reason, res.Warnings, res.Incast.Unseen)
					}
					if res.Reason != "" && (res.Hint == "" || len(res.Warnings) == 0) {
						t.Errorf("%s %s: failure without hint or observed values: %+v", role, res.Device, res)
					}
					if len(res.Incast.Unseen) == 0 {
						t.Errorf("%s: the result does not say what this side could not see", role)
					}
				}
			}
		})
	}
}

// The receiver runs one server per sender and rail on its own port, the
// senders write into theirs with the plan's traffic class and their own GID
// index; both results name the group.
func TestIncastArgvAndResult(t *testing.T) {
	for _, self := range []string{"node01", "node03"} {
		results := runIncastSide(t, self, fabricHealthy[0], "bw_ok")
		b, _ := os.ReadFile(filepath.Join(os.Getenv("STANDIN_DIR"), "calls"))
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		var ports []string
		for _, l := range lines {
			f := strings.Fields(l)
			for i, a := range f {
				if a == "-p" {
					ports = append(ports, f[i+1])
				}
			}
			for _, need := range []string{"--tclass=106", "-x 3", "-D 1", "--report_gbits"} {
				if !strings.Contains(l, need) {
					t.Errorf("%s: %q lacks %s", self, l, need)
				}
			}
		}
		slices.Sort(ports)
		want := []string{"18547", "18548", "18549", "18550"} // 2 rails × 2 senders
		if self == "node03" {
			want = []string{"18548", "18550"} // slot 1 of node02, node03 on each rail
		}
		if !slices.Equal(ports, want) {
			t.Errorf("%s: ports %v, want %v (calls %q)", self, ports, want, lines)
		}
		for _, res := range results {
			in := res.Incast
			if in.Receiver != "node01" || !slices.Equal(in.Senders, []string{"node02", "node03"}) {
				t.Errorf("%s: group %+v", self, in)
			}
			if self == "node01" && (in.Role != IncastReceiver || res.Peer != "node02+node03" || in.SendersConnected != 2 || in.BytesPerSecond < 90e9 || in.OverlapSeconds < 0.5) {
				t.Errorf("receiver result %+v %+v", res, in)
			}
			if self == "node03" && (in.Role != IncastSender || res.Peer != "node01" || in.BytesPerSecond <= 0) {
				t.Errorf("sender result %+v %+v", res, in)
			}
		}
	}
}

// What an incast cannot judge it sets aside: counters that do not move (a
// replayed node), a port the senders did not fill, one sender alone, a
// receiver that does not serve.
func TestIncastCannotTell(t *testing.T) {
	t.Run("frozen counters", func(t *testing.T) {
		dir := standinEnv(t, "bw_ok")
		t.Setenv("STANDIN_SERVER", "serve")
		t.Setenv("STANDIN_SERVE_SECONDS", "0.8")
		n := newFabricNode(dir, "node01", fabricNoPFC[0])
		n.frozen = true
		s := newTestSchedulerAs(t, incastPlan(t, ""), n, "node01")
		results, _ := s.RunIncast(context.Background(), "node01", []string{"node02", "node03"})
		for _, r := range results {
			if !r.Skipped || r.Success || !strings.Contains(r.SkipReason, "not live") {
				t.Errorf("frozen node: %+v", r)
			}
		}
	})
	t.Run("port not filled", func(t *testing.T) {
		// Both senders at 152.4 Gb/s into a 400G port, nothing marked: 76%.
		for _, r := range runIncastSide(t, "node01", fabricNoECN[0], "bw_regressed") {
			if !r.Skipped || r.Reason != "" || !strings.Contains(r.SkipReason, "not oversubscribed") {
				t.Errorf("unfilled port: %+v", r)
			}
		}
	})
	t.Run("sender held back by nothing", func(t *testing.T) {
		for _, r := range runIncastSide(t, "node02", fabricSide{hw: map[string]uint64{}}, "bw_ok") {
			if !r.Skipped || !strings.Contains(r.SkipReason, "nothing held this sender back") {
				t.Errorf("sender without evidence: %+v", r)
			}
		}
	})
	t.Run("one sender", func(t *testing.T) {
		dir := standinEnv(t, "bw_ok")
		t.Setenv("STANDIN_SERVER", "serve")
		t.Setenv("STANDIN_SERVE_SECONDS", "0.8")
		// The stand-in server for port 18548 (the second sender of rail 0)
		// and 18550 (rail 1) never gets a client.
		t.Setenv("STANDIN_IDLE_PORTS", "18548 18550")
		s := newTestSchedulerAs(t, incastPlan(t, ""), newFabricNode(dir, "node01", fabricNoPFC[0]), "node01")
		results, _ := s.RunIncast(context.Background(), "node01", []string{"node02", "node03"})
		for _, r := range results {
			if !r.Skipped || !strings.Contains(r.SkipReason, "1 of the 2 senders") {
				t.Errorf("one sender: %+v", r)
			}
		}
	})
	t.Run("receiver refuses", func(t *testing.T) {
		standinEnv(t, "connect_refused")
		s := newTestSchedulerAs(t, incastPlan(t, ""), newFabricNode(t.TempDir(), "node02", fabricNoPFC[1]), "node02")
		s.incastSender.startWindow, s.incastSender.retryPause = 300*time.Millisecond, 100*time.Millisecond
		results, _ := s.RunIncast(context.Background(), "node01", []string{"node02", "node03"})
		for _, r := range results {
			if !r.Skipped || r.Success || !strings.Contains(r.SkipReason, "did not serve") {
				t.Errorf("refused: %+v", r)
			}
		}
	})
}

func TestRunIncastRefusesBadGroups(t *testing.T) {
	s := newTestSchedulerAs(t, incastPlan(t, ""), fakeNode{rate: 400e9, gid: 3}, "node01")
	for _, tc := range []struct {
		receiver string
		senders  []string
		want     string
	}{
		{"node01", []string{"node02"}, "at least two senders"},
		{"node01", []string{"node01", "node02"}, "cannot send into itself"},
		{"node01", []string{"node02", "node09"}, "not in the cluster plan"},
		{"node02", []string{"node03", "node03"}, "named twice"},
	} {
		if _, err := s.RunIncast(context.Background(), tc.receiver, tc.senders); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s <- %v: %v, want %q", tc.receiver, tc.senders, err, tc.want)
		}
	}
	s3 := newTestSchedulerAs(t, incastPlan(t, ""), fakeNode{rate: 400e9, gid: 3}, "node03")
	if _, err := s3.RunIncast(context.Background(), "node01", []string{"node02", "node02x"}); err == nil {
		t.Error("an unknown sender was accepted")
	}
	if got := IncastSenders(incastPlan(t, ""), "node03", 2); !slices.Equal(got, []string{"node01", "node02"}) {
		t.Errorf("IncastSenders(node03) = %v", got)
	}
}

// A pair probe stands aside while an incast round runs, whether or not its
// ends take part (the round takes the fabric share), and runs outside it.
func TestPairProbeStandsAsideDuringIncast(t *testing.T) {
	plan := incastPlan(t, "")
	s := newTestSchedulerAs(t, plan, fakeNode{rate: 400e9, gid: 3}, "node01")
	g, ok := s.incast.NextGroup("node01", time.Now())
	if !ok {
		t.Fatal("no incast scheduled for node01")
	}
	s.opts.Now = func() time.Time { return g.Start.Add(time.Second) }
	peer := g.Senders[0]
	if g.Receiver != "node01" {
		peer = g.Receiver
	}
	ran := false
	res := s.guarded(context.Background(), KindIBWriteBW, linkTarget(Link{Device: "mlx5_0", Peer: peer}), func() *Result { ran = true; return &Result{} })
	if ran || !res.Skipped || !strings.Contains(res.SkipReason, "incast") {
		t.Errorf("pair test during the incast: ran %v, %+v", ran, res)
	}
	s.opts.Now = func() time.Time { return g.Start.Add(-time.Hour) }
	if _, busy := s.incast.During(s.opts.Now(), s.opts.Now().Add(5*time.Second), "node01", peer); busy {
		t.Skip("another incast an hour earlier")
	}
	res = s.guarded(context.Background(), KindIBWriteBW, linkTarget(Link{Device: "mlx5_0", Peer: peer}), func() *Result { ran = true; return &Result{} })
	if !ran || res.Skipped {
		t.Errorf("pair test an hour before the incast stood aside: %+v", res)
	}
}

// The store keeps one incast result per device, whatever the peers.
func TestStoreKeepsOneIncastPerDevice(t *testing.T) {
	st := NewStore()
	st.Add(&Result{Probe: KindIncast, Peer: "node02+node03", Device: "mlx5_0", Start: time.Now(), Success: true})
	st.Add(&Result{Probe: KindIncast, Peer: "node05", Device: "mlx5_0", Start: time.Now()})
	st.Add(&Result{Probe: KindIncast, Peer: "node05", Device: "mlx5_1", Start: time.Now()})
	var peers []string
	for _, r := range st.Latest() {
		peers = append(peers, r.Device+"<"+r.Peer)
	}
	if !slices.Equal(peers, []string{"mlx5_0<node05", "mlx5_1<node05"}) {
		t.Errorf("latest incast results %v", peers)
	}
}

// The scheduled incast runs on its own: with an interval of seconds, the
// loop reaches this node's group and records its side (here set aside: no
// other node runs, so no sender connects or no receiver serves).
func TestIncastLoopRunsTheSchedule(t *testing.T) {
	standinEnv(t, "connect_refused")
	t.Setenv("STANDIN_SERVER", "idle")
	plan := incastPlan(t, "")
	plan.Probes.IBWriteBW.Enabled, plan.Probes.Ping.Enabled = false, false
	plan.Probes.Incast.Interval, plan.Probes.Incast.Timeout, plan.Probes.Incast.Jitter = 4*time.Second, 3*time.Second, 0
	s := newTestSchedulerAs(t, plan, newFabricNode(t.TempDir(), "node01", fabricSide{}), "node01")
	s.incast = schedule.NewIncastSchedule(plan.NodeNames(), plan.Probes.Incast.Schedule, 2, 1)
	s.incastSender.startWindow, s.incastSender.retryPause = 500*time.Millisecond, 100*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	for ctx.Err() == nil {
		if runs := s.Store().Runs(); slices.ContainsFunc(runs, func(r RunCount) bool { return r.Probe == KindIncast && r.Count > 0 }) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	<-done
	recent := s.Store().Recent(10)
	if len(recent) == 0 || recent[0].Probe != KindIncast || !recent[0].Skipped || recent[0].Incast == nil {
		t.Fatalf("no scheduled incast ran within 15 s: %+v", recent)
	}
	t.Logf("%s as %s: %s", recent[0].Device, recent[0].Incast.Role, recent[0].SkipReason)
}
