package probes

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/internal/testenv"
	"github.com/roce-exporter/roce_exporter/probes/schedule"
)

// The group's mpirun command line runs under the real Open MPI: mpirun
// starts one rank per GPU slot of the group's hosts, exports the NCCL
// environment to every rank, and the stand-in all_reduce_perf (rank 0 prints
// a real nccl-tests output) is judged on its large-message bus bandwidth.
func TestNCCLGroupRealMPIRun(t *testing.T) {
	mpirun := testenv.LookPath(t, "openmpi-bin", "mpirun")
	dir := t.TempDir()
	capture, err := os.ReadFile(filepath.Join("parse", "testdata", "nccl_oke_2x8_a100_healthy.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "output.txt"), capture, 0o644); err != nil {
		t.Fatal(err)
	}
	// The stand-in records each rank's argv and NCCL environment; only rank 0
	// prints, as all_reduce_perf does.
	script := `#!/bin/sh
d=` + dir + `
r=${OMPI_COMM_WORLD_RANK:-x}
{ echo "argv $*"; env | grep -E '^(NCCL_|OMPI_COMM_WORLD_SIZE)' | sort; } > "$d/rank.$r"
[ "$r" = 0 ] && cat "$d/output.txt"
exit 0
`
	standin := filepath.Join(dir, "all_reduce_perf")
	if err := os.WriteFile(standin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// Open MPI refuses root without both (the runner's command line is the
		// plan's, which must not need --allow-run-as-root).
		t.Setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
		t.Setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
	}
	var nodes strings.Builder
	for i := 1; i <= 4; i++ {
		fmt.Fprintf(&nodes, "  - name: node%02d\n    management_ip: 127.0.0.%d\n    interfaces:\n      - {netdev: ens1f0np0, rdma_device: mlx5_0, ip: 192.168.100.%d/24}\n", i, i, 10+i)
	}
	plan, err := config.Parse("test.yaml", []byte(`
networks:
  management: 127.0.0.0/8
  compute: 192.168.100.0/24
nodes:
`+nodes.String()+`probes:
  enabled: true
  nccl:
    enabled: true
    mpirun: `+mpirun+`
    command: `+standin+`
    gpus_per_node: 1
    group_size: 2
    timeout: 60s
    min_bytes: 8
    max_bytes: 8G
    min_bus_bandwidth_gbytes: 100
    env: {NCCL_DEBUG: WARN}
`))
	if err != nil {
		t.Fatal(err)
	}
	// Every node's management address becomes 127.0.0.1, the one loopback
	// address Open MPI knows as this machine: the group's hosts are all local,
	// as -H localhost:k would be. (A plan refuses duplicate addresses.)
	for _, n := range plan.Nodes {
		n.ManagementIP = netip.MustParseAddr("127.0.0.1")
	}
	// Find an epoch in which node01 leads its group.
	var epoch int64
	for ; epoch < 100; epoch++ {
		if _, leads := schedule.NCCLGroupOf(plan.NodeNames(), 2, epoch, "node01"); leads {
			break
		}
	}
	group, _ := schedule.NCCLGroupOf(plan.NodeNames(), 2, epoch, "node01")
	s := newTestScheduler(t, plan, fakeNode{rate: 400e9, gid: 3})
	res := s.runNCCLGroup(context.Background(), epoch)
	if res == nil {
		t.Fatal("no result")
	}
	if !res.Success || res.Probe != KindNCCLGroup || res.Peer != group[1] {
		t.Fatalf("result %+v\nstderr %s", res, res.StderrTail)
	}
	if res.measuredBandwidth() != 237.52e9 {
		t.Errorf("judged bus bandwidth %v, want the capture's large-message 237.52 GB/s", res.measuredBandwidth())
	}
	wantArgv := []string{mpirun, "-np", "2", "-H", "127.0.0.1:1,127.0.0.1:1"}
	if !slices.Equal(res.Command[:5], wantArgv) {
		t.Errorf("command %q", res.Command)
	}
	for rank := range 2 {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rank.%d", rank)))
		if err != nil {
			t.Fatalf("rank %d did not run: %v", rank, err)
		}
		got := string(b)
		for _, want := range []string{"argv -b 8 -e 8589934592 -f 2 -g 1", "NCCL_DEBUG=WARN", "NCCL_IB_HCA=", "OMPI_COMM_WORLD_SIZE=2"} {
			if !strings.Contains(got, want) {
				t.Errorf("rank %d lacks %q:\n%s", rank, want, got)
			}
		}
	}
	// One series per leader: a second group replaces the first.
	s.store.Add(&Result{Probe: KindNCCLGroup, Peer: "node09", Start: res.Start, Success: true})
	n := 0
	for _, r := range s.store.Latest() {
		if r.Probe == KindNCCLGroup {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d group results kept, want the last one", n)
	}
}
