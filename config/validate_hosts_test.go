package config

import (
	"strings"
	"testing"
)

// withManagementIP is minimalPlan with the node's management IP (line 6) replaced.
func withManagementIP(ip string) string {
	return strings.Replace(minimalPlan, "management_ip: 10.0.0.11", "management_ip: "+ip, 1)
}

// withComputeIP is minimalPlan with the interface's address (line 10) replaced.
func withComputeIP(ip string) string {
	return strings.Replace(minimalPlan, "ip: 192.168.100.11/24", "ip: "+ip, 1)
}

// ipv6Plan has IPv6 management addresses; nccl is YAML appended under probes (line 15).
func ipv6Plan(nccl string) string {
	return `networks:
  management: fd00::/64
  compute: 192.168.100.0/24
nodes:
  - name: node01
    management_ip: fd00::11
    interfaces:
      - {netdev: ens1f0, ip: 192.168.100.11/24}
  - name: node02
    management_ip: fd00::12
    interfaces:
      - {netdev: ens1f0, ip: 192.168.100.12/24}
probes:
  enabled: true
` + nccl
}

const ncclOn = `  nccl:
    enabled: true
    leader: node01
    command: /opt/nccl-tests/build/all_reduce_perf
    gpus_per_node: 8
`

func TestHostAddressesAndNames(t *testing.T) {
	for _, tc := range []errorCase{
		{
			name: "management IP is the network address",
			yaml: withManagementIP("10.0.0.0"),
			want: []wantError{{6, "nodes[0].management_ip", "10.0.0.0 is the network address of 10.0.0.0/24, not a host address"}},
		},
		{
			name: "management IP is the broadcast address",
			yaml: withManagementIP("10.0.0.255"),
			want: []wantError{{6, "nodes[0].management_ip", "10.0.0.255 is the broadcast address of 10.0.0.0/24"}},
		},
		{
			name: "management IP on a /31 point-to-point network",
			yaml: strings.Replace(withManagementIP("10.0.0.0"), "management: 10.0.0.0/24", "management: 10.0.0.0/31", 1),
		},
		{
			name: "IPv6 management IP is the Subnet-Router anycast address",
			yaml: strings.Replace(withManagementIP(`"fd00::"`), "management: 10.0.0.0/24", "management: fd00::/64", 1),
			want: []wantError{{6, "nodes[0].management_ip", "fd00:: is the Subnet-Router anycast address of fd00::/64"}},
		},
		{
			name: "compute IP is the broadcast address",
			yaml: withComputeIP("192.168.100.255/24"),
			want: []wantError{{10, "nodes[0].interfaces[0].ip", "192.168.100.255/24 is the broadcast address of 192.168.100.0/24"}},
		},
		{
			name: "compute IP is the network address",
			yaml: withComputeIP("192.168.100.0/24"),
			want: []wantError{{10, "nodes[0].interfaces[0].ip", "192.168.100.0/24 is the network address of 192.168.100.0/24"}},
		},
		{
			name: "compute IP is the network address of its own, longer prefix",
			yaml: withComputeIP("192.168.100.128/25"),
			want: []wantError{{10, "nodes[0].interfaces[0].ip", "192.168.100.128/25 is the network address of 192.168.100.128/25"}},
		},
		{
			name: "compute IP written as /32 is still the network's broadcast",
			yaml: withComputeIP("192.168.100.255/32"),
			want: []wantError{{10, "nodes[0].interfaces[0].ip", "is the broadcast address of 192.168.100.0/24"}},
		},
		{
			name: "compute IPs next to the network and broadcast addresses are hosts",
			yaml: strings.Replace(withComputeIP("192.168.100.1/24"), "  - name: node01", "  - name: node00\n    management_ip: 10.0.0.254\n    interfaces: [{netdev: ens1f0, ip: 192.168.100.254/24}]\n  - name: node01", 1),
		},
		{
			name: "node names that differ only in case",
			yaml: strings.Replace(twoNodes, "name: node02", "name: NODE01", 1),
			want: []wantError{{11, "nodes[1].name", "NODE01 differs from node01, the name of nodes[0] (line 5), only in letter case"}},
		},
		{
			name: "gpus_per_node at the driver's limit",
			yaml: minimalPlan + "probes:\n  nccl:\n    gpus_per_node: 32\n",
		},
		{
			name: "absurd gpus_per_node",
			yaml: minimalPlan + "probes:\n  nccl:\n    gpus_per_node: 100000\n",
			want: []wantError{{13, "probes.nccl.gpus_per_node", "100000 is more than 32, the most GPUs the NVIDIA driver supports in one system"}},
		},
		{
			name: "IPv6 management IPs with the NCCL probe",
			yaml: ipv6Plan(ncclOn),
			want: []wantError{
				{6, "nodes[0].management_ip", "fd00::11 is an IPv6 address, which the NCCL probe cannot hand to mpirun: Open MPI's -H host:slots splits at the first ':'"},
				{10, "nodes[1].management_ip", "fd00::12 is an IPv6 address"},
			},
		},
		{
			name: "IPv6 management IPs without the NCCL probe",
			yaml: ipv6Plan(strings.Replace(ncclOn, "enabled: true", "enabled: false", 1)),
		},
	} {
		t.Run(tc.name, func(t *testing.T) { checkErrors(t, tc) })
	}
}
