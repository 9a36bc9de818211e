package health

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/internal/testenv"
	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/reader"
)

// The multi-NIC checks on a real kernel's state: a host namespace with two
// veth "rails" in one subnet (rail0 10.226.0.11/24, rail1 .12) facing a
// peer namespace (peer0 .21, peer1 .22), read by the exporter's own reader
// inside the host namespace (procfs sysctls, rtnetlink rules, routes and
// neighbours, the interfaces' addresses). This machine has no RDMA NIC, so
// the snapshot gets a stand-in RDMA port per rail; everything the checks
// judge is the kernel's. With the kernel's defaults the ARP flux happens
// (both peer addresses resolve on rail0 to one MAC) and the checks fail;
// with the fixes their fix texts give (sysctls on conf.all, a table and a
// rule per rail, arp_ignore on the peer), they pass.
func TestMultiNICChecksInNetns(t *testing.T) {
	testenv.RequireRoot(t)
	ip := testenv.LookPath(t, "iproute2", "ip")
	tag := fmt.Sprint(os.Getpid() % 100000)
	host, peer := "roce-hygiene26-host-"+tag, "roce-hygiene26-peer-"+tag
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, ns := range []string{host, peer} {
		run("netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command(ip, "netns", "del", ns).Run() })
		run("-n", ns, "link", "set", "lo", "up")
	}
	for i := 0; i < 2; i++ {
		run("link", "add", fmt.Sprintf("rail%d", i), "netns", host, "type", "veth", "peer", "name", fmt.Sprintf("peer%d", i), "netns", peer)
		run("-n", host, "link", "set", fmt.Sprintf("rail%d", i), "up")
		run("-n", peer, "link", "set", fmt.Sprintf("peer%d", i), "up")
		run("-n", host, "addr", "add", fmt.Sprintf("10.226.0.%d/24", 11+i), "dev", fmt.Sprintf("rail%d", i))
		run("-n", peer, "addr", "add", fmt.Sprintf("10.226.0.%d/24", 21+i), "dev", fmt.Sprintf("peer%d", i))
	}
	traffic := func() {
		// Rail-matched traffic, as NCCL and the probes send it.
		for i := 0; i < 2; i++ {
			_ = exec.Command(ip, "netns", "exec", host, "ping", "-c1", "-W1", "-I", fmt.Sprintf("10.226.0.%d", 11+i), fmt.Sprintf("10.226.0.%d", 21+i)).Run()
		}
	}
	child := func(phase string) string {
		t.Helper()
		cmd := exec.Command(ip, "netns", "exec", host, os.Args[0], "-test.run=^TestMultiNICNetnsChild$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "ROCE_TEST_MULTINIC_PHASE="+phase)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("checks in %s (%s): %v\n%s", host, phase, err, out)
		}
		return string(out)
	}

	traffic()
	t.Logf("kernel defaults:\n%s", grepFindings(child("defaults")))

	for _, ns := range []string{host, peer} {
		if out, err := exec.Command(ip, "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.conf.all.arp_ignore=1", "net.ipv4.conf.all.arp_announce=2", "net.ipv4.conf.all.rp_filter=2").CombinedOutput(); err != nil {
			t.Fatalf("sysctl in %s: %v\n%s", ns, err, out)
		}
		run("-n", ns, "neigh", "flush", "all")
	}
	for i := 0; i < 2; i++ {
		a := fmt.Sprintf("10.226.0.%d", 11+i)
		run("-n", host, "route", "replace", "10.226.0.0/24", "dev", fmt.Sprintf("rail%d", i), "src", a, "table", fmt.Sprint(100+i))
		run("-n", host, "rule", "add", "from", a, "table", fmt.Sprint(100+i), "priority", fmt.Sprint(1000+i))
	}
	traffic()
	t.Logf("with the fixes:\n%s", grepFindings(child("fixed")))
}

func grepFindings(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "finding:") {
			keep = append(keep, strings.TrimSpace(l))
		}
	}
	return strings.Join(keep, "\n")
}

const netnsPlan = `cluster: netns
networks:
  management: 10.0.0.0/24
  compute: 10.226.0.0/24
expectations:
  mtu: 1500
nodes:
  - name: host
    management_ip: 10.0.0.1
    interfaces:
      - {netdev: rail0, rdma_device: rxe0, ip: 10.226.0.11/24}
      - {netdev: rail1, rdma_device: rxe1, ip: 10.226.0.12/24}
  - name: peer
    management_ip: 10.0.0.2
    interfaces:
      - {netdev: peer0, rdma_device: rxe0, ip: 10.226.0.21/24}
      - {netdev: peer1, rdma_device: rxe1, ip: 10.226.0.22/24}
`

// TestMultiNICNetnsChild runs only as the child of the test above, inside
// the host namespace (ip netns exec mounts its /sys).
func TestMultiNICNetnsChild(t *testing.T) {
	phase := os.Getenv("ROCE_TEST_MULTINIC_PHASE")
	if phase == "" {
		t.Skip("child of TestMultiNICChecksInNetns")
	}
	r, err := reader.New(reader.Options{Timeout: 5 * time.Second, Sources: []string{node.SourceNetdev, node.SourceHost},
		NetdevInclude: regexp.MustCompile(`^rail[01]$`)}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	snap := r.Read().Snapshot
	if snap.Host == nil || len(snap.Interfaces) != 2 {
		t.Fatalf("read %+v, interfaces %v", snap.Sources, snap.InterfaceNames())
	}
	for i := 0; i < 2; i++ {
		nd, dev := fmt.Sprintf("rail%d", i), fmt.Sprintf("rxe%d", i)
		snap.Devices = append(snap.Devices, &node.Device{Name: dev, Driver: "mlx5_core", HCAType: "MT4129", BoardID: "MT_0000000838",
			Ports: []*node.Port{{Device: dev, Number: 1, LinkLayer: node.LinkLayerEthernet, State: 4, StateName: "ACTIVE", PhysState: 5, PhysStateName: "LinkUp", Interface: nd}}})
		snap.Interfaces[nd].RDMADevice, snap.Interfaces[nd].Port = dev, 1
	}
	plan, err := config.Parse("netns.yaml", []byte(netnsPlan))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Status{}
	for _, f := range Run(snap, plan, "host") {
		switch f.ID {
		case "arp_flux_sysctls", "per_rail_source_routing", "neighbor_entries_on_rail":
			b, _ := json.Marshal(f)
			t.Logf("finding: %s", b)
			got[f.ID+" "+f.Subject] = f.Status
		}
	}
	want := map[string]Status{
		"arp_flux_sysctls rail0": StatusOK, "arp_flux_sysctls rail1": StatusOK,
		"per_rail_source_routing rail0": StatusOK, "per_rail_source_routing rail1": StatusOK,
		"neighbor_entries_on_rail rail0": StatusOK, "neighbor_entries_on_rail rail1": StatusOK,
	}
	if phase == "defaults" {
		want = map[string]Status{
			"arp_flux_sysctls rail0": StatusFail, "arp_flux_sysctls rail1": StatusFail,
			// rail0 leaves by itself only through main's first route.
			"per_rail_source_routing rail0": StatusWarn, "per_rail_source_routing rail1": StatusFail,
			// The ARP flux itself: peer1's address resolved on rail0 with
			// peer0's MAC.
			"neighbor_entries_on_rail rail0": StatusFail, "neighbor_entries_on_rail rail1": StatusWarn,
		}
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %s, want %s", k, got[k], w)
		}
	}
}
