package probes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/internal/testenv"
)

// TestNCCLCommandLineWithRealOpenMPI runs the NCCL probe's mpirun command
// line through the real Open MPI (Debian openmpi-bin) on localhost,
// launching a stand-in all_reduce_perf that records its argv and
// environment per rank: every rank must receive the NCCL variables the
// runner exports with -x, NCCL_DEBUG=INFO among them, and the argv
// nccl-tests expects. Rank 0 prints real NCCL_DEBUG=INFO lines and a real
// nccl-tests table, which the runner then judges. Local ranks inherit
// mpirun's environment, so on localhost the values arrive even without
// -x; remote ranks get only what -x names, which is asserted on the
// command line.
func TestNCCLCommandLineWithRealOpenMPI(t *testing.T) {
	mpirun := testenv.LookPath(t, "openmpi-bin", "mpirun")
	dir := t.TempDir()
	data, err := filepath.Abs(filepath.Join("parse", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	// The stand-in writes next to itself: mpirun need not forward any
	// variable of the test's own.
	script := fmt.Sprintf(`#!/bin/sh
here=$(dirname "$(readlink -f "$0")")
r="${OMPI_COMM_WORLD_RANK:-none}"
printf '%%s\n' "$*" > "$here/argv.$r"
env | grep '^NCCL_' | sort > "$here/env.$r"
if [ "$r" = 0 ]; then
	cat %q/nccl_info_roce_dgxh100_nccl_tests185.txt %q/nccl_info_gdrdma_nccl707.txt %q/nccl_oke_2x8_a100_healthy.txt
fi
`, data, data, data)
	bin := filepath.Join(dir, "all_reduce_perf")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	extra := ""
	if os.Geteuid() == 0 {
		extra = "    extra_mpirun_args: [--allow-run-as-root]\n"
	}
	doc := fmt.Sprintf(`
networks:
  management: 127.0.0.0/8
  compute: [192.168.100.0/24, 192.168.101.0/24]
expectations:
  mtu: 9000
  pfc_priority: 3
nodes:
  - name: node01
    management_ip: 127.0.0.1
    interfaces:
      - {netdev: ens1f0np0, rdma_device: mlx5_0, ip: 192.168.100.11/24}
      - {netdev: ens2f0np0, rdma_device: mlx5_1, ip: 192.168.101.11/24}
probes:
  enabled: true
  nccl:
    enabled: true
    leader: node01
    mpirun: %s
    command: %s
    gpus_per_node: 2
    max_bytes: 8G
    timeout: 90s
%s`, mpirun, bin, extra)
	plan, err := config.Parse("test.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	s := newTestScheduler(t, plan, fakeNode{rate: 400e9, gid: 3, gdr: true, gdrKnown: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res := s.runNCCL(ctx)
	if !res.Success {
		t.Fatalf("reason %q exit %d stderr %q; command %q", res.Reason, res.ExitCode, res.StderrTail, res.Command)
	}
	cmd := strings.Join(res.Command, " ")
	for _, v := range []string{"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_IB_HCA", "NCCL_SOCKET_IFNAME"} {
		if !strings.Contains(cmd, " -x "+v+" ") {
			t.Errorf("mpirun does not export %s to remote ranks: %s", v, cmd)
		}
	}
	if !strings.Contains(cmd, " --mca btl_tcp_if_include 127.0.0.0/8 --mca oob_tcp_if_include 127.0.0.0/8 ") {
		t.Errorf("Open MPI's own TCP is not kept on the management network: %s", cmd)
	}
	if res.NCCL == nil || res.NCCL.Transport == nil || res.NCCL.Transport.Network != "IB" || res.NCCL.Transport.GDRDMAChannels == 0 {
		t.Errorf("transport: %+v", res.NCCL.Transport)
	}
	for rank := 0; rank < 2; rank++ {
		env, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("env.%d", rank)))
		if err != nil {
			t.Fatalf("rank %d did not run: %v", rank, err)
		}
		for _, want := range []string{"NCCL_DEBUG=INFO\n", "NCCL_DEBUG_SUBSYS=INIT,NET\n",
			"NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n", "NCCL_SOCKET_IFNAME==ens1f0np0,ens2f0np0\n"} {
			if !strings.Contains(string(env), want) {
				t.Errorf("rank %d lacks %q:\n%s", rank, strings.TrimSpace(want), env)
			}
		}
		argv, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("argv.%d", rank)))
		if got := strings.TrimSpace(string(argv)); !strings.HasPrefix(got, "-b 8 -e ") || !strings.HasSuffix(got, "-f 2 -g 1") {
			t.Errorf("rank %d argv %q", rank, got)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "env.2")); err == nil {
		t.Error("a third rank ran: -np must be gpus_per_node × nodes")
	}
}

// TestNCCLPerNodeEnvWithRealOpenMPI runs a two-node plan through the real
// Open MPI on this machine, the second node reached over "ssh": Open MPI's
// rsh launcher runs a stand-in ssh that starts the remote daemon in an
// empty environment, as a login on another machine would, so the remote
// ranks get only what the command line carries. Each node's ranks must get
// that node's own netdevs and HCAs and the GID index the plan gives node02
// alone, the shared variables through -x, and nothing of mpirun's own
// environment; Open MPI's TCP stays on the management network.
func TestNCCLPerNodeEnvWithRealOpenMPI(t *testing.T) {
	mpirun := testenv.LookPath(t, "openmpi-bin", "mpirun")
	dir := t.TempDir()
	ssh := filepath.Join(dir, "ssh")
	if err := os.WriteFile(ssh, []byte(`#!/bin/sh
# ssh [options] host command...: record the host, run the command in a
# login's empty environment.
while [ $# -gt 0 ]; do case "$1" in -*) shift ;; *) break ;; esac; done
echo "$1" >> "$(dirname "$0")/ssh.hosts"
shift
exec /usr/bin/env -i PATH=/usr/bin:/bin HOME=/ /bin/sh -c "$*"
`), 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "all_reduce_perf")
	if err := os.WriteFile(bin, []byte(`#!/bin/sh
here=$(dirname "$(readlink -f "$0")")
env | grep -E '^(NCCL_|STANDIN_)' | sort > "$here/env.${OMPI_COMM_WORLD_RANK:-none}"
`), 0o755); err != nil {
		t.Fatal(err)
	}
	root := ""
	if os.Geteuid() == 0 {
		root = "--allow-run-as-root, "
	}
	doc := fmt.Sprintf(`
networks:
  management: 127.0.0.0/8
  compute: [192.168.100.0/24, 192.168.101.0/24]
expectations:
  mtu: 9000
  pfc_priority: 3
nodes:
  - name: node01
    management_ip: 127.0.0.1
    interfaces:
      - {netdev: ens1f0np0, rdma_device: mlx5_0, ip: 192.168.100.11/24}
      - {netdev: ens2f0np0, rdma_device: mlx5_1, ip: 192.168.101.11/24}
  - name: node02
    management_ip: 127.0.0.2
    interfaces:
      - {netdev: enp23s0f0np0, rdma_device: mlx5_4, ip: 192.168.100.12/24}
      - {netdev: enp24s0f0np0, rdma_device: mlx5_5, ip: 192.168.101.12/24}
probes:
  enabled: true
  nccl:
    enabled: true
    leader: node01
    mpirun: %s
    command: %s
    gpus_per_node: 1
    max_bytes: 1M
    timeout: 90s
    extra_mpirun_args: [%s--mca, plm_rsh_agent, %s]
    env: {NCCL_IB_TIMEOUT: 22}
    node_env:
      node02: {NCCL_IB_GID_INDEX: 5}
`, mpirun, bin, root, ssh)
	plan, err := config.Parse("test.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("STANDIN_LEADER_ONLY", "1")
	r := &ncclRunner{probeKind: KindNCCL, plan: plan, self: plan.Nodes[0]}
	l := r.launch(plan.NodeNames())
	argv := r.argv(l, 1<<20)
	env := os.Environ()
	for k, v := range l.shared {
		env = append(env, k+"="+v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := runCommand(ctx, 90*time.Second, argv, env, nil)
	if out.ExitCode != 0 || out.Err != nil {
		t.Fatalf("mpirun: exit %d %v\n%s\n%s\ncommand %q", out.ExitCode, out.Err, out.Stdout, out.Stderr, argv)
	}
	if hosts, _ := os.ReadFile(filepath.Join(dir, "ssh.hosts")); strings.TrimSpace(string(hosts)) != "127.0.0.2" {
		t.Fatalf("the second node was not reached through ssh: %q", hosts)
	}
	// The leader's local ranks also inherit mpirun's own environment
	// (STANDIN_LEADER_ONLY); node02's ranks get only what the command line carries.
	for rank, want := range []string{
		"NCCL_DEBUG=INFO\nNCCL_DEBUG_SUBSYS=INIT,NET\nNCCL_IB_FIFO_TC=106\nNCCL_IB_HCA==mlx5_0:1,mlx5_1:1\nNCCL_IB_TC=106\nNCCL_IB_TIMEOUT=22\nNCCL_SOCKET_IFNAME==ens1f0np0,ens2f0np0\nSTANDIN_LEADER_ONLY=1\n",
		"NCCL_DEBUG=INFO\nNCCL_DEBUG_SUBSYS=INIT,NET\nNCCL_IB_FIFO_TC=106\nNCCL_IB_GID_INDEX=5\nNCCL_IB_HCA==mlx5_4:1,mlx5_5:1\nNCCL_IB_TC=106\nNCCL_IB_TIMEOUT=22\nNCCL_SOCKET_IFNAME==enp23s0f0np0,enp24s0f0np0\n",
	} {
		got, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("env.%d", rank)))
		if err != nil {
			t.Fatalf("rank %d did not run: %v", rank, err)
		}
		if string(got) != want {
			t.Errorf("rank %d environment:\n%s\nwant\n%s", rank, got, want)
		}
	}
}
