package probes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/config"
)

// launchPlan is a three-node plan: node01 and node03 name the same netdevs
// and HCAs, node02 others; extra goes under probes.nccl.
func launchPlan(t *testing.T, extra string) *config.Plan {
	t.Helper()
	plan, err := config.Parse("test.yaml", []byte(`
networks:
  management: 10.0.0.0/24
  compute: [192.168.100.0/24, 192.168.101.0/24]
expectations:
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
      - {netdev: enp23s0f0np0, rdma_device: mlx5_4, ip: 192.168.100.12/24}
      - {netdev: enp24s0f0np0, rdma_device: mlx5_5, ip: 192.168.101.12/24}
  - name: node03
    management_ip: 10.0.0.13
    interfaces:
      - {netdev: ens1f0np0, rdma_device: mlx5_0, ip: 192.168.100.13/24}
      - {netdev: ens2f0np0, rdma_device: mlx5_1, ip: 192.168.101.13/24}
probes:
  nccl:
    command: /opt/nccl-tests/build/all_reduce_perf
    gpus_per_node: 8
`+extra))
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func launchArgv(t *testing.T, plan *config.Plan, names ...string) string {
	t.Helper()
	r := &ncclRunner{probeKind: KindNCCL, plan: plan, self: plan.Nodes[0]}
	return strings.Join(r.argv(r.launch(names), 8<<30), " ")
}

// Each node's ranks get their own node's netdevs, HCAs and node_env; what
// all share goes by -x; nodes that agree share an app context.
func TestNCCLLaunchPerNode(t *testing.T) {
	plan := launchPlan(t, "    env: {NCCL_IB_TIMEOUT: 22}\n    node_env:\n      node02: {NCCL_IB_GID_INDEX: 5}\n")
	options := "-x NCCL_DEBUG -x NCCL_DEBUG_SUBSYS -x NCCL_IB_FIFO_TC -x NCCL_IB_TC -x NCCL_IB_TIMEOUT --mca btl_tcp_if_include 10.0.0.0/24 --mca oob_tcp_if_include 10.0.0.0/24"
	program := "/opt/nccl-tests/build/all_reduce_perf -b 8 -e 8589934592 -f 2 -g 1"
	want := "/usr/bin/mpirun -np 16 -H 10.0.0.11:8,10.0.0.13:8 " + options +
		" /usr/bin/env NCCL_IB_HCA==mlx5_0:1,mlx5_1:1 NCCL_SOCKET_IFNAME==ens1f0np0,ens2f0np0 " + program +
		" : -np 8 -H 10.0.0.12:8 " + options +
		" /usr/bin/env NCCL_IB_GID_INDEX=5 NCCL_IB_HCA==mlx5_4:1,mlx5_5:1 NCCL_SOCKET_IFNAME==enp23s0f0np0,enp24s0f0np0 " + program
	if got := launchArgv(t, plan, "node01", "node02", "node03"); got != want {
		t.Errorf("argv\n%s\nwant\n%s", got, want)
	}
	// A group of the two alike: one context, everything by -x.
	if got := launchArgv(t, plan, "node01", "node03"); strings.Contains(got, " : ") || strings.Contains(got, envProgram) ||
		!strings.Contains(got, "-x NCCL_IB_HCA") || !strings.Contains(got, "-x NCCL_SOCKET_IFNAME") {
		t.Errorf("alike nodes: %s", got)
	}
	// The plan's env overrides a derived value on every node, node_env over it.
	plan = launchPlan(t, "    env: {NCCL_IB_HCA: mlx5}\n    node_env:\n      node03: {NCCL_IB_HCA: =mlx5_7:1}\n")
	contexts := strings.Split(launchArgv(t, plan, "node01", "node02", "node03"), " : ")
	if len(contexts) != 3 || !strings.Contains(contexts[0], "-H 10.0.0.11:8 ") || !strings.Contains(contexts[0], " NCCL_IB_HCA=mlx5 ") ||
		!strings.Contains(contexts[1], " NCCL_IB_HCA=mlx5 ") || !strings.Contains(contexts[2], "-H 10.0.0.13:8 ") || !strings.Contains(contexts[2], " NCCL_IB_HCA==mlx5_7:1 ") {
		t.Errorf("overrides: %q", contexts)
	}
}

// Open MPI's own TCP stays on the management network unless the operator
// chose its interfaces.
func TestNCCLMCADefaults(t *testing.T) {
	for _, c := range []struct {
		extra      string
		btl, oob   bool
		envSetting string
	}{
		{"", true, true, ""},
		{"    extra_mpirun_args: [--mca, btl_tcp_if_include, eth0]\n", false, true, ""},
		{"    extra_mpirun_args: [-mca, oob_tcp_if_exclude, docker0]\n", true, false, ""},
		{"", true, false, "OMPI_MCA_oob_tcp_if_include=eth0"},
	} {
		if c.envSetting != "" {
			k, v, _ := strings.Cut(c.envSetting, "=")
			t.Setenv(k, v)
		}
		got := launchArgv(t, launchPlan(t, c.extra), "node01", "node02")
		if strings.Contains(got, "--mca btl_tcp_if_include 10.0.0.0/24") != c.btl || strings.Contains(got, "--mca oob_tcp_if_include 10.0.0.0/24") != c.oob {
			t.Errorf("%q %q: %s", c.extra, c.envSetting, got)
		}
	}
}

// nccl-tests' own rule (src/common.cu): three buffers of max_bytes, 1 GiB,
// and 1 GiB per 16 GiB installed (at most 4) must fit; the sweep stops at
// the largest power of two that does, at most 8 GiB.
func TestNCCLMaxBytesFromGPUMemory(t *testing.T) {
	for _, c := range []struct {
		mib  uint64
		want uint64
	}{
		{81559, 8 << 30}, // H100 80GB
		{40960, 8 << 30}, // A100 40GB: (40-3-1)/3 = 12 GiB
		{23028, 4 << 30}, // A10 24GB: (22.5-2-1)/3 = 6.5 GiB
		{24564, 4 << 30}, // a 24 GiB part: 8 GiB would need 27 GiB
		{16160, 4 << 30}, // V100 16GB: (15.8-1-1)/3 = 4.6 GiB
		{27648, 8 << 30}, // 27 GiB: exactly 3 x 8 + 1 + 2
		{27647, 4 << 30}, // a MiB less
		{12288, 2 << 30}, // 12 GiB
		{1024, 8},        // smaller than the reserve: min_bytes
	} {
		if got := maxBytesFor(c.mib<<20, 8, 8<<30); got != c.want {
			t.Errorf("%d MiB: %d, want %d", c.mib, got, c.want)
		}
	}
}

func TestNCCLSweepSizedByNVIDIASMI(t *testing.T) {
	dir := t.TempDir()
	smi := filepath.Join(dir, "nvidia-smi")
	write := func(script string) {
		if err := os.WriteFile(smi, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	plan := launchPlan(t, fmt.Sprintf("    nvidia_smi: %s\n", smi))
	r := &ncclRunner{probeKind: KindNCCL, plan: plan, self: plan.Nodes[0]}
	// The smallest GPU decides; the query is the documented CSV one.
	write(`[ "$*" = "--query-gpu=memory.total --format=csv,noheader,nounits" ] || exit 9
printf '81559\n23028\n81559\n'`)
	if got, note := r.sweepMaxBytes(context.Background()); got != 4<<30 || note != "" {
		t.Errorf("24 GB among 80 GB parts: %d %q", got, note)
	}
	// nvidia-smi failing: the default, and the result says why.
	write("echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'; exit 9\n")
	if got, note := r.sweepMaxBytes(context.Background()); got != 8<<30 || !strings.Contains(note, "exit status 9") || !strings.Contains(note, "set probes.nccl.max_bytes") {
		t.Errorf("failing nvidia-smi: %d %q", got, note)
	}
	write("echo '[N/A]'\n")
	if got, note := r.sweepMaxBytes(context.Background()); got != 8<<30 || !strings.Contains(note, `"[N/A]" is not a GPU's memory`) {
		t.Errorf("[N/A]: %d %q", got, note)
	}
	// A written max_bytes is never second-guessed, nor is nvidia-smi asked.
	plan = launchPlan(t, fmt.Sprintf("    nvidia_smi: %s\n    max_bytes: 16G\n", filepath.Join(dir, "absent")))
	r = &ncclRunner{probeKind: KindNCCL, plan: plan, self: plan.Nodes[0]}
	if got, note := r.sweepMaxBytes(context.Background()); got != 16<<30 || note != "" {
		t.Errorf("written max_bytes: %d %q", got, note)
	}
}
