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
	for _, v := range []string{"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_IB_GID_INDEX", "NCCL_IB_HCA", "NCCL_SOCKET_IFNAME"} {
		if !strings.Contains(cmd, " -x "+v+" ") {
			t.Errorf("mpirun does not export %s to remote ranks: %s", v, cmd)
		}
	}
	if res.NCCL == nil || res.NCCL.Transport == nil || res.NCCL.Transport.Network != "IB" || res.NCCL.Transport.GDRDMAChannels == 0 {
		t.Errorf("transport: %+v", res.NCCL.Transport)
	}
	for rank := 0; rank < 2; rank++ {
		env, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("env.%d", rank)))
		if err != nil {
			t.Fatalf("rank %d did not run: %v", rank, err)
		}
		for _, want := range []string{"NCCL_DEBUG=INFO\n", "NCCL_DEBUG_SUBSYS=INIT,NET\n", "NCCL_IB_GID_INDEX=3\n",
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
