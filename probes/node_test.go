package probes

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/reader"
)

// fakeNode is a Node of synthetic snapshots of the test plan's node01:
// mlx5_0 and mlx5_1, each with an Ethernet port of rate behind ens1f0np0 /
// ens2f0np0 and, at index gid (none when negative), a RoCE v2 GID holding the
// device's plan address. Its counters do not move.
type fakeNode struct {
	rate float64
	gid  int
	// previous is how much older the previous collection each read returns
	// is (none when 0); util is how busy the ports were since then: the
	// share of the rate each direction moved.
	previous time.Duration
	util     float64
	// gpus puts GPU gpus[device] beside the device, at PCI address
	// 0000:<0x40+index>:00.0; gdrKnown gives the node
	// GPUs (a gpu source that read), gdr the peer-memory module.
	gpus          map[string]int
	gdr, gdrKnown bool
	// board puts a GPU beside each device at this relation: PIX (both
	// under one PCIe switch) or PHB (both on root ports of one host
	// bridge); none when unknown.
	board node.PCIeRelation
}

var fakeDevices = []struct{ device, netdev, ip string }{
	{"mlx5_0", "ens1f0np0", "192.168.100.11"},
	{"mlx5_1", "ens2f0np0", "192.168.101.11"},
}

// fakeCounterBase is where the fake data counters start, in bytes.
const fakeCounterBase = 1 << 40

func (f fakeNode) Collect(context.Context) (*node.Snapshot, error) {
	return f.at(time.Now(), 0), nil
}

// Latest: a fakeNode keeps no collection, so every question reads.
func (fakeNode) Latest() *node.Snapshot { return nil }

// at is the node at t with extra bytes moved each way on every port since
// the counters' base, and the previous collection when it has one.
func (f fakeNode) at(t time.Time, extra float64) *node.Snapshot {
	s := f.snapshot(t, extra)
	if f.previous > 0 {
		s.Previous = f.snapshot(t.Add(-f.previous), extra-f.util*f.rate/8*f.previous.Seconds())
	}
	return s
}

func (f fakeNode) snapshot(t time.Time, extra float64) *node.Snapshot {
	s := &node.Snapshot{Time: t, Ethtool: map[string]*node.EthtoolStats{}}
	words := uint64((fakeCounterBase + extra) / node.PMADataWordBytes)
	for i, d := range fakeDevices {
		p := &node.Port{Device: d.device, Number: 1, LinkLayer: node.LinkLayerEthernet, RateBitsPerSecond: f.rate, Interface: d.netdev,
			Counters: []node.Counter{{Name: node.CounterPortRcvData, Value: words}, {Name: node.CounterPortXmitData, Value: words}}}
		if f.gid >= 0 {
			p.GIDs = []node.GID{{Index: f.gid, GID: netip.MustParseAddr("::ffff:" + d.ip).String(), Type: node.GIDTypeRoCEv2, Interface: d.netdev}}
		}
		s.Devices = append(s.Devices, &node.Device{Name: d.device, Ports: []*node.Port{p}})
		if g, ok := f.gpus[d.device]; ok {
			if s.GPU == nil {
				s.GPU = &node.GPUState{}
			}
			// Under one PCIe switch with its device, so that it is the device's
			// nearest GPU by nvidia-smi's classes and NCCL's alike.
			gpu, nic := boardPlaces(node.RelationPIX, fmt.Sprintf("pci0000:%02x", i))
			gpu.Path[len(gpu.Path)-1] = fmt.Sprintf("0000:%02x:00.0", 0x40+g)
			s.GPU.NICs = append(s.GPU.NICs, &node.RDMANIC{Device: d.device, Place: nic})
			s.GPU.GPUs = append(s.GPU.GPUs, &node.GPU{Index: g, Place: gpu})
		}
	}
	if f.board != node.RelationUnknown {
		s.GPU = &node.GPUState{}
		for i, d := range fakeDevices {
			host := fmt.Sprintf("pci0000:%02x", 0x10*(i+1))
			gpu, nic := boardPlaces(f.board, host)
			s.GPU.NICs = append(s.GPU.NICs, &node.RDMANIC{Device: d.device, Place: nic})
			s.GPU.GPUs = append(s.GPU.GPUs, &node.GPU{Index: i, Place: gpu})
		}
	}
	if f.gdrKnown {
		if s.GPU == nil {
			s.GPU = &node.GPUState{GPUs: []*node.GPU{{Index: 0}}}
		}
		if f.gdr {
			s.GPU.GPUDirect.PeerMem = "nvidia_peermem"
		}
	}
	return s
}

// boardPlaces places a GPU and a NIC under host bridge host at relation r:
// below one PCIe switch (an upstream port and two downstream ports) for
// PIX, each on its own root port for PHB.
func boardPlaces(r node.PCIeRelation, host string) (gpu, nic node.PCIPlace) {
	bus := host[len(host)-2:]
	switch r {
	case node.RelationPIX:
		root, usp := "0000:"+bus+":01.0", "0000:"+bus+":02.0"
		gpu = node.PCIPlace{Host: host, Path: []string{root, usp, "0000:" + bus + ":03.0", "0000:" + bus + ":04.0"}}
		nic = node.PCIPlace{Host: host, Path: []string{root, usp, "0000:" + bus + ":03.1", "0000:" + bus + ":05.0"}}
	case node.RelationPHB:
		gpu = node.PCIPlace{Host: host, Path: []string{"0000:" + bus + ":01.0", "0000:" + bus + ":06.0"}}
		nic = node.PCIPlace{Host: host, Path: []string{"0000:" + bus + ":01.1", "0000:" + bus + ":07.0"}}
	default:
		panic("boardPlaces: no such board")
	}
	return gpu, nic
}

// busyNode is a fakeNode whose ports carry others' traffic from its first
// read on: share of the rate, each way.
type busyNode struct {
	fakeNode
	share float64
	mu    sync.Mutex
	first time.Time
}

func (b *busyNode) Collect(context.Context) (*node.Snapshot, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if b.first.IsZero() {
		b.first = now
	}
	return b.at(now, b.share*b.rate/8*now.Sub(b.first).Seconds()), nil
}

// countingNode counts the reads of the node.
type countingNode struct {
	Node
	reads atomic.Int64
}

func (c *countingNode) Collect(ctx context.Context) (*node.Snapshot, error) {
	c.reads.Add(1)
	return c.Node.Collect(ctx)
}

// readerNode is the exporter's reader as a Node, one read per Collect.
type readerNode struct{ r *reader.Reader }

func (n readerNode) Collect(context.Context) (*node.Snapshot, error) { return n.r.Read().Snapshot, nil }

func (readerNode) Latest() *node.Snapshot { return nil }

// newReaderNode reads a node from sysfs and replay captures under root.
func newReaderNode(t *testing.T, opts reader.Options) readerNode {
	t.Helper()
	r, err := reader.New(opts, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return readerNode{r}
}

// fixtureNode is a freshly written fixture node read by the exporter's
// reader, the way the exporter backs the probes; root is where it lives.
func fixtureNode(t *testing.T) (readerNode, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "node")
	if err := sysfixture.WriteScenario(root, "mlx5-8x400g-healthy"); err != nil {
		t.Fatal(err)
	}
	return newReaderNode(t, reader.Options{
		SysPath: filepath.Join(root, "sys"), DevPath: filepath.Join(root, "dev"),
		Sources: reader.SourceNames(), Timeout: 5 * time.Second, ReplayDir: filepath.Join(root, "replay"),
	}), root
}

// The GPU nearest each NIC of the DGX H100 fixtures, through the exporter's
// reader: its own GPU on the healthy node; the first GPU of its new socket
// for the NIC moved to socket 1.
func TestNearestGPU(t *testing.T) {
	for _, c := range []struct {
		scenario, device string
		want             int
		address          string
	}{
		{"dgx-h100-8gpu-8nic", "mlx5_3", 3, "0000:61:00.0"},
		{"dgx-h100-8gpu-8nic", "mlx5_6", 6, "0000:d1:00.0"},
		{"dgx-h100-degraded", "mlx5_3", 4, "0000:9d:00.0"},
	} {
		base := filepath.Join("..", "collector", "testdata", c.scenario)
		n := newReaderNode(t, reader.Options{SysPath: filepath.Join(base, "sys"), DevPath: filepath.Join(base, "dev"),
			Sources: []string{node.SourceRDMA, node.SourceGPU}, Timeout: 5 * time.Second})
		snap, _ := n.Collect(context.Background())
		if g := nearestGPU(snap, c.device); g == nil || g.Index != c.want || g.Place.Address() != c.address {
			t.Errorf("%s %s: GPU %+v, want %d", c.scenario, c.device, g, c.want)
		}
		if nearestGPU(snap, "mlx5_99") != nil {
			t.Error("unknown device: no GPU")
		}
	}
}

// The GPU↔NIC relation a run's GPUDirect verdict rests on, through the
// exporter's reader: the DGX H100's NICs share PCIe switches with GPUs; the
// degraded fixture's mlx5_3 sits away from every GPU, yet the node as a
// whole still has such pairs. The fake boards are what they claim.
func TestGPUNICRelation(t *testing.T) {
	for _, c := range []struct {
		scenario string
		devices  []string
		direct   bool
	}{
		{"dgx-h100-8gpu-8nic", []string{"mlx5_3"}, true},
		{"dgx-h100-8gpu-8nic", nil, true},
		{"dgx-h100-degraded", []string{"mlx5_3"}, false},
		{"dgx-h100-degraded", []string{"mlx5_0", "mlx5_3"}, true},
	} {
		base := filepath.Join("..", "collector", "testdata", c.scenario)
		n := newReaderNode(t, reader.Options{SysPath: filepath.Join(base, "sys"), DevPath: filepath.Join(base, "dev"),
			Sources: []string{node.SourceRDMA, node.SourceGPU}, Timeout: 5 * time.Second})
		snap, _ := n.Collect(context.Background())
		if r := gpuNICRelation(snap, c.devices); r == node.RelationUnknown || r.Direct() != c.direct {
			t.Errorf("%s %v: %v, want direct %v", c.scenario, c.devices, r, c.direct)
		}
	}
	if r := gpuNICRelation(nil, nil); r != node.RelationUnknown {
		t.Errorf("no snapshot: %v", r)
	}
	for _, board := range []node.PCIeRelation{node.RelationPIX, node.RelationPHB} {
		snap := fakeNode{rate: 1, board: board}.snapshot(time.Now(), 0)
		if r := gpuNICRelation(snap, []string{"mlx5_1"}); r != board {
			t.Errorf("fake %v board reads %v", board, r)
		}
	}
}
