package probes

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/probes/parse"
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
		// GCP's FastSocket plugin is TCP like NET/Socket (nccl#1519).
		{"nccl_info_fastsocket", fakeNode{rate: 400e9, gid: 3, board: node.RelationPIX}, ReasonSocketFallback},
		// Only this node's GPU↔NIC relation is known: the log's host
		// (hostname-test) is another, which printed no distance decision.
		{"nccl_info_no_gdr", fakeNode{rate: 400e9, gid: 3, gdr: true, gdrKnown: true, board: node.RelationPIX}, ""},
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

// renamedPlan is testPlan with its two nodes renamed to the hosts of a real
// NCCL log, the first leading the NCCL run, so that the log names this node.
func renamedPlan(t *testing.T, first, second string, extra string) *config.Plan {
	t.Helper()
	plan := testPlan(t, "0.9", extra)
	plan.Nodes[0].Name, plan.Nodes[1].Name = first, second
	plan.Probes.NCCL.Leader = first
	return plan
}

func runNCCLAs(t *testing.T, mode string, plan *config.Plan, self string, n Node) *Result {
	t.Helper()
	standinEnv(t, mode)
	s := newTestSchedulerAs(t, plan, n, self)
	return s.runNCCL(context.Background())
}

func gpuDirectOf(res *Result, host string) *HostGPUDirect {
	if res.NCCL == nil {
		return nil
	}
	for i := range res.NCCL.GPUDirect {
		if res.NCCL.GPUDirect[i].Host == host {
			return &res.NCCL.GPUDirect[i]
		}
	}
	return nil
}

// GPUDirect off on a board whose NICs hang off the CPU is NCCL's design
// (NCCL_NET_GDR_LEVEL defaults to PXB): the run is judged on its
// bandwidth, forms a baseline, and no hint invites NCCL_NET_GDR_LEVEL=SYS.
// The same log from a node whose GPUs and NICs share a switch fails,
// naming it.
func TestNCCLGPUDirectByTopology(t *testing.T) {
	plan := renamedPlan(t, "hostname-test", "peer", "    min_bus_bandwidth_gbytes: 40\n")
	phb := fakeNode{rate: 400e9, gid: 3, gdr: true, gdrKnown: true, board: node.RelationPHB}
	standinEnv(t, "nccl_info_no_gdr")
	s := newTestSchedulerAs(t, plan, phb, "hostname-test")
	for range minBaselineSamples {
		if res := s.runNCCL(context.Background()); !res.Success {
			t.Fatalf("PHB board without GDRDMA must pass on its bandwidth: %q %s", res.Reason, res.Hint)
		}
	}
	res := s.runNCCL(context.Background())
	if !res.Success || res.Bandwidth.BaselineBytesPerSecond != 237.52e9 {
		t.Fatalf("no baseline formed on a PHB board: success %v %+v", res.Success, res.Bandwidth)
	}
	j := gpuDirectOf(res, "hostname-test")
	if j == nil || !j.Local || j.Verdict != GPUDirectByDesign || !strings.Contains(j.Why, "PHB") {
		t.Errorf("verdict %+v", j)
	}
	if strings.Contains(res.Hint+strings.Join(res.Warnings, " "), "SYS") {
		t.Errorf("no hint may invite NCCL_NET_GDR_LEVEL=SYS: %q %q", res.Hint, res.Warnings)
	}
	// Judged on its bandwidth: below the floor it fails as such.
	high := renamedPlan(t, "hostname-test", "peer", "    min_bus_bandwidth_gbytes: 400\n")
	if res := runNCCLAs(t, "nccl_info_no_gdr", high, "hostname-test", phb); res.Reason != ReasonBelowThreshold {
		t.Errorf("PHB board below the floor: %q", res.Reason)
	}

	pix := phb
	pix.board = node.RelationPIX
	res = runNCCLAs(t, "nccl_info_no_gdr", plan, "hostname-test", pix)
	if res.Success || res.Reason != ReasonNoGDRDMA || !strings.HasPrefix(res.Hint, "hostname-test: its GPUs and NICs share a PCIe switch (PIX)") || !strings.Contains(res.Hint, "none of its 12 RDMA channels") {
		t.Fatalf("PIX board without GDRDMA: success %v reason %q hint %q", res.Success, res.Reason, res.Hint)
	}
	if strings.Contains(res.Hint, "=SYS") {
		t.Errorf("hint invites NCCL_NET_GDR_LEVEL=SYS: %q", res.Hint)
	}
	// Without the peer-memory module the hint says so.
	nomod := pix
	nomod.gdr = false
	if res := runNCCLAs(t, "nccl_info_no_gdr", plan, "hostname-test", nomod); res.Reason != ReasonNoGDRDMA || !strings.Contains(res.Hint, "no peer-memory module loaded") {
		t.Errorf("PIX board without nvidia_peermem: %q %q", res.Reason, res.Hint)
	}
	// A node whose GPUs were not read cannot tell.
	unknown := fakeNode{rate: 400e9, gid: 3, gdr: true, gdrKnown: true}
	res = runNCCLAs(t, "nccl_info_no_gdr", plan, "hostname-test", unknown)
	if j := gpuDirectOf(res, "hostname-test"); !res.Success || j == nil || j.Verdict != GPUDirectCannotTell {
		t.Errorf("unknown relation: %v %+v", res.Success, j)
	}
}

// GPUDirect is decided per host: one node of a group without the
// peer-memory module leaves /GDRDMA on the other node's lines
// (nccl-tests#152: nv_peer_mem was not loaded on gpu37).
func TestNCCLGPUDirectPerHost(t *testing.T) {
	pix := fakeNode{rate: 400e9, gid: 3, gdr: false, gdrKnown: true, board: node.RelationPIX}
	plan := renamedPlan(t, "gpu37", "gpu32", "")
	res := runNCCLAs(t, "nccl_info_mixed_gdr", plan, "gpu37", pix)
	if res.Success || res.Reason != ReasonNoGDRDMA || !strings.HasPrefix(res.Hint, "gpu37: ") {
		t.Fatalf("gpu37 leads: success %v reason %q hint %q", res.Success, res.Reason, res.Hint)
	}
	if j := gpuDirectOf(res, "gpu32"); j == nil || j.Verdict != GPUDirectUsed || j.Local {
		t.Errorf("gpu32: %+v", j)
	}
	// Led by gpu32, whose own ranks use GPUDirect: gpu37's relation is not
	// known here, so the run passes and says it cannot tell.
	plan = renamedPlan(t, "gpu32", "gpu37", "")
	pix.gdr = true
	res = runNCCLAs(t, "nccl_info_mixed_gdr", plan, "gpu32", pix)
	j := gpuDirectOf(res, "gpu37")
	if !res.Success || j == nil || j.Verdict != GPUDirectCannotTell || !strings.Contains(j.Why, "while gpu32 use GPUDirect RDMA") {
		t.Fatalf("gpu32 leads: success %v reason %q gpu37 %+v", res.Success, res.Reason, j)
	}
	if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.HasPrefix(w, "GPUDirect RDMA on gpu37: cannot tell") }) {
		t.Errorf("warnings %q", res.Warnings)
	}
}

// NCCL's per-NIC "GPU Direct RDMA Disabled for HCA" on every HCA of a node
// that should have GPUDirect fails even when the log has no channel lines
// (nccl#1537); on a PHB board it is what NCCL would do anyway.
func TestNCCLGPUDirectDisabledForEveryHCA(t *testing.T) {
	plan := renamedPlan(t, "hostname1", "peer", "")
	pix := fakeNode{rate: 400e9, gid: 3, gdr: true, gdrKnown: true, board: node.RelationPIX}
	res := runNCCLAs(t, "nccl_info_nic_gdr_disabled", plan, "hostname1", pix)
	if res.Success || res.Reason != ReasonNoGDRDMA || !strings.Contains(res.Hint, `"GPU Direct RDMA Disabled" for every HCA (mlx5_0, mlx5_1)`) {
		t.Fatalf("PIX: success %v reason %q hint %q", res.Success, res.Reason, res.Hint)
	}
	phb := pix
	phb.board = node.RelationPHB
	if res := runNCCLAs(t, "nccl_info_nic_gdr_disabled", plan, "hostname1", phb); !res.Success {
		t.Errorf("PHB: %q %q", res.Reason, res.Hint)
	}
	// Pre-2.13's "(no module)" wording, on the other host of the log.
	plan = renamedPlan(t, "21346d5cefce", "6a5a91752e39", "")
	if res := runNCCLAs(t, "nccl_info_no_module", plan, "21346d5cefce", pix); res.Reason != ReasonNoGDRDMA {
		t.Errorf("nccl#899 on 21346d5cefce: %q", res.Reason)
	}
	plan = renamedPlan(t, "6a5a91752e39", "21346d5cefce", "")
	res = runNCCLAs(t, "nccl_info_no_module", plan, "6a5a91752e39", pix)
	if res.Reason != ReasonNoGDRDMA || !strings.HasPrefix(res.Hint, "6a5a91752e39: ") {
		t.Errorf("nccl#899 on 6a5a91752e39 (no /GDRDMA on its own channels): %q %q", res.Reason, res.Hint)
	}
	if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "21346d5cefce: cannot tell") }) {
		t.Errorf("the other host, whose NCCL says it has no GPUDirect, is worth a warning: %q", res.Warnings)
	}
}

// NCCL's topology decision "GPU Direct RDMA Disabled for GPU ... (distance 6
// > 4)" is its own rule: by design, whatever this node reads (nccl#1657).
func TestNCCLGPUDirectOffByDistance(t *testing.T) {
	plan := renamedPlan(t, "aigc-maas-instance-leader-0", "peer", "")
	for _, board := range []node.PCIeRelation{node.RelationPHB, node.RelationPIX, node.RelationUnknown} {
		res := runNCCLAs(t, "nccl_info_gdr_distance", plan, "aigc-maas-instance-leader-0", fakeNode{rate: 400e9, gid: 3, gdr: true, gdrKnown: true, board: board})
		j := gpuDirectOf(res, "aigc-maas-instance-leader-0")
		if !res.Success || j == nil || j.Verdict != GPUDirectByDesign || !strings.Contains(j.Why, "distance 6 > 4") {
			t.Errorf("%v: success %v %q %+v", board, res.Success, res.Reason, j)
		}
		if board == node.RelationPIX && !strings.Contains(j.Why, "although this node's GPUs and NICs share a PCIe switch (PIX)") {
			t.Errorf("PIX and NCCL disagree: say so: %q", j.Why)
		}
	}
}

// A level the host's NCCL read from its environment below this node's
// relation turns GPUDirect off as configured, and NCCL 2.30 and later print
// no distance decision to say so. (The lines are CONSTRUCTED in NCCL's own
// formats, src/misc/param.cc and src/transport/net.cc; nccl-tests#321 shows the
// first one for real.)
func TestNCCLGPUDirectOffByConfiguredLevel(t *testing.T) {
	tr := parse.NCCLTransport("node01:1:1 [0] NCCL INFO NCCL_NET_GDR_LEVEL set by environment to PIX\n" +
		"node01:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0\n")
	v := gpuDirectView{names: []string{"node01"}, relation: node.RelationPXB}
	hosts, failing := judgeGPUDirect(&tr, v)
	if failing != nil || len(hosts) != 1 || hosts[0].Verdict != GPUDirectByDesign || !strings.Contains(hosts[0].Why, "set to PIX") {
		t.Errorf("PXB board, level PIX: %+v %+v", hosts, failing)
	}
	v.relation = node.RelationPIX
	if _, failing := judgeGPUDirect(&tr, v); failing == nil || failing.Host != "node01" {
		t.Errorf("PIX board, level PIX, no GDRDMA: %+v", failing)
	}
}
