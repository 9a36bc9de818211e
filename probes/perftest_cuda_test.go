package probes

import (
	"context"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/internal/testenv"
	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/reader"
)

// placedNode knows which GPU is nearest each RDMA device.
type placedNode struct {
	fakeNode
	gpus map[string]int
}

func (p placedNode) NearestGPU(device string) (int, bool) {
	g, ok := p.gpus[device]
	return g, ok
}

// use_cuda adds --use_cuda=<the GPU nearest the tested NIC>. Debian's
// perftest is built without CUDA and rejects the option, so this argv is
// checked on the stand-in.
func TestPerftestUseCUDAArgv(t *testing.T) {
	dir := standinEnv(t, "bw_ok")
	cudaPlan := func() *config.Plan {
		p := testPlan(t, "0.9", "")
		p.Probes.IBWriteBW.UseCUDA = true
		return p
	}
	s := newTestScheduler(t, cudaPlan(), placedNode{fakeNode{rate: 400e9, gid: 3}, map[string]int{"mlx5_0": 0, "mlx5_1": 5}})
	l1 := link0
	l1.Rail, l1.Device, l1.PeerIP = 1, "mlx5_1", "192.168.101.12"
	if res := s.bw.runClient(context.Background(), l1); !res.Success || slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "use_cuda") }) {
		t.Fatalf("%+v", res)
	}
	if got := calls(t, dir)[0]; !strings.Contains(got, " --use_cuda=5 ") || !strings.HasSuffix(got, " 192.168.101.12") {
		t.Errorf("client argv %q: want --use_cuda=5 before the peer", got)
	}
	if srv := s.bw.args(l1, 3, true, true); !strings.Contains(strings.Join(srv, " "), "--use_cuda=5") {
		t.Errorf("server argv %q lacks --use_cuda=5", srv)
	}
	// No GPU known near the device: host memory, and the result says so.
	dir = standinEnv(t, "bw_ok")
	s = newTestScheduler(t, cudaPlan(), fakeNode{rate: 400e9, gid: 3})
	res := s.bw.runClient(context.Background(), link0)
	if got := calls(t, dir)[0]; strings.Contains(got, "--use_cuda") {
		t.Errorf("argv %q: no GPU, no --use_cuda", got)
	}
	if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "use_cuda: no GPU known near mlx5_0") }) {
		t.Errorf("warnings %q", res.Warnings)
	}
	// Off by default.
	dir = standinEnv(t, "bw_ok")
	s = newTestScheduler(t, testPlan(t, "0.9", ""), placedNode{fakeNode{rate: 400e9, gid: 3}, map[string]int{"mlx5_0": 0}})
	s.bw.runClient(context.Background(), link0)
	if got := calls(t, dir)[0]; strings.Contains(got, "--use_cuda") {
		t.Errorf("argv %q: use_cuda is off by default", got)
	}
}

// Debian's perftest (built without CUDA) does reject the flag: the reason
// the argv above is checked on a stand-in.
func TestDebianPerftestRejectsUseCUDA(t *testing.T) {
	bin := testenv.LookPath(t, "perftest", "ib_write_bw")
	out, err := exec.Command(bin, "--use_cuda=0", "-d", "nonexistent0").CombinedOutput()
	if err == nil {
		t.Skipf("this ib_write_bw accepts --use_cuda (built with CUDA): %s", out)
	}
	if !strings.Contains(string(out), "unrecognized option") && !strings.Contains(string(out), "use_cuda") {
		t.Errorf("unexpected output: %s", out)
	}
}

// The GPU nearest each NIC of the DGX H100 fixtures, through the exporter's
// reader: its own GPU on the healthy node; the first GPU of its new socket
// for the NIC moved to socket 1.
func TestSnapshotNodeNearestGPU(t *testing.T) {
	for _, c := range []struct {
		scenario, device string
		want             int
	}{
		{"dgx-h100-8gpu-8nic", "mlx5_3", 3},
		{"dgx-h100-8gpu-8nic", "mlx5_6", 6},
		{"dgx-h100-degraded", "mlx5_3", 4},
	} {
		base := filepath.Join("..", "collector", "testdata", c.scenario)
		r, err := reader.New(reader.Options{SysPath: filepath.Join(base, "sys"), DevPath: filepath.Join(base, "dev"),
			Sources: []string{node.SourceRDMA, node.SourceGPU}, Timeout: 5 * time.Second}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		n := SnapshotNode{Read: func() *node.Snapshot { return r.Read().Snapshot }}
		if g, ok := n.NearestGPU(c.device); !ok || g != c.want {
			t.Errorf("%s %s: GPU %d %v, want %d", c.scenario, c.device, g, ok, c.want)
		}
		if _, ok := n.NearestGPU("mlx5_99"); ok {
			t.Error("unknown device: no GPU")
		}
		r.Close()
	}
}
