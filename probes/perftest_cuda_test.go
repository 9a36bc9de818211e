package probes

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// use_cuda adds --use_cuda_bus_id=<PCI address of the GPU nearest the
// tested NIC>: --use_cuda=<n> counts in CUDA's order, fastest first, which
// need not be the PCI order of the node's GPU indices. Debian's perftest is
// built without CUDA and rejects both options, so this argv is checked on
// the stand-in.
func TestPerftestUseCUDAArgv(t *testing.T) {
	dir := standinEnv(t, "bw_ok")
	cudaPlan := func() *config.Plan {
		p := testPlan(t, "0.9", "")
		p.Probes.IBWriteBW.UseCUDA = true
		return p
	}
	s := newTestScheduler(t, cudaPlan(), fakeNode{rate: 400e9, gid: 3, gpus: map[string]int{"mlx5_0": 0, "mlx5_1": 5}})
	l1 := link0
	l1.Rail, l1.Device, l1.PeerIP = 1, "mlx5_1", "192.168.101.12"
	if res := s.measure(context.Background(), s.bw, linkTarget(l1)); !res.Success || slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "use_cuda") }) {
		t.Fatalf("%+v", res)
	}
	if got := calls(t, dir)[0]; !strings.Contains(got, " --use_cuda_bus_id=0000:45:00.0 ") || strings.Contains(got, "--use_cuda=") || !strings.HasSuffix(got, " 192.168.101.12") {
		t.Errorf("client argv %q: want --use_cuda_bus_id=0000:45:00.0 (GPU 5) before the peer", got)
	}
	snap, _ := s.opts.Node.Collect(context.Background())
	if srv := s.bw.args(l1, s.bw.placement(snap, l1), true); !strings.Contains(strings.Join(srv, " "), "--use_cuda_bus_id=0000:45:00.0") {
		t.Errorf("server argv %q lacks --use_cuda_bus_id=0000:45:00.0", srv)
	}
	// No GPU known near the device: host memory, and the result says so.
	dir = standinEnv(t, "bw_ok")
	s = newTestScheduler(t, cudaPlan(), fakeNode{rate: 400e9, gid: 3})
	res := s.measure(context.Background(), s.bw, linkTarget(link0))
	if got := calls(t, dir)[0]; strings.Contains(got, "--use_cuda") {
		t.Errorf("argv %q: no GPU, no --use_cuda", got)
	}
	if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "use_cuda: no GPU known near mlx5_0") }) {
		t.Errorf("warnings %q", res.Warnings)
	}
	// Off by default.
	dir = standinEnv(t, "bw_ok")
	s = newTestScheduler(t, testPlan(t, "0.9", ""), fakeNode{rate: 400e9, gid: 3, gpus: map[string]int{"mlx5_0": 0}})
	s.measure(context.Background(), s.bw, linkTarget(link0))
	if got := calls(t, dir)[0]; strings.Contains(got, "--use_cuda") {
		t.Errorf("argv %q: use_cuda is off by default", got)
	}
}

// Debian's perftest (built without CUDA) rejects both flags alike: the
// reason the argv above is checked on a stand-in. perftest registers
// use_cuda_bus_id next to use_cuda under the same #ifdef HAVE_CUDA in its
// long-option table (src/perftest_parameters.c, since v4.4-0.36; Debian's
// 4.5-0.17 source has both), so a build that takes one takes the other, and
// passes the address to cuDeviceGetByPCIBusId.
func TestDebianPerftestRejectsUseCUDA(t *testing.T) {
	bin := testenv.LookPath(t, "perftest", "ib_write_bw")
	for _, flag := range []string{"--use_cuda=0", "--use_cuda_bus_id=0000:1b:00.0"} {
		out, err := exec.Command(bin, flag, "-d", "nonexistent0").CombinedOutput()
		if err == nil {
			t.Skipf("this ib_write_bw accepts %s (built with CUDA): %s", flag, out)
		}
		name, _, _ := strings.Cut(flag, "=")
		if !strings.Contains(string(out), "unrecognized option '"+flag+"'") && !strings.Contains(string(out), name) {
			t.Errorf("%s: unexpected output: %s", flag, out)
		}
	}
}
