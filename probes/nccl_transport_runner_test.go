package probes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run whose bandwidth meets the floor still fails when NCCL's own report
// shows sockets, or RDMA without GPUDirect on a node that has it.
func TestNCCLTransportVerdicts(t *testing.T) {
	for _, c := range []struct {
		mode string
		node Node
		want string
	}{
		{"nccl_info_gdrdma", fakeNode{rate: 400e9, gid: 3, gdr: true, gdrKnown: true}, ""},
		{"nccl_info_socket", fakeNode{rate: 400e9, gid: 3, gdr: true, gdrKnown: true}, ReasonSocketFallback},
		{"nccl_info_socket", fakeNode{rate: 400e9, gid: 3}, ReasonSocketFallback},
		{"nccl_info_no_gdr", fakeNode{rate: 400e9, gid: 3, gdr: true, gdrKnown: true}, ReasonNoGDRDMA},
		// Without GPUDirect on the node, RDMA through host memory is what
		// it can do: not a transport failure.
		{"nccl_info_no_gdr", fakeNode{rate: 400e9, gid: 3, gdr: false, gdrKnown: true}, ""},
		{"nccl_info_no_gdr", fakeNode{rate: 400e9, gid: 3}, ""},
		// No NCCL_DEBUG output at all (an operator's NCCL_DEBUG=WARN): nothing to judge.
		{"nccl_a100", fakeNode{rate: 400e9, gid: 3, gdr: true, gdrKnown: true}, ""},
	} {
		t.Run(c.mode, func(t *testing.T) {
			dir := standinEnv(t, c.mode)
			s := newTestScheduler(t, testPlan(t, "0.9", "    min_bus_bandwidth_gbytes: 40\n"), c.node)
			res := s.runNCCL(context.Background())
			if res.Reason != c.want || res.Success != (c.want == "") {
				t.Fatalf("reason %q success %v, want %q; transport %+v", res.Reason, res.Success, c.want, res.NCCL.Transport)
			}
			if res.measuredBandwidth() < 40e9 {
				t.Errorf("the bandwidth met the floor in every case: %v", res.measuredBandwidth())
			}
			if c.mode == "nccl_info_gdrdma" && (res.NCCL == nil || res.NCCL.Transport == nil || res.NCCL.Transport.GDRDMAChannels != 12 || len(res.NCCL.Transport.HCAs) != 2) {
				t.Errorf("transport not kept: %+v", res.NCCL.Transport)
			}
			env, _ := os.ReadFile(filepath.Join(dir, "env"))
			for _, want := range []string{"NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=INIT,NET"} {
				if !strings.Contains(string(env), want) {
					t.Errorf("env lacks %s:\n%s", want, env)
				}
			}
			if argv := calls(t, dir)[0]; !strings.Contains(argv, "-x NCCL_DEBUG ") || !strings.Contains(argv, "-x NCCL_DEBUG_SUBSYS") {
				t.Errorf("argv does not export the debug variables: %s", argv)
			}
		})
	}
}
