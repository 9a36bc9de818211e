package health

import (
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/node"
)

type checkCase struct {
	name string
	// noPlan runs without a plan; plan edits the test plan otherwise.
	noPlan bool
	plan   func(p *config.Plan)
	// node is this node's name: "" means node01, "-" means no name at all.
	node string
	snap func(s *node.Snapshot)
	// prev, when set, gives the snapshot a previous sample 10s earlier (the
	// healthy baseline) and may edit either side.
	prev func(prev, cur *node.Snapshot)

	id, subject string
	want        Status
	// msg and fix are substrings the message and fix must contain.
	msg []string
	fix []string
	// notMsg must not appear in the message, notFix in the fix.
	notMsg []string
	notFix []string
}

func runCase(t *testing.T, c checkCase) {
	t.Helper()
	s := buildSnap()
	if c.snap != nil {
		c.snap(s)
	}
	if c.prev != nil {
		c.prev(withPrevious(s, 10*time.Second), s)
	}
	var plan *config.Plan
	if !c.noPlan {
		plan = testPlan(t)
		if c.plan != nil {
			c.plan(plan)
		}
	}
	node := c.node
	switch node {
	case "":
		node = "node01"
	case "-":
		node = ""
	}
	fs := Run(s, plan, node)
	checkInvariants(t, fs)
	f, ok := find(fs, c.id, c.subject)
	if !ok {
		t.Fatalf("no %s finding for %s; got:\n%s", c.id, c.subject, dump(fs))
	}
	if f.Status != c.want {
		t.Errorf("%s %s: status %s, want %s\nmessage: %s\nfix: %s", c.id, c.subject, f.Status, c.want, f.Message, f.Fix)
	}
	for _, m := range c.msg {
		if !strings.Contains(f.Message, m) {
			t.Errorf("%s %s: message %q lacks %q", c.id, c.subject, f.Message, m)
		}
	}
	for _, m := range c.notMsg {
		if strings.Contains(f.Message, m) {
			t.Errorf("%s %s: message %q must not contain %q", c.id, c.subject, f.Message, m)
		}
	}
	for _, m := range c.fix {
		if !strings.Contains(f.Fix, m) {
			t.Errorf("%s %s: fix %q lacks %q", c.id, c.subject, f.Fix, m)
		}
	}
	for _, m := range c.notFix {
		if strings.Contains(f.Fix, m) {
			t.Errorf("%s %s: fix %q must not contain %q", c.id, c.subject, f.Fix, m)
		}
	}
}

func runCases(t *testing.T, cases []checkCase) {
	for _, c := range cases {
		t.Run(c.id+"/"+c.name, func(t *testing.T) { runCase(t, c) })
	}
}

func TestNodeChecks(t *testing.T) {
	unboundCX7 := func(s *node.Snapshot) {
		s.Devices = nil
		s.Interfaces, s.PCI, s.Ethtool, s.DCB = nil, nil, nil, nil
		s.Modules = map[string]bool{"ib_core": false, "ib_uverbs": false, "mlx5_core": false, "mlx5_ib": false}
		s.NICs = []node.NIC{{Address: "0000:18:00.0", VendorID: "0x15b3", DeviceID: "0x1021", Class: "0x020000"}}
	}
	runCases(t, []checkCase{
		{name: "devices", id: "rdma_nic_present", subject: "node", want: StatusOK, msg: []string{"3 RDMA device(s)", "mlx5_0, mlx5_1, mlx5_2", "mlx5_core"}},
		{name: "unbound ConnectX-7", snap: unboundCX7, id: "rdma_nic_present", subject: "node", want: StatusFail,
			msg: []string{"no RDMA driver", "ConnectX-7", "0000:18:00.0"}, fix: []string{"modprobe -a mlx5_core mlx5_ib ib_uverbs"}},
		{name: "no NIC at all", snap: func(s *node.Snapshot) { unboundCX7(s); s.NICs = nil }, id: "rdma_nic_present", subject: "node", want: StatusFail,
			msg: []string{"no Mellanox/NVIDIA, Broadcom or Intel"}, fix: []string{"lspci"}},
		{name: "no NIC, pcie collector off", snap: func(s *node.Snapshot) { unboundCX7(s); s.NICs = nil; delete(s.Sources, "pcie") },
			id: "rdma_nic_present", subject: "node", want: StatusFail, msg: []string{"pcie collector is disabled"}, fix: []string{"--collector.pcie"}},
		{name: "bound but no ibdev", snap: func(s *node.Snapshot) { unboundCX7(s); s.NICs[0].Driver = "mlx5_core" },
			id: "rdma_nic_present", subject: "node", want: StatusOK, msg: []string{"driver mlx5_core", "see rdma_driver_loaded"}},
		{name: "software only", snap: func(s *node.Snapshot) {
			s.Devices = s.Devices[:2]
			s.Devices[0].Name, s.Devices[0].Driver, s.Devices[0].PCIAddress = "rxe0", "", ""
			// rxe's device link leads to the netdev's parent: its driver is the plain NIC's.
			s.Devices[1].Name, s.Devices[1].Driver, s.Devices[1].PCIAddress = "siw_eth0", "virtio_net", ""
		}, id: "rdma_nic_present", subject: "node", want: StatusFail, msg: []string{"only software RDMA devices (rxe0, siw_eth0"}},
		{name: "software by driver", snap: func(s *node.Snapshot) {
			s.Devices = s.Devices[:1]
			s.Devices[0].Name, s.Devices[0].Driver = "roce_lab", "rdma_rxe"
		}, id: "rdma_nic_present", subject: "node", want: StatusFail, msg: []string{"only software RDMA devices (roce_lab"}},
		{name: "hardware without a device link", snap: func(s *node.Snapshot) {
			for _, d := range s.Devices {
				d.Driver, d.PCIAddress = "", ""
			}
		}, id: "rdma_nic_present", subject: "node", want: StatusWarn,
			msg: []string{"PCI parent could not be read: mlx5_0, mlx5_1, mlx5_2"}, notMsg: []string{"software"}, fix: []string{"ls -l /sys/class/infiniband/mlx5_0/device", "--path.sysfs"}},
		{name: "one device without a device link", snap: func(s *node.Snapshot) { s.Devices[2].Driver, s.Devices[2].PCIAddress = "", "" },
			id: "rdma_nic_present", subject: "node", want: StatusWarn, msg: []string{"2 RDMA device(s) with a NIC driver bound: mlx5_0, mlx5_1", "could not be read: mlx5_2"}},
		{name: "software beside a NIC", snap: func(s *node.Snapshot) {
			s.Devices[2].Name, s.Devices[2].Driver, s.Devices[2].PCIAddress = "rxe0", "", ""
		},
			id: "rdma_nic_present", subject: "node", want: StatusOK, msg: []string{"2 RDMA device(s) with a NIC driver bound: mlx5_0, mlx5_1"}},

		{name: "loaded", id: "rdma_driver_loaded", subject: "node", want: StatusOK, msg: []string{"mlx5_core", "mlx5_ib", "ib_uverbs"}},
		{name: "nothing loaded", snap: unboundCX7, id: "rdma_driver_loaded", subject: "node", want: StatusFail,
			msg: []string{"no RDMA driver", "mlx5_core, mlx5_ib, ib_uverbs not loaded"}, fix: []string{"rdma_nic_present's fix above loads mlx5"}, notFix: []string{"modprobe"}},
		{name: "mlx5_ib missing", snap: func(s *node.Snapshot) {
			unboundCX7(s)
			s.NICs[0].Driver = "mlx5_core"
			s.Modules["mlx5_core"], s.Modules["ib_uverbs"] = true, true
		}, id: "rdma_driver_loaded", subject: "node", want: StatusFail, msg: []string{"mlx5_ib not loaded"}, notMsg: []string{"mlx5_core not", "ib_uverbs not"}, fix: []string{"modprobe -a mlx5_core mlx5_ib ib_uverbs"}, notFix: []string{"rdma_nic_present"}},
		{name: "all loaded but no ibdev", snap: func(s *node.Snapshot) {
			unboundCX7(s)
			s.NICs[0].Driver = "mlx5_core"
			for _, m := range []string{"mlx5_core", "mlx5_ib", "ib_uverbs"} {
				s.Modules[m] = true
			}
		}, id: "rdma_driver_loaded", subject: "node", want: StatusFail, msg: []string{"no RDMA device was registered"}, fix: []string{"enable_roce", "dmesg"}},
		{name: "built in", snap: func(s *node.Snapshot) { s.Modules["mlx5_ib"], s.Modules["mlx5_core"] = false, false },
			id: "rdma_driver_loaded", subject: "node", want: StatusOK, msg: []string{"built in", "mlx5_ib"}},
		{name: "ib_uverbs missing", snap: func(s *node.Snapshot) {
			s.Modules["ib_uverbs"] = false
			for _, d := range s.Devices {
				d.VerbsDevices, d.VerbsPresent = nil, nil
			}
		}, id: "rdma_driver_loaded", subject: "node", want: StatusFail, msg: []string{"ib_uverbs not loaded"}, fix: []string{"modprobe ib_uverbs"}},
		{name: "module list unread", snap: func(s *node.Snapshot) { s.Modules = nil }, id: "rdma_driver_loaded", subject: "node", want: StatusSkipped, msg: []string{"module list not read"}},
		{name: "no NIC", snap: func(s *node.Snapshot) { unboundCX7(s); s.NICs = nil }, id: "rdma_driver_loaded", subject: "node", want: StatusSkipped, msg: []string{"no RDMA-capable NIC"}},

		{name: "known", id: "plan_node_known", subject: "node", want: StatusOK, msg: []string{"node01", "3 compute interface(s)"}},
		{name: "unknown node", node: "gpu-17", id: "plan_node_known", subject: "node", want: StatusFail,
			msg: []string{`"gpu-17"`, "node01, node02"}, fix: []string{"the exporter and the doctor --node.name", "add the node"}},
		{name: "no plan", noPlan: true, id: "plan_node_known", subject: "node", want: StatusSkipped, msg: []string{SkipNoPlan}},
		{name: "no name", node: "-", id: "plan_node_known", subject: "node", want: StatusFail, msg: []string{"no name given"}, fix: []string{"--node.name"}},
		{name: "unknown node skips plan checks", node: "gpu-17", id: "mtu_matches_plan", subject: "node", want: StatusSkipped, msg: []string{`"gpu-17" is not in the cluster plan`}},

		{name: "present", id: "planned_interface_present", subject: "ens2f0np0", want: StatusOK, msg: []string{"rail 1", "mlx5_1 port 1"}},
		{name: "netdev missing", plan: func(p *config.Plan) { p.Nodes[0].Interfaces[1].Netdev = "ens9f0np0" },
			id: "planned_interface_present", subject: "ens9f0np0", want: StatusFail,
			msg: []string{"ens9f0np0 (rail 1) is not on this node", "ens1f0np0, ens2f0np0, ens3f0np0", "mlx5_1 exists and backs ens2f0np0"}, fix: []string{"ip -br link"}},
		{name: "device swapped", plan: func(p *config.Plan) { p.Nodes[0].Interfaces[0].RDMADevice = "mlx5_2" },
			id: "planned_interface_present", subject: "ens1f0np0", want: StatusFail,
			msg: []string{"plan pairs ens1f0np0 with mlx5_2", "backed by mlx5_0"}, fix: []string{"rdma_device of ens1f0np0", "mlx5_0"}},
		{name: "netdev without RDMA port", plan: func(p *config.Plan) { p.Nodes[0].Interfaces[0].RDMADevice = "" }, snap: func(s *node.Snapshot) {
			port(s, 0).Interface = ""
			s.Interfaces["ens1f0np0"].RDMADevice = ""
		}, id: "planned_interface_present", subject: "ens1f0np0", want: StatusFail, msg: []string{"no RDMA port is bound"}, fix: []string{"rdma link show"}},
		{name: "no plan", noPlan: true, id: "planned_interface_present", subject: "node", want: StatusSkipped, msg: []string{SkipNoPlan}},

		{name: "present", id: "verbs_device_usable", subject: "mlx5_1", want: StatusOK, msg: []string{"/dev/infiniband/uverbs1"}},
		{name: "container without /dev/infiniband", snap: func(s *node.Snapshot) { s.Devices[1].VerbsPresent = nil },
			id: "verbs_device_usable", subject: "mlx5_1", want: StatusFail, msg: []string{"/dev/infiniband/uverbs1 does not exist"}, fix: []string{"--device=/dev/infiniband", "hostPath /dev/infiniband"}},
		{name: "no uverbs in sysfs", snap: func(s *node.Snapshot) { s.Devices[1].VerbsDevices, s.Devices[1].VerbsPresent = nil, nil },
			id: "verbs_device_usable", subject: "mlx5_1", want: StatusFail, msg: []string{"no uverbs device"}, fix: []string{"modprobe ib_uverbs"}},
	})
}

func TestLinkChecks(t *testing.T) {
	down := func(s *node.Snapshot) {
		p := port(s, 1)
		p.State, p.StateName, p.PhysState, p.PhysStateName, p.RateBitsPerSecond = 1, "DOWN", 3, "Disabled", 0
		s.Interfaces["ens2f0np0"].OperState = "down"
		s.Interfaces["ens2f0np0"].SpeedMbps = -1
	}
	runCases(t, []checkCase{
		{name: "active", id: "port_active", subject: "mlx5_0", want: StatusOK, msg: []string{"4: ACTIVE", "5: LinkUp"}},
		{name: "down", snap: down, id: "port_active", subject: "mlx5_1", want: StatusFail,
			msg: []string{"1: DOWN", "3: Disabled", "ens2f0np0 is down"}, fix: []string{"ip link set dev ens2f0np0 up", "ethtool -m ens2f0np0", "mlxlink -d 0000:28:00.0"}},
		{name: "IB without subnet manager", snap: func(s *node.Snapshot) {
			makeIB(s)
			p := port(s, 0)
			p.State, p.StateName = 2, "INIT"
		}, id: "port_active", subject: "mlx5_0", want: StatusFail, msg: []string{"2: INIT", "no subnet manager"}, fix: []string{"opensm", "UFM", "do not start another"}},
		{name: "planned port missing", plan: func(p *config.Plan) {
			p.Nodes[0].Interfaces[2].Netdev, p.Nodes[0].Interfaces[2].RDMADevice = "ens9f0np0", "mlx5_9"
		},
			id: "port_active", subject: "mlx5_9", want: StatusSkipped, msg: []string{"ens9f0np0 is not on this node"}},

		{name: "ethernet", id: "link_layer_expected", subject: "mlx5_2", want: StatusOK},
		{name: "infiniband", snap: func(s *node.Snapshot) { port(s, 2).LinkLayer = "InfiniBand" },
			id: "link_layer_expected", subject: "mlx5_2", want: StatusFail, msg: []string{"InfiniBand", "expects Ethernet"}, fix: []string{"mlxconfig -d 0000:38:00.0 set LINK_TYPE_P1=2"}},
		{name: "no plan", noPlan: true, id: "link_layer_expected", subject: "node", want: StatusSkipped, msg: []string{SkipNoPlan}},

		{name: "as planned", id: "link_rate_matches_plan", subject: "mlx5_0", want: StatusOK, msg: []string{"400 Gb/s"}},
		{name: "slower", snap: func(s *node.Snapshot) { port(s, 0).RateBitsPerSecond = 200e9 },
			id: "link_rate_matches_plan", subject: "mlx5_0", want: StatusFail, msg: []string{"200 Gb/s", "expects 400 Gb/s"}, fix: []string{"ethtool -m ens1f0np0", "--show-fec"}},
		{name: "faster", snap: func(s *node.Snapshot) { port(s, 0).RateBitsPerSecond = 800e9 },
			id: "link_rate_matches_plan", subject: "mlx5_0", want: StatusWarn, msg: []string{"800 Gb/s"}, fix: []string{"link_rate_gbps"}},
		{name: "no expectation", plan: func(p *config.Plan) { p.Expectations.LinkRateGbps = 0 },
			id: "link_rate_matches_plan", subject: "node", want: StatusSkipped, msg: []string{"link_rate_gbps"}},
		{name: "port down", snap: down, id: "link_rate_matches_plan", subject: "mlx5_1", want: StatusSkipped, msg: []string{"port is down"}},

		{name: "matches", id: "port_rate_matches_netdev", subject: "mlx5_0", want: StatusOK, msg: []string{"400 Gb/s", "400000 Mb/s"}},
		{name: "40G placeholder", snap: func(s *node.Snapshot) { port(s, 0).RateBitsPerSecond = 40e9 },
			id: "port_rate_matches_netdev", subject: "mlx5_0", want: StatusWarn, msg: []string{"40 Gb/s (4X QDR)", "placeholder", "400000 Mb/s"}, fix: []string{"firmware"}},
		{name: "no rate on up port", snap: func(s *node.Snapshot) { port(s, 0).RateBitsPerSecond = 0 },
			id: "port_rate_matches_netdev", subject: "mlx5_0", want: StatusWarn, msg: []string{"reports no rate"}},
		{name: "down", snap: down, id: "port_rate_matches_netdev", subject: "mlx5_1", want: StatusSkipped, msg: []string{"down"}},
		{name: "infiniband", snap: makeIB, id: "port_rate_matches_netdev", subject: "mlx5_1", want: StatusSkipped, msg: []string{SkipInfiniBand}},

		{name: "configured", id: "compute_ip_configured", subject: "ens2f0np0", want: StatusOK, msg: []string{"192.168.101.11/24 is on ens2f0np0"}},
		{name: "missing", snap: func(s *node.Snapshot) {
			s.Interfaces["ens2f0np0"].Addresses = s.Interfaces["ens2f0np0"].Addresses[1:]
		},
			id: "compute_ip_configured", subject: "ens2f0np0", want: StatusFail, msg: []string{"192.168.101.11/24 is not on ens2f0np0", "fe80::"},
			fix: []string{"ip addr add 192.168.101.11/24 dev ens2f0np0", "netplan apply", "nmcli connection modify ens2f0np0"}},
		{name: "on the other port", snap: func(s *node.Snapshot) {
			a, b := s.Interfaces["ens1f0np0"], s.Interfaces["ens2f0np0"]
			a.Addresses, b.Addresses = b.Addresses, a.Addresses
		}, id: "compute_ip_configured", subject: "ens2f0np0", want: StatusFail, msg: []string{"it is on ens1f0np0 instead"}},
		{name: "prefix differs", snap: func(s *node.Snapshot) {
			s.Interfaces["ens2f0np0"].Addresses[0] = netip.MustParsePrefix("192.168.101.11/16")
		}, id: "compute_ip_configured", subject: "ens2f0np0", want: StatusWarn, msg: []string{"192.168.101.11/16", "192.168.101.11/24"}, fix: []string{"ip addr del 192.168.101.11/16"}},
		{name: "addresses unknown, GID evidence", snap: func(s *node.Snapshot) {
			s.Interfaces["ens2f0np0"].Addresses, s.Interfaces["ens2f0np0"].AddressesKnown = nil, false
		}, id: "compute_ip_configured", subject: "ens2f0np0", want: StatusOK, msg: []string{"GID index 3"}},
		{name: "addresses unknown, no evidence", snap: func(s *node.Snapshot) {
			s.Interfaces["ens2f0np0"].Addresses, s.Interfaces["ens2f0np0"].AddressesKnown = nil, false
			port(s, 1).GIDs = port(s, 1).GIDs[:2]
		}, id: "compute_ip_configured", subject: "ens2f0np0", want: StatusSkipped, msg: []string{"were not read"}},
		{name: "down port lost its address", snap: func(s *node.Snapshot) {
			down(s)
			s.Interfaces["ens2f0np0"].Addresses = s.Interfaces["ens2f0np0"].Addresses[1:]
		}, id: "compute_ip_configured", subject: "ens2f0np0", want: StatusSkipped, msg: []string{"is down", "port_active"}},
		{name: "no address planned", plan: func(p *config.Plan) { p.Nodes[0].Interfaces[1].Address = netip.Prefix{} },
			id: "compute_ip_configured", subject: "ens2f0np0", want: StatusSkipped, msg: []string{"no address"}},

		{name: "as planned", id: "mtu_matches_plan", subject: "ens3f0np0", want: StatusOK, msg: []string{"9000"}},
		{name: "1500", snap: func(s *node.Snapshot) { s.Interfaces["ens3f0np0"].MTU = 1500 },
			id: "mtu_matches_plan", subject: "ens3f0np0", want: StatusFail, msg: []string{"MTU 1500", "expects 9000"},
			fix: []string{"ip link set dev ens3f0np0 mtu 9000", "netplan", "802-3-ethernet.mtu 9000"}},
		{name: "plan lost a zero", plan: func(p *config.Plan) { p.Expectations.MTU = 900 }, id: "mtu_matches_plan", subject: "ens3f0np0", want: StatusWarn,
			msg: []string{"MTU 9000, the plan expects 900", "the plan is more likely wrong"}, fix: []string{"correct expectations.mtu in the plan (to 9000", "512-byte path MTU"}},
		{name: "plan small, port smaller", plan: func(p *config.Plan) { p.Expectations.MTU = 1500 }, snap: func(s *node.Snapshot) { s.Interfaces["ens3f0np0"].MTU = 1000 },
			id: "mtu_matches_plan", subject: "ens3f0np0", want: StatusFail, fix: []string{"mtu 1500"}},
		{name: "no expectation", plan: func(p *config.Plan) { p.Expectations.MTU = 0 }, id: "mtu_matches_plan", subject: "node", want: StatusSkipped, msg: []string{"expectations.mtu"}},
		{name: "unreadable", snap: func(s *node.Snapshot) { s.Interfaces["ens3f0np0"].MTU = 0 }, id: "mtu_matches_plan", subject: "ens3f0np0", want: StatusSkipped},

		{name: "9000", id: "roce_mtu_4096_possible", subject: "ens1f0np0", want: StatusOK, msg: []string{"RoCE path MTU 4096"}},
		{name: "4096 is the classic mistake", snap: func(s *node.Snapshot) { s.Interfaces["ens1f0np0"].MTU = 4096 },
			id: "roce_mtu_4096_possible", subject: "ens1f0np0", want: StatusWarn, msg: []string{"MTU 4096", "2048-byte path MTU", "96 bytes", "4192"}, fix: []string{"mtu 9000"}},
		{name: "4192 is enough", noPlan: true, snap: func(s *node.Snapshot) { s.Interfaces["ens1f0np0"].MTU = 4192 },
			id: "roce_mtu_4096_possible", subject: "ens1f0np0", want: StatusOK, msg: []string{"RoCE path MTU 4096"}},
		{name: "infiniband", snap: makeIB, id: "roce_mtu_4096_possible", subject: "ens1f0np0", want: StatusSkipped, msg: []string{SkipInfiniBand}},

		{name: "same", id: "mtu_consistent", subject: "ens2f0np0", want: StatusOK, msg: []string{"9000 on all 3"}},
		{name: "odd one out", noPlan: true, snap: func(s *node.Snapshot) { s.Interfaces["ens2f0np0"].MTU = 1500 },
			id: "mtu_consistent", subject: "ens2f0np0", want: StatusWarn, msg: []string{"MTU 1500", "2 other", "9000"}, fix: []string{"mtu 9000"}},
		{name: "majority side is fine", noPlan: true, snap: func(s *node.Snapshot) { s.Interfaces["ens2f0np0"].MTU = 1500 },
			id: "mtu_consistent", subject: "ens1f0np0", want: StatusOK},
		{name: "tie goes to the jumbo MTU", noPlan: true, snap: func(s *node.Snapshot) {
			s.Interfaces["ens2f0np0"].MTU = 1500
			s.Interfaces["ens3f0np0"].MTU = 0
		}, id: "mtu_consistent", subject: "ens2f0np0", want: StatusWarn, msg: []string{"MTU 1500", "9000"}},

		{name: "index 3", id: "roce_v2_gid_present", subject: "ens1f0np0", want: StatusOK, msg: []string{"RoCE v2 GID index 3 carries 192.168.100.11 on ens1f0np0"}},
		{name: "index follows the table", snap: func(s *node.Snapshot) { port(s, 0).GIDs = gids("ens1f0np0", railIP(0), 7) },
			id: "roce_v2_gid_present", subject: "ens1f0np0", want: StatusOK, msg: []string{"index 7"}},
		{name: "v1 only", snap: func(s *node.Snapshot) { port(s, 0).GIDs = port(s, 0).GIDs[:3] },
			id: "roce_v2_gid_present", subject: "ens1f0np0", want: StatusFail, msg: []string{"no RoCE v2 GID carries 192.168.100.11"}, fix: []string{"enable_roce"}},
		{name: "GID for another address", snap: func(s *node.Snapshot) {
			port(s, 0).GIDs = gids("ens1f0np0", netip.MustParseAddr("10.9.9.9"), 3)
			s.Interfaces["ens1f0np0"].Addresses = s.Interfaces["ens1f0np0"].Addresses[1:]
		}, id: "roce_v2_gid_present", subject: "ens1f0np0", want: StatusFail, msg: []string{"index 3 = 10.9.9.9"}, fix: []string{"compute_ip_configured"}},
		{name: "without plan any IPv4", noPlan: true, id: "roce_v2_gid_present", subject: "ens3f0np0", want: StatusOK, msg: []string{"index 3 carries 192.168.102.11"}},
		{name: "without plan none", noPlan: true, snap: func(s *node.Snapshot) { port(s, 2).GIDs = port(s, 2).GIDs[:2] },
			id: "roce_v2_gid_present", subject: "ens3f0np0", want: StatusFail, msg: []string{"an IPv4 address"}},
		{name: "down", snap: func(s *node.Snapshot) { down(s); port(s, 1).GIDs = port(s, 1).GIDs[:2] },
			id: "roce_v2_gid_present", subject: "ens2f0np0", want: StatusSkipped, msg: []string{"down"}},
		{name: "port without netdev", noPlan: true, snap: func(s *node.Snapshot) {
			port(s, 2).Interface, port(s, 2).GIDs = "", nil
			delete(s.Interfaces, "ens3f0np0")
		}, id: "roce_v2_gid_present", subject: "mlx5_2", want: StatusFail,
			msg: []string{"mlx5_2 port 1 has no netdev", "(0 GIDs in the table)"}, notMsg: []string{" on  ", "on ("}, fix: []string{"rdma link show mlx5_2/1", "hostNetwork"}},
		{name: "port without netdev, GIDs seen", noPlan: true, snap: func(s *node.Snapshot) {
			port(s, 2).Interface = ""
			for i := range port(s, 2).GIDs {
				port(s, 2).GIDs[i].Interface = ""
			}
			delete(s.Interfaces, "ens3f0np0")
		}, id: "roce_v2_gid_present", subject: "mlx5_2", want: StatusOK, msg: []string{"index 3 carries 192.168.102.11"}, notMsg: []string{" on "}},
		{name: "infiniband", snap: makeIB, id: "roce_v2_gid_present", subject: "ens2f0np0", want: StatusSkipped, msg: []string{SkipInfiniBand}},

		{name: "v2", id: "default_roce_mode_v2", subject: "mlx5_0", want: StatusOK},
		{name: "v1", snap: func(s *node.Snapshot) { port(s, 0).DefaultRoCEMode = "IB/RoCE v1" },
			id: "default_roce_mode_v2", subject: "mlx5_0", want: StatusFail, msg: []string{"IB/RoCE v1"}, fix: []string{"cma_roce_mode -d mlx5_0 -p 1 -m 2"}},
		{name: "plan wants v1", plan: func(p *config.Plan) { p.Expectations.RoCEMode = config.RoCEv1 },
			id: "default_roce_mode_v2", subject: "mlx5_0", want: StatusFail, msg: []string{"expected IB/RoCE v1"}, fix: []string{"-m 1"}},
		{name: "configfs not created", snap: func(s *node.Snapshot) { port(s, 0).DefaultRoCEMode = "" },
			id: "default_roce_mode_v2", subject: "mlx5_0", want: StatusSkipped, msg: []string{"does not exist until someone creates it", "only as root", "cma_roce_mode -d mlx5_0 -p 1"}, notMsg: []string{"run the doctor as root"}},
		{name: "infiniband", snap: makeIB, id: "default_roce_mode_v2", subject: "mlx5_0", want: StatusSkipped, msg: []string{SkipInfiniBand}},
	})
}

func TestQoSChecks(t *testing.T) {
	pfcOn := func(nd string, prios ...int) func(s *node.Snapshot) {
		return func(s *node.Snapshot) {
			var a [8]bool
			for _, p := range prios {
				a[p] = true
			}
			s.DCB[nd].PFCEnabled = a
		}
	}
	// pfcUnknown is what the reader makes of an interface where DCB netlink
	// gave no PFC object and only the MLNX_OFED ECN files were read.
	pfcUnknown := func(nd string) func(s *node.Snapshot) {
		return func(s *node.Snapshot) {
			d := s.DCB[nd]
			d.PFCKnown, d.PFCCap, d.PFCEnabled, d.Trust = false, 0, [8]bool{}, ""
		}
	}
	noECNFiles := func(s *node.Snapshot) {
		for _, d := range s.DCB {
			d.ECN = nil
		}
	}
	runCases(t, []checkCase{
		{name: "on", id: "pfc_enabled_on_roce_priority", subject: "ens3f0np0", want: StatusOK, msg: []string{"priority 3"}},
		{name: "on the wrong priority", snap: pfcOn("ens3f0np0", 0), id: "pfc_enabled_on_roce_priority", subject: "ens3f0np0", want: StatusFail,
			msg: []string{"off on RoCE priority 3", "enabled on: 0"}, fix: []string{"mlnx_qos -i ens3f0np0 --pfc 0,0,0,1,0,0,0,0", "dcb pfc set dev ens3f0np0 prio-pfc all:off 3:on"}},
		{name: "plan priority 5", plan: func(p *config.Plan) { five := 5; p.Expectations.PFCPriority = &five }, snap: pfcOn("ens3f0np0", 5),
			id: "pfc_enabled_on_roce_priority", subject: "ens3f0np0", want: StatusOK, msg: []string{"priority 5"}},
		{name: "lossy by design", plan: func(p *config.Plan) { p.Expectations.PFCPriority = nil },
			id: "pfc_enabled_on_roce_priority", subject: "node", want: StatusSkipped, msg: []string{"lossy"}},
		{name: "no DCB for the netdev", snap: func(s *node.Snapshot) { delete(s.DCB, "ens3f0np0") },
			id: "pfc_enabled_on_roce_priority", subject: "ens3f0np0", want: StatusSkipped, msg: []string{"no DCB state for ens3f0np0"}},
		{name: "dcb collector off", snap: func(s *node.Snapshot) { s.DCB = nil; delete(s.Sources, "dcb") },
			id: "pfc_enabled_on_roce_priority", subject: "ens3f0np0", want: StatusSkipped, msg: []string{"--collector.dcb"}},
		{name: "no plan", noPlan: true, id: "pfc_enabled_on_roce_priority", subject: "node", want: StatusSkipped, msg: []string{SkipNoPlan}},
		{name: "only ECN files read", snap: pfcUnknown("ens3f0np0"), id: "pfc_enabled_on_roce_priority", subject: "ens3f0np0", want: StatusSkipped,
			msg: []string{"PFC state of ens3f0np0 is unknown", "ECN files"}, notMsg: []string{"enabled on: none"}},
		{name: "driver without PFC object", snap: func(s *node.Snapshot) { pfcUnknown("ens3f0np0")(s); s.DCB["ens3f0np0"].ECN = nil },
			id: "pfc_enabled_on_roce_priority", subject: "ens3f0np0", want: StatusSkipped, msg: []string{"reported no PFC configuration"}},
		{name: "DCB partly read", snap: func(s *node.Snapshot) { delete(s.DCB, "ens3f0np0"); s.Sources["dcb"] = node.SourcePartial },
			id: "pfc_enabled_on_roce_priority", subject: "ens3f0np0", want: StatusSkipped, msg: []string{"could not read every interface"}},
		{name: "infiniband", snap: makeIB, id: "pfc_enabled_on_roce_priority", subject: "ens3f0np0", want: StatusSkipped, msg: []string{SkipInfiniBand}},

		{name: "only RoCE priority", id: "pfc_only_on_roce_priority", subject: "ens3f0np0", want: StatusOK},
		{name: "extra priorities", snap: pfcOn("ens3f0np0", 0, 3, 4), id: "pfc_only_on_roce_priority", subject: "ens3f0np0", want: StatusWarn,
			msg: []string{"priority 0, 4"}, fix: []string{"prio-pfc all:off 3:on"}},
		{name: "lossy by design", plan: func(p *config.Plan) { p.Expectations.PFCPriority = nil },
			id: "pfc_only_on_roce_priority", subject: "node", want: StatusSkipped},
		{name: "PFC unknown", snap: pfcUnknown("ens3f0np0"), id: "pfc_only_on_roce_priority", subject: "ens3f0np0", want: StatusSkipped, msg: []string{"unknown"}},
		{name: "PFC unknown, trust still read", snap: func(s *node.Snapshot) { s.DCB["ens1f0np0"].PFCKnown = false }, id: "trust_mode_matches_plan", subject: "ens1f0np0", want: StatusOK},

		{name: "off", id: "global_pause_off_with_pfc", subject: "ens2f0np0", want: StatusOK, msg: []string{"rx off, tx off"}},
		{name: "on with PFC", snap: func(s *node.Snapshot) {
			s.Ethtool["ens2f0np0"].GlobalPause = &node.GlobalPause{RX: true, TX: true}
		},
			id: "global_pause_off_with_pfc", subject: "ens2f0np0", want: StatusFail, msg: []string{"rx on, tx on", "PFC is on for priority 3"},
			fix: []string{"ethtool -A ens2f0np0 rx off tx off", "ethtool.pause-rx off"}},
		{name: "on, PFC expected but not configured", snap: func(s *node.Snapshot) {
			s.Ethtool["ens2f0np0"].GlobalPause = &node.GlobalPause{RX: true}
			s.DCB["ens2f0np0"].PFCEnabled = [8]bool{}
		}, id: "global_pause_off_with_pfc", subject: "ens2f0np0", want: StatusFail, msg: []string{"the plan expects PFC"}},
		{name: "on without any PFC", noPlan: true, snap: func(s *node.Snapshot) {
			s.Ethtool["ens2f0np0"].GlobalPause = &node.GlobalPause{RX: true, TX: true}
			s.DCB["ens2f0np0"].PFCEnabled = [8]bool{}
		}, id: "global_pause_off_with_pfc", subject: "ens2f0np0", want: StatusOK, msg: []string{"no PFC"}},
		{name: "pause unreadable", snap: func(s *node.Snapshot) { s.Ethtool["ens2f0np0"].GlobalPause = nil },
			id: "global_pause_off_with_pfc", subject: "ens2f0np0", want: StatusSkipped},

		{name: "dscp", id: "trust_mode_matches_plan", subject: "ens1f0np0", want: StatusOK},
		{name: "pcp", snap: func(s *node.Snapshot) { s.DCB["ens1f0np0"].Trust = "pcp" },
			id: "trust_mode_matches_plan", subject: "ens1f0np0", want: StatusFail, msg: []string{"trust pcp", "expects dscp"},
			fix: []string{"mlnx_qos -i ens1f0np0 --trust dscp", "dcb app add dev ens1f0np0 dscp-prio 26:3"}},
		{name: "plan wants pcp", plan: func(p *config.Plan) { p.Expectations.Trust = config.TrustPCP },
			id: "trust_mode_matches_plan", subject: "ens1f0np0", want: StatusFail, fix: []string{"--trust pcp", "dcb app flush dev ens1f0np0 dscp-prio"}},
		{name: "no expectation", plan: func(p *config.Plan) { p.Expectations.Trust = "" }, id: "trust_mode_matches_plan", subject: "node", want: StatusSkipped, msg: []string{"expectations.trust"}},
		{name: "unreadable", snap: func(s *node.Snapshot) { s.DCB["ens1f0np0"].Trust = "" }, id: "trust_mode_matches_plan", subject: "ens1f0np0", want: StatusSkipped},

		{name: "files say on", id: "ecn_enabled", subject: "ens3f0np0", want: StatusOK, msg: []string{"np and rp enabled on priority 3"}},
		{name: "files say off", snap: func(s *node.Snapshot) {
			s.DCB["ens3f0np0"].ECN["np"].Enabled[3] = false
			s.DCB["ens3f0np0"].ECN["rp"].Enabled[3] = false
		}, id: "ecn_enabled", subject: "ens3f0np0", want: StatusFail, msg: []string{"off on priority 3 (np and rp off)"},
			fix: []string{"echo 1 > /sys/class/net/ens3f0np0/ecn/roce_np/enable/3", "echo 1 > /sys/class/net/ens3f0np0/ecn/roce_rp/enable/3"}},
		{name: "off only on another priority", snap: func(s *node.Snapshot) { s.DCB["ens3f0np0"].ECN["rp"].Enabled[5] = false },
			id: "ecn_enabled", subject: "ens3f0np0", want: StatusOK},
		{name: "no plan: PFC priorities decide", noPlan: true, snap: func(s *node.Snapshot) { s.DCB["ens3f0np0"].ECN["rp"].Enabled[3] = false },
			id: "ecn_enabled", subject: "ens3f0np0", want: StatusFail, msg: []string{"priority 3 (rp off)"}},
		{name: "inferred: rp_cnp_ignored rises", snap: noECNFiles, prev: func(_, cur *node.Snapshot) {
			setCounter(&port(cur, 2).HWCounters, "rp_cnp_ignored", 4242)
		}, id: "ecn_enabled", subject: "ens3f0np0", want: StatusFail, msg: []string{"rp_cnp_ignored rose by 4242 in 10s", "inferred from counters"}, fix: []string{"roce_rp/enable/3"}},
		{name: "inferred: NP silent", snap: noECNFiles, prev: func(_, cur *node.Snapshot) {
			setCounter(&port(cur, 2).HWCounters, "np_ecn_marked_roce_packets", 5000)
		}, id: "ecn_enabled", subject: "ens3f0np0", want: StatusFail, msg: []string{"np_cnp_sent did not"}},
		{name: "inferred: flat", snap: noECNFiles, prev: func(_, cur *node.Snapshot) {
			setCounter(&port(cur, 2).HWCounters, "np_ecn_marked_roce_packets", 5000)
			setCounter(&port(cur, 2).HWCounters, "np_cnp_sent", 4000)
		}, id: "ecn_enabled", subject: "ens3f0np0", want: StatusOK, msg: []string{"inferred from counters"}},
		{name: "inferred: one sample", snap: noECNFiles, id: "ecn_enabled", subject: "ens3f0np0", want: StatusSkipped, msg: []string{"two samples"}},
		{name: "inferred: no counter", snap: func(s *node.Snapshot) { noECNFiles(s); dropCounter(&port(s, 2).HWCounters, "rp_cnp_ignored") },
			prev: func(_, _ *node.Snapshot) {}, id: "ecn_enabled", subject: "ens3f0np0", want: StatusSkipped, msg: []string{"no rp_cnp_ignored"}},
		{name: "plan leaves ECN out", plan: func(p *config.Plan) { p.Expectations.ECN = nil },
			id: "ecn_enabled", subject: "node", want: StatusSkipped, msg: []string{"expectations.ecn"}},
		{name: "plan says no ECN", plan: func(p *config.Plan) { off := false; p.Expectations.ECN = &off },
			id: "ecn_enabled", subject: "node", want: StatusSkipped, msg: []string{"ecn: false"}},
		{name: "infiniband", snap: makeIB, id: "ecn_enabled", subject: "ens3f0np0", want: StatusSkipped, msg: []string{SkipInfiniBand}},
	})
}

func TestPCIeAndFirmwareChecks(t *testing.T) {
	x8 := func(s *node.Snapshot) {
		f := s.PCI[pciAddr(1)]
		f.CurrentWidth, f.CurrentBandwidth, f.AvailableBandwidth = 8, 31.507e9, 31.507e9
	}
	runCases(t, []checkCase{
		{name: "Gen5 x16 for 400G", id: "pcie_bandwidth_sufficient", subject: "mlx5_1", want: StatusOK, msg: []string{"504.1 Gb/s", "32 GT/s x16", "400 Gb/s"}},
		{name: "x8", snap: x8, id: "pcie_bandwidth_sufficient", subject: "mlx5_1", want: StatusFail,
			msg: []string{"252.1 Gb/s", "32 GT/s x8", "400 Gb/s"}, fix: []string{"reseat", "bifurcation", "lspci -vv -s 0000:28:00.0"}},
		{name: "little headroom", snap: func(s *node.Snapshot) { s.PCI[pciAddr(1)].AvailableBandwidth = 52.5e9 },
			id: "pcie_bandwidth_sufficient", subject: "mlx5_1", want: StatusWarn, msg: []string{"420 Gb/s", "headroom"}},
		{name: "upstream port limits", snap: func(s *node.Snapshot) {
			f := s.PCI[pciAddr(1)]
			f.AvailableBandwidth, f.LimitedBy = 31.507e9, "0000:27:01.0"
		}, id: "pcie_bandwidth_sufficient", subject: "mlx5_1", want: StatusFail, msg: []string{"limited by upstream port 0000:27:01.0"}, fix: []string{"above the card, at 0000:27:01.0", "lspci -vv -s 0000:27:01.0"}},
		{name: "port down uses the planned rate", snap: func(s *node.Snapshot) {
			x8(s)
			p := port(s, 1)
			p.State, p.PhysState, p.RateBitsPerSecond = 1, 3, 0
		}, id: "pcie_bandwidth_sufficient", subject: "mlx5_1", want: StatusFail, msg: []string{"planned link rate"}},
		{name: "port down, no plan", noPlan: true, snap: func(s *node.Snapshot) {
			p := port(s, 1)
			p.State, p.PhysState, p.RateBitsPerSecond = 1, 3, 0
		}, id: "pcie_bandwidth_sufficient", subject: "mlx5_1", want: StatusSkipped, msg: []string{"port rate unknown"}},
		{name: "two ports of one card share the link", snap: func(s *node.Snapshot) {
			// mlx5_1 becomes the second function of mlx5_0's card: 800G over one
			// Gen5 x16 at its maximum, each port fitting alone: the card's design.
			s.Devices[1].PCIAddress = "0000:18:00.1"
			s.PCI["0000:18:00.1"] = s.PCI[pciAddr(1)]
		}, id: "pcie_bandwidth_sufficient", subject: "mlx5_0", want: StatusWarn, msg: []string{"800 Gb/s", "mlx5_0, mlx5_1", "both ports cannot run at line rate at once"}},
		{name: "two ports of one card on a downtrained link", snap: func(s *node.Snapshot) {
			s.Devices[1].PCIAddress = "0000:18:00.1"
			s.PCI["0000:18:00.1"] = s.PCI[pciAddr(1)]
			f := s.PCI[pciAddr(0)]
			f.CurrentWidth, f.CurrentBandwidth, f.AvailableBandwidth = 8, 31.507e9, 31.507e9
		}, id: "pcie_bandwidth_sufficient", subject: "mlx5_0", want: StatusFail, msg: []string{"800 Gb/s", "cannot reach line rate"}},
		{name: "no PCI info", snap: func(s *node.Snapshot) { delete(s.PCI, pciAddr(1)) },
			id: "pcie_bandwidth_sufficient", subject: "mlx5_1", want: StatusSkipped, msg: []string{"no PCIe link information"}},

		{name: "full link", id: "pcie_link_not_degraded", subject: "mlx5_1", want: StatusOK, msg: []string{"32 GT/s x16"}},
		{name: "x8 of x16, too slow", snap: x8, id: "pcie_link_not_degraded", subject: "mlx5_1", want: StatusFail,
			msg: []string{"32 GT/s x8", "both the card (32 GT/s x16)", "too little"}, fix: []string{"reseat", "bifurcation"}},
		{name: "Gen4 in a Gen5 card, still enough for 200G", snap: func(s *node.Snapshot) {
			port(s, 1).RateBitsPerSecond = 200e9
			f := s.PCI[pciAddr(1)]
			f.CurrentSpeedGTs, f.CurrentBandwidth, f.AvailableBandwidth = 16, 31.506e9, 31.506e9
		}, plan: func(p *config.Plan) { p.Expectations.LinkRateGbps = 0 },
			id: "pcie_link_not_degraded", subject: "mlx5_1", want: StatusWarn, msg: []string{"16 GT/s x16", "32 GT/s x16"}, fix: []string{"lspci"}},
		{name: "unreadable", snap: func(s *node.Snapshot) { s.PCI[pciAddr(1)].MaxWidth = 0 },
			id: "pcie_link_not_degraded", subject: "mlx5_1", want: StatusSkipped},

		{name: "clean", id: "pcie_no_aer_errors", subject: "mlx5_2", want: StatusOK},
		{name: "correctable since boot", snap: func(s *node.Snapshot) { s.PCI[pciAddr(2)].AER["correctable"] = 1734 },
			id: "pcie_no_aer_errors", subject: "mlx5_2", want: StatusWarn, msg: []string{"1734 correctable"}, fix: []string{"dmesg | grep -i aer"}},
		{name: "fatal since boot", snap: func(s *node.Snapshot) { s.PCI[pciAddr(2)].AER["fatal"] = 1 },
			id: "pcie_no_aer_errors", subject: "mlx5_2", want: StatusWarn, msg: []string{"1 fatal since boot", "a second sample"}},
		{name: "old correctable, none new", snap: func(s *node.Snapshot) { s.PCI[pciAddr(2)].AER["correctable"] = 7 },
			prev: func(prev, _ *node.Snapshot) { prev.PCI[pciAddr(2)].AER["correctable"] = 7 },
			id:   "pcie_no_aer_errors", subject: "mlx5_2", want: StatusWarn, msg: []string{"7 correctable since boot, none new in the last 10s"}},
		{name: "new correctable", snap: func(s *node.Snapshot) { s.PCI[pciAddr(2)].AER["correctable"] = 9 },
			prev: func(prev, _ *node.Snapshot) { prev.PCI[pciAddr(2)].AER["correctable"] = 7 },
			id:   "pcie_no_aer_errors", subject: "mlx5_2", want: StatusWarn, msg: []string{"2 new correctable"}},
		{name: "old fatal, none new", snap: func(s *node.Snapshot) { s.PCI[pciAddr(2)].AER["fatal"] = 1 },
			prev: func(prev, _ *node.Snapshot) { prev.PCI[pciAddr(2)].AER["fatal"] = 1 },
			id:   "pcie_no_aer_errors", subject: "mlx5_2", want: StatusWarn, msg: []string{"1 fatal since boot, none new"}},
		{name: "new fatal beside old correctable", snap: func(s *node.Snapshot) { s.PCI[pciAddr(2)].AER["fatal"], s.PCI[pciAddr(2)].AER["correctable"] = 1, 1734 },
			prev: func(prev, _ *node.Snapshot) { prev.PCI[pciAddr(2)].AER["correctable"] = 1734 },
			id:   "pcie_no_aer_errors", subject: "mlx5_2", want: StatusFail, msg: []string{"1 new fatal error(s) in the last 10s", "1734 correctable since boot"}},
		{name: "clean, two samples", prev: func(_, _ *node.Snapshot) {}, id: "pcie_no_aer_errors", subject: "mlx5_2", want: StatusOK, msg: []string{"since boot, none in the last 10s"}},
		{name: "new nonfatal", snap: func(s *node.Snapshot) { s.PCI[pciAddr(2)].AER["nonfatal"] = 1 }, prev: func(_, _ *node.Snapshot) {},
			id: "pcie_no_aer_errors", subject: "mlx5_2", want: StatusFail, msg: []string{"1 new nonfatal"}},
		{name: "no counters", snap: func(s *node.Snapshot) { s.PCI[pciAddr(2)].AER, s.PCI[pciAddr(2)].Upstream.AER = nil, nil }, id: "pcie_no_aer_errors", subject: "mlx5_2", want: StatusSkipped},

		{name: "same", id: "firmware_consistent", subject: "mlx5_0", want: StatusOK, msg: []string{"28.39.1002", "2 MT4129 MT_0000000838"}},
		{name: "odd one out", snap: func(s *node.Snapshot) { s.Devices[2].FirmwareVersion = "28.37.1014" },
			id: "firmware_consistent", subject: "mlx5_2", want: StatusWarn, msg: []string{"28.37.1014", "28.39.1002", "mlx5_0, mlx5_1"},
			fix: []string{"mlxfwmanager", "flint -d 0000:38:00.0", "28.39.1002", "drain the node", "mlxfwreset"}},
		{name: "majority is fine", snap: func(s *node.Snapshot) { s.Devices[2].FirmwareVersion = "28.37.1014" },
			id: "firmware_consistent", subject: "mlx5_0", want: StatusOK, msg: []string{"majority"}},
		{name: "different board is its own group", snap: func(s *node.Snapshot) {
			s.Devices[2].FirmwareVersion, s.Devices[2].BoardID = "28.37.1014", "MT_0000000999"
		}, id: "firmware_consistent", subject: "mlx5_2", want: StatusOK, msg: []string{"only MT4129 MT_0000000999"}},
		{name: "tie", snap: func(s *node.Snapshot) {
			s.Devices = s.Devices[:2]
			s.Devices[1].FirmwareVersion = "28.41.1000"
		}, noPlan: true, id: "firmware_consistent", subject: "mlx5_0", want: StatusWarn, msg: []string{"no majority"}, fix: []string{"28.41.1000"}},
		{name: "plan opts out", plan: func(p *config.Plan) { p.Expectations.FirmwareConsistent = false },
			id: "firmware_consistent", subject: "node", want: StatusSkipped, msg: []string{"firmware_consistent: false"}},
		{name: "unreadable version", snap: func(s *node.Snapshot) { s.Devices[2].FirmwareVersion = "" },
			id: "firmware_consistent", subject: "mlx5_2", want: StatusSkipped},
	})
}

// gen5CardInGen4Slot puts rail i's ConnectX-7 (Gen5 x16) in a slot whose
// root port supports 16 GT/s, where its link trains at 16 GT/s x16.
func gen5CardInGen4Slot(i int) func(s *node.Snapshot) {
	return func(s *node.Snapshot) {
		f := s.PCI[pciAddr(i)]
		f.Upstream.MaxSpeedGTs = 16
		f.CurrentSpeedGTs = 16
		f.CurrentBandwidth, f.AvailableBandwidth = node.PCIeBandwidth(16, 16), node.PCIeBandwidth(16, 16)
	}
}

// The link's capability is the lower of its two ends: a Gen5 card in a Gen4
// slot is at its best at 16 GT/s, and only a link below both ends is
// downtrained. Where the slot cannot carry the port, the fix says so instead
// of sending the operator to reseat a card that sits where it should.
func TestPCIeLinkAgainstBothEnds(t *testing.T) {
	at200G := func(i int) func(s *node.Snapshot) {
		return func(s *node.Snapshot) {
			gen5CardInGen4Slot(i)(s)
			port(s, i).RateBitsPerSecond = 200e9
		}
	}
	noRate := func(p *config.Plan) { p.Expectations.LinkRateGbps = 0 }
	runCases(t, []checkCase{
		{name: "Gen5 card in a Gen4 slot", snap: at200G(1), plan: noRate, id: "pcie_link_not_degraded", subject: "mlx5_1", want: StatusOK,
			msg: []string{"16 GT/s x16, the most its slot allows: the card supports 32 GT/s x16, the port above it, 0000:27:01.0 (16 GT/s x16)"}},
		{name: "Gen5 card in a Gen4 slot carries 200G", snap: at200G(1), plan: noRate, id: "pcie_bandwidth_sufficient", subject: "mlx5_1", want: StatusOK,
			msg: []string{"252 Gb/s", "the most its slot allows", "200 Gb/s"}},
		{name: "Gen5 card in a Gen4 slot, 400G port", snap: gen5CardInGen4Slot(1), id: "pcie_link_not_degraded", subject: "mlx5_1", want: StatusOK},
		{name: "Gen5 card in a Gen4 slot cannot carry 400G", snap: gen5CardInGen4Slot(1), id: "pcie_bandwidth_sufficient", subject: "mlx5_1", want: StatusFail,
			msg: []string{"252 Gb/s", "400 Gb/s", "cannot reach line rate"},
			fix: []string{"nothing to reseat", "0000:27:01.0 (16 GT/s x16)", "a Gen5 x16 slot"}, notFix: []string{"reseat the card", "power the node off"}},
		{name: "card and slot both Gen5, link at Gen4", snap: func(s *node.Snapshot) {
			gen5CardInGen4Slot(1)(s)
			s.PCI[pciAddr(1)].Upstream.MaxSpeedGTs = 32
		}, id: "pcie_link_not_degraded", subject: "mlx5_1", want: StatusFail,
			msg: []string{"trained at 16 GT/s x16 (252 of 504.1 Gb/s usable), below the 32 GT/s x16 that both the card (32 GT/s x16) and the port above it, 0000:27:01.0 (32 GT/s x16), support", "too little for 400 Gb/s"},
			fix: []string{"reseat the card", "link speed to Auto", "lspci -vv -s 0000:27:01.0 | grep LnkCap", "limited by"}},
		{name: "Gen4 slot, link at x8", snap: func(s *node.Snapshot) {
			gen5CardInGen4Slot(1)(s)
			f := s.PCI[pciAddr(1)]
			f.CurrentWidth, f.CurrentBandwidth, f.AvailableBandwidth = 8, node.PCIeBandwidth(16, 8), node.PCIeBandwidth(16, 8)
		}, id: "pcie_link_not_degraded", subject: "mlx5_1", want: StatusFail, msg: []string{"16 GT/s x8 (126 of 252 Gb/s usable), below the 16 GT/s x16 that both"}},
		{name: "x16 card in an x8 slot", snap: func(s *node.Snapshot) {
			f := s.PCI[pciAddr(1)]
			f.Upstream.MaxWidth = 8
			f.CurrentWidth, f.CurrentBandwidth, f.AvailableBandwidth = 8, 31.507e9, 31.507e9
		}, id: "pcie_bandwidth_sufficient", subject: "mlx5_1", want: StatusFail, fix: []string{"bifurcation", "a Gen5 x16 slot"}, notFix: []string{"power the node off"}},
		{name: "x16 card in an x8 slot is not downtrained", snap: func(s *node.Snapshot) {
			f := s.PCI[pciAddr(1)]
			f.Upstream.MaxWidth = 8
			f.CurrentWidth, f.CurrentBandwidth, f.AvailableBandwidth = 8, 31.507e9, 31.507e9
		}, id: "pcie_link_not_degraded", subject: "mlx5_1", want: StatusOK, msg: []string{"the most its slot allows"}},
		{name: "no port above the card: its own maximum", snap: func(s *node.Snapshot) { s.PCI[pciAddr(1)].Upstream = nil },
			id: "pcie_link_not_degraded", subject: "mlx5_1", want: StatusOK, msg: []string{"the card's maximum"}},
		{name: "both ends at Gen5", id: "pcie_link_not_degraded", subject: "mlx5_1", want: StatusOK, msg: []string{"32 GT/s x16, the maximum of both the card and the port above it, 0000:27:01.0"}},
		{name: "two 200G ports in a Gen4 slot: the platform's design", snap: func(s *node.Snapshot) {
			gen5CardInGen4Slot(1)(s)
			port(s, 1).RateBitsPerSecond = 200e9
			port(s, 0).RateBitsPerSecond = 200e9
			s.Devices[0].PCIAddress = "0000:28:00.1"
			s.PCI["0000:28:00.1"] = s.PCI[pciAddr(1)]
		}, plan: noRate, id: "pcie_bandwidth_sufficient", subject: "mlx5_1", want: StatusWarn,
			msg: []string{"400 Gb/s", "each port alone fits", "the most the card and its slot support", "the platform's design limit"}},

		{name: "the root port counted errors", snap: func(s *node.Snapshot) { s.PCI[pciAddr(2)].Upstream.AER["correctable"] = 12 },
			id: "pcie_no_aer_errors", subject: "mlx5_2", want: StatusWarn, msg: []string{"PCIe AER on the port above it, 0000:37:01.0: 12 correctable since boot"},
			fix: []string{"lspci -vvv -s 0000:38:00.0", "lspci -vvv -s 0000:37:01.0"}},
		{name: "new fatal at the root port", snap: func(s *node.Snapshot) { s.PCI[pciAddr(2)].Upstream.AER["fatal"] = 1 }, prev: func(_, _ *node.Snapshot) {},
			id: "pcie_no_aer_errors", subject: "mlx5_2", want: StatusFail, msg: []string{"on the port above it, 0000:37:01.0: 1 new fatal error(s) in the last 10s"}},
		{name: "errors at both ends", snap: func(s *node.Snapshot) {
			s.PCI[pciAddr(2)].AER["correctable"] = 9
			s.PCI[pciAddr(2)].Upstream.AER["correctable"] = 40
		}, prev: func(prev, _ *node.Snapshot) {
			prev.PCI[pciAddr(2)].AER["correctable"] = 9
			prev.PCI[pciAddr(2)].Upstream.AER["correctable"] = 31
		}, id: "pcie_no_aer_errors", subject: "mlx5_2", want: StatusWarn,
			msg: []string{"on 0000:38:00.0: 9 correctable since boot; on the port above it, 0000:37:01.0: 9 new correctable error(s) in the last 10s (40 since boot)"}},
		{name: "clean at both ends", prev: func(_, _ *node.Snapshot) {}, id: "pcie_no_aer_errors", subject: "mlx5_2", want: StatusOK,
			msg: []string{"at either end of the link (0000:38:00.0 and the port above it, 0000:37:01.0)"}},
		{name: "only the root port has counters", snap: func(s *node.Snapshot) { s.PCI[pciAddr(2)].AER = nil; s.PCI[pciAddr(2)].Upstream.AER["nonfatal"] = 2 },
			id: "pcie_no_aer_errors", subject: "mlx5_2", want: StatusWarn, msg: []string{"2 nonfatal since boot"}},
	})
}

func TestCounterChecks(t *testing.T) {
	rx := func(s *node.Snapshot) *node.EthtoolStats { return s.Ethtool["ens2f0np0"] }
	addPause := func(dir string, us uint64) func(prev, cur *node.Snapshot) {
		return func(prev, cur *node.Snapshot) {
			setEth(rx(cur), node.FamilyPFCPauseDuration, dir, 3, "", ethVal(rx(prev), node.FamilyPFCPauseDuration, dir, 3, "")+us)
		}
	}
	// roceDropsSince sets the drops of RoCE priority 3 on ens2f0np0 since boot.
	roceDropsSince := func(drops uint64) func(s *node.Snapshot) {
		return func(s *node.Snapshot) { setEth(rx(s), node.FamilyPriorityDiscards, "rx", 3, node.DiscardOther, drops) }
	}
	// roceDropsNow adds drops and received packets of priority 3 between the samples.
	roceDropsNow := func(drops, packets uint64) func(prev, cur *node.Snapshot) {
		return func(prev, cur *node.Snapshot) {
			for _, f := range []struct {
				family node.Family
				label  string
				add    uint64
			}{{node.FamilyPriorityDiscards, node.DiscardOther, drops}, {node.FamilyPriorityPackets, "", packets}} {
				setEth(rx(cur), f.family, "rx", 3, f.label, ethVal(rx(prev), f.family, "rx", 3, f.label)+f.add)
			}
		}
	}
	runCases(t, []checkCase{
		{name: "both dirs", id: "port_counters_readable", subject: "mlx5_0", want: StatusOK, msg: []string{"4 counters/", "5 hw_counters/"}},
		{name: "mlx5 counters unreadable", snap: func(s *node.Snapshot) { port(s, 0).Counters = nil },
			id: "port_counters_readable", subject: "mlx5_0", want: StatusWarn, msg: []string{"counters/ of /sys/class/infiniband/mlx5_0/ports/1"}, fix: []string{"--collector.rdma.device-exclude"}},
		{name: "only hw_counters/ missing", snap: func(s *node.Snapshot) { port(s, 0).HWCounters = nil },
			id: "port_counters_readable", subject: "mlx5_0", want: StatusWarn,
			msg: []string{"hw_counters/ of /sys/class/infiniband/mlx5_0/ports/1", "req_transport_retries_exceeded"}, notMsg: []string{"link_downed", "symbol_error", "counters/ and"},
			fix: []string{"ls -l /sys/class/infiniband/mlx5_0/ports/1/hw_counters`"}},
		{name: "both missing", snap: func(s *node.Snapshot) { port(s, 0).HWCounters, port(s, 0).Counters = nil, nil },
			id: "port_counters_readable", subject: "mlx5_0", want: StatusWarn, msg: []string{"counters/ and hw_counters/", "link_downed", "out_of_sequence"}, fix: []string{"dmesg | grep -i mad"}},
		{name: "bnxt has none by design", snap: func(s *node.Snapshot) { s.Devices[0].Driver = "bnxt_en"; port(s, 0).Counters = nil },
			id: "port_counters_readable", subject: "mlx5_0", want: StatusOK, msg: []string{"by design"}},

		{name: "one sample", id: "no_pfc_storm", subject: "ens2f0np0", want: StatusSkipped, msg: []string{"two samples"}},
		{name: "calm", prev: addPause("rx", 1000), id: "no_pfc_storm", subject: "ens2f0np0", want: StatusOK, msg: []string{"0% of the time paused (rx priority 3)"}},
		{name: "10% rx", prev: addPause("rx", 1_000_000), id: "no_pfc_storm", subject: "ens2f0np0", want: StatusWarn,
			msg: []string{"rx priority 3 paused 10% of the time", "last 10s"}, fix: []string{"switch is pausing ens2f0np0"}},
		{name: "30% tx is incast, not a storm", prev: addPause("tx", 3_000_000), id: "no_pfc_storm", subject: "ens2f0np0", want: StatusWarn,
			msg: []string{"tx priority 3 paused 30% of the time"}, fix: []string{"cannot drain"}},
		{name: "97% tx", prev: addPause("tx", 9_700_000), id: "no_pfc_storm", subject: "ens2f0np0", want: StatusFail,
			msg: []string{"PFC storm", "tx priority 3 paused 97% of the time"}, fix: []string{"cannot drain"}},
		{name: "exactly 5% is not a warning", prev: addPause("rx", 500_000), id: "no_pfc_storm", subject: "ens2f0np0", want: StatusOK},
		{name: "storm error events", prev: func(prev, cur *node.Snapshot) {
			setEth(rx(cur), node.FamilyPFCPauseStormEvents, "", -1, node.StormError, 2)
		},
			id: "no_pfc_storm", subject: "ens2f0np0", want: StatusFail, msg: []string{"2 new storm error event(s)"}, fix: []string{"pfc-prevention-tout"}},
		{name: "storm warning events", prev: func(prev, cur *node.Snapshot) {
			setEth(rx(cur), node.FamilyPFCPauseStormEvents, "", -1, node.StormWarning, 4)
		},
			id: "no_pfc_storm", subject: "ens2f0np0", want: StatusWarn, msg: []string{"4 new storm warning"}},
		{name: "storm errors since boot", snap: func(s *node.Snapshot) { setEth(rx(s), node.FamilyPFCPauseStormEvents, "", -1, node.StormError, 3) },
			id: "no_pfc_storm", subject: "ens2f0np0", want: StatusWarn, msg: []string{"3 PFC storm error event(s) since boot"}},
		{name: "storm errors since boot, calm now", prev: func(prev, cur *node.Snapshot) {
			setEth(rx(prev), node.FamilyPFCPauseStormEvents, "", -1, node.StormError, 3)
			setEth(rx(cur), node.FamilyPFCPauseStormEvents, "", -1, node.StormError, 3)
		}, id: "no_pfc_storm", subject: "ens2f0np0", want: StatusWarn, msg: []string{"no storm in the last 10s", "3 PFC storm error event(s) since boot"}, fix: []string{"pfc-prevention-tout"}},
		{name: "counter reset is not a storm", prev: func(prev, cur *node.Snapshot) { setEth(rx(cur), node.FamilyPFCPauseDuration, "rx", 3, "", 0) },
			id: "no_pfc_storm", subject: "ens2f0np0", want: StatusOK},
		{name: "no counters", snap: func(s *node.Snapshot) {
			dropEth(rx(s), node.FamilyPFCPauseDuration)
			dropEth(rx(s), node.FamilyPFCPauseStormEvents)
		},
			id: "no_pfc_storm", subject: "ens2f0np0", want: StatusSkipped, msg: []string{"no PFC pause-duration"}},
		{name: "infiniband", snap: makeIB, id: "no_pfc_storm", subject: "ens2f0np0", want: StatusSkipped, msg: []string{SkipInfiniBand}},

		{name: "none", id: "no_packet_discards", subject: "ens2f0np0", want: StatusOK, msg: []string{"no drops on RoCE priority 3 since boot"}},
		{name: "many since boot", snap: roceDropsSince(1_203_344), id: "no_packet_discards", subject: "ens2f0np0", want: StatusWarn,
			msg: []string{"1203344 received packet(s) of RoCE priority 3 dropped since boot (4e-4 of the 3000000000 packets received)", "a second sample"},
			fix: []string{"PFC is on for priority 3", "mlnx_qos -i ens2f0np0"}},
		{name: "many since boot, none new", snap: roceDropsSince(1_203_344), prev: func(prev, _ *node.Snapshot) { roceDropsSince(1_203_344)(prev) },
			id: "no_packet_discards", subject: "ens2f0np0", want: StatusWarn, msg: []string{"dropped since boot", "none new in the last 10s"}},
		{name: "a few among billions since boot", snap: roceDropsSince(12), id: "no_packet_discards", subject: "ens2f0np0", want: StatusOK,
			msg: []string{"12 received packet(s)", "below 1 in 1000000"}},
		{name: "dropping now", prev: roceDropsNow(50_000, 1_000_000_000), id: "no_packet_discards", subject: "ens2f0np0", want: StatusFail,
			msg: []string{"dropped 50000 received packet(s) of RoCE priority 3 in the last 10s (5e-5 of the 1000000000 packets received), 5000/s", "must be lossless"},
			fix: []string{"cable_len"}},
		{name: "one drop at 30 Mpps is noise", prev: roceDropsNow(1, 300_000_000), id: "no_packet_discards", subject: "ens2f0np0", want: StatusOK},
		{name: "a few drops on an idle port", prev: roceDropsNow(3, 1000), id: "no_packet_discards", subject: "ens2f0np0", want: StatusWarn,
			msg: []string{"dropped 3 received packet(s)", "0.3/s"}},
		{name: "measurable, below failing", prev: roceDropsNow(2000, 1_000_000_000), id: "no_packet_discards", subject: "ens2f0np0", want: StatusWarn,
			msg: []string{"(2e-6 of the 1000000000 packets received)"}},
		{name: "no packet counter to compare", prev: func(prev, cur *node.Snapshot) {
			roceDropsNow(50_000, 0)(prev, cur)
			dropEth(rx(prev), node.FamilyPriorityPackets)
			dropEth(rx(cur), node.FamilyPriorityPackets)
		}, id: "no_packet_discards", subject: "ens2f0np0", want: StatusWarn, msg: []string{"dropped 50000"}},
		{name: "not split by priority", prev: func(prev, cur *node.Snapshot) {
			roceDropsNow(0, 1_000_000_000)(prev, cur)
			dropEth(rx(prev), node.FamilyPriorityDiscards)
			dropEth(rx(cur), node.FamilyPriorityDiscards)
			setEth(rx(cur), node.FamilyPHYDiscards, "rx", -1, "", 50_000)
		}, id: "no_packet_discards", subject: "ens2f0np0", want: StatusWarn, msg: []string{"rx_discards_phy", "dropped 50000"}, fix: []string{"prio[0-7]_(packets|discards)"}},
		{name: "no RoCE priority known", noPlan: true, snap: func(s *node.Snapshot) {
			s.DCB["ens2f0np0"].PFCEnabled = [8]bool{}
			setEth(rx(s), node.FamilyPHYDiscards, "rx", -1, "", 1_203_344)
		}, id: "no_packet_discards", subject: "ens2f0np0", want: StatusWarn, msg: []string{"all priorities", "1203344"}},
		{name: "drops on a lossy priority only", prev: func(prev, cur *node.Snapshot) {
			setEth(rx(cur), node.FamilyPriorityDiscards, "rx", 0, node.DiscardOther, 50_000)
			setEth(rx(cur), node.FamilyPHYDiscards, "rx", -1, "", 50_000)
		}, id: "no_packet_discards", subject: "ens2f0np0", want: StatusOK},
		// mlx5 counts buffer and congestion drops per traffic class
		// (rx_prio<N>_buf_discard is TC N): they count for the class the
		// RoCE priority is queued in, by mlx5's default map or the port's ETS.
		{name: "every cause counts", prev: func(prev, cur *node.Snapshot) {
			roceDropsNow(0, 1_000_000_000)(prev, cur)
			setEth(rx(cur), node.FamilyTCDiscards, "rx", 3, node.DiscardBuffer, 30_000)
			setEth(rx(cur), node.FamilyTCDiscards, "rx", 3, node.DiscardCongestion, 20_000)
		}, id: "no_packet_discards", subject: "ens2f0np0", want: StatusFail, msg: []string{"dropped 50000"}},
		{name: "drops in a lossy priority's traffic class", prev: func(prev, cur *node.Snapshot) {
			roceDropsNow(0, 1_000_000_000)(prev, cur)
			// TC 1 holds priority 0 by mlx5's default map, not RoCE's 3.
			setEth(rx(cur), node.FamilyTCDiscards, "rx", 1, node.DiscardBuffer, 50_000)
		}, id: "no_packet_discards", subject: "ens2f0np0", want: StatusOK},
		{name: "drops in the RoCE priority's class by the port's ETS map", prev: func(prev, cur *node.Snapshot) {
			roceDropsNow(0, 1_000_000_000)(prev, cur)
			for _, s := range []*node.Snapshot{prev, cur} {
				ets := &node.ETSState{PrioTC: [8]uint8{0, 0, 0, 5, 0, 0, 0, 0}}
				s.DCB["ens2f0np0"].ETS = ets
			}
			setEth(rx(cur), node.FamilyTCDiscards, "rx", 5, node.DiscardBuffer, 50_000)
			setEth(rx(cur), node.FamilyTCDiscards, "rx", 3, node.DiscardBuffer, 70_000)
		}, id: "no_packet_discards", subject: "ens2f0np0", want: StatusFail, msg: []string{"dropped 50000 "}},
		{name: "counter reset", prev: func(prev, cur *node.Snapshot) {
			roceDropsSince(1_000_000)(prev)
			roceDropsSince(3)(cur)
		}, id: "no_packet_discards", subject: "ens2f0np0", want: StatusOK},
		{name: "no counters", snap: func(s *node.Snapshot) {
			dropEth(rx(s), node.FamilyPriorityDiscards)
			dropEth(rx(s), node.FamilyPHYDiscards)
		}, id: "no_packet_discards", subject: "ens2f0np0", want: StatusSkipped, msg: []string{"no receive-discard counters"}},
		{name: "infiniband", snap: makeIB, id: "no_packet_discards", subject: "ens2f0np0", want: StatusSkipped, msg: []string{SkipInfiniBand}},

		{name: "zero since boot", id: "no_uncorrected_phy_errors", subject: "ens2f0np0", want: StatusOK, msg: []string{"since boot"}},
		{name: "some since boot", snap: func(s *node.Snapshot) { setEth(rx(s), node.FamilyPHYUncorrectedSymbolErrors, "", -1, "", 37) },
			id: "no_uncorrected_phy_errors", subject: "ens2f0np0", want: StatusWarn, msg: []string{"37", "since boot"}, fix: []string{"ethtool -m ens2f0np0", "--show-fec"}},
		{name: "rising", prev: func(prev, cur *node.Snapshot) {
			setEth(rx(prev), node.FamilyPHYUncorrectedSymbolErrors, "", -1, "", 37)
			setEth(rx(cur), node.FamilyPHYUncorrectedSymbolErrors, "", -1, "", 40)
		}, id: "no_uncorrected_phy_errors", subject: "ens2f0np0", want: StatusFail, msg: []string{"3 uncorrected", "last 10s", "40 since boot"}},
		{name: "old, not rising", prev: func(prev, cur *node.Snapshot) {
			setEth(rx(prev), node.FamilyPHYUncorrectedSymbolErrors, "", -1, "", 37)
			setEth(rx(cur), node.FamilyPHYUncorrectedSymbolErrors, "", -1, "", 37)
		}, id: "no_uncorrected_phy_errors", subject: "ens2f0np0", want: StatusWarn, msg: []string{"37 uncorrected PHY symbol error(s) on ens2f0np0 since boot, none new in the last 10s"}, fix: []string{"--show-fec"}},
		{name: "reset between samples", prev: func(prev, cur *node.Snapshot) {
			setEth(rx(prev), node.FamilyPHYUncorrectedSymbolErrors, "", -1, "", 37)
			setEth(rx(cur), node.FamilyPHYUncorrectedSymbolErrors, "", -1, "", 2)
		}, id: "no_uncorrected_phy_errors", subject: "ens2f0np0", want: StatusWarn, msg: []string{"2 uncorrected", "restarted"}},
		{name: "no counter", snap: func(s *node.Snapshot) { dropEth(rx(s), node.FamilyPHYUncorrectedSymbolErrors) },
			id: "no_uncorrected_phy_errors", subject: "ens2f0np0", want: StatusSkipped},
		{name: "ethtool off", snap: func(s *node.Snapshot) { s.Ethtool = nil; delete(s.Sources, "ethtool") },
			id: "no_uncorrected_phy_errors", subject: "ens2f0np0", want: StatusSkipped, msg: []string{"--collector.ethtool"}},

		{name: "one sample", id: "no_link_flaps", subject: "ens2f0np0", want: StatusSkipped, msg: []string{"carrier_changes 2"}},
		{name: "steady", prev: func(_, _ *node.Snapshot) {}, id: "no_link_flaps", subject: "ens2f0np0", want: StatusOK},
		{name: "flapped", prev: func(_, cur *node.Snapshot) {
			cur.Interfaces["ens2f0np0"].CarrierChanges += 2
			setCounter(&port(cur, 1).Counters, "link_downed", 2)
		}, id: "no_link_flaps", subject: "ens2f0np0", want: StatusFail, msg: []string{"carrier_changes +2", "link_downed +1"}, fix: []string{"ethtool -m ens2f0np0"}},

		{name: "zero", id: "no_transport_retries_exceeded", subject: "mlx5_1", want: StatusOK},
		{name: "since boot", snap: func(s *node.Snapshot) { setCounter(&port(s, 1).HWCounters, "req_transport_retries_exceeded", 5) },
			id: "no_transport_retries_exceeded", subject: "mlx5_1", want: StatusWarn, msg: []string{"5 since boot"}},
		{name: "rising", prev: func(_, cur *node.Snapshot) {
			setCounter(&port(cur, 1).HWCounters, "req_transport_retries_exceeded", 5)
		},
			id: "no_transport_retries_exceeded", subject: "mlx5_1", want: StatusFail, msg: []string{"rose by 5"}},
		{name: "since boot, not rising", prev: func(prev, cur *node.Snapshot) {
			setCounter(&port(prev, 1).HWCounters, "req_transport_retries_exceeded", 5)
			setCounter(&port(cur, 1).HWCounters, "req_transport_retries_exceeded", 5)
		}, id: "no_transport_retries_exceeded", subject: "mlx5_1", want: StatusWarn, msg: []string{"is 5 since boot", "none new in the last 10s"}},
		{name: "zero, two samples", prev: func(_, _ *node.Snapshot) {}, id: "no_transport_retries_exceeded", subject: "mlx5_1", want: StatusOK, msg: []string{"unchanged in the last 10s"}},
		{name: "absent", snap: func(s *node.Snapshot) { dropCounter(&port(s, 1).HWCounters, "req_transport_retries_exceeded") },
			id: "no_transport_retries_exceeded", subject: "mlx5_1", want: StatusSkipped},
	})
}

func TestNCCLEnv(t *testing.T) {
	runCases(t, []checkCase{
		{name: "resolves", id: "nccl_env", subject: "node", want: StatusOK,
			msg: []string{"NCCL_SOCKET_IFNAME==ens1f0np0,ens2f0np0,ens3f0np0 NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1 NCCL_IB_GID_INDEX=3"}},
		{name: "index from the table", snap: func(s *node.Snapshot) {
			for i := 0; i < testRails; i++ {
				port(s, i).GIDs = gids(netdevName(i), railIP(i), 5)
			}
		}, id: "nccl_env", subject: "node", want: StatusOK, msg: []string{"NCCL_IB_GID_INDEX=5"}},
		{name: "index differs", snap: func(s *node.Snapshot) { port(s, 1).GIDs = gids("ens2f0np0", railIP(1), 5) },
			id: "nccl_env", subject: "node", want: StatusWarn,
			msg:    []string{"NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1", "differs", "3 on mlx5_0, mlx5_2", "5 on mlx5_1", "unset or -1"},
			notMsg: []string{"NCCL_IB_GID_INDEX="}, fix: []string{"NCCL_IB_GID_INDEX=-1"}},
		{name: "missing GID", snap: func(s *node.Snapshot) { port(s, 2).GIDs = port(s, 2).GIDs[:2] },
			id: "nccl_env", subject: "node", want: StatusWarn, msg: []string{"NCCL_IB_GID_INDEX=3", "no RoCE v2 GID carries 192.168.102.11 on mlx5_2"}},
		{name: "without plan: active ports", noPlan: true, snap: func(s *node.Snapshot) {
			p := port(s, 2)
			p.State, p.PhysState = 1, 3
		}, id: "nccl_env", subject: "node", want: StatusOK,
			msg: []string{"NCCL_SOCKET_IFNAME==ens1f0np0,ens2f0np0 NCCL_IB_HCA==mlx5_0:1,mlx5_1:1 NCCL_IB_GID_INDEX=3", "no plan entry"}},
		{name: "infiniband needs no GID index", noPlan: true, snap: makeIB, id: "nccl_env", subject: "node", want: StatusOK,
			msg: []string{"NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1"}, notMsg: []string{"GID_INDEX"}},
	})
}

// TestNoRDMADevice: the root cause is reported and every other check is skipped
// once, for the node, instead of failing per port.
func TestNoRDMADevice(t *testing.T) {
	s := buildSnap()
	s.Devices = nil
	s.NICs = []node.NIC{{Address: "0000:18:00.0", VendorID: "0x15b3", DeviceID: "0x1021"}}
	fs := Run(s, testPlan(t), "node01")
	checkInvariants(t, fs)
	if len(fs) != len(Checks()) {
		t.Fatalf("got %d findings, want one per check (%d):\n%s", len(fs), len(Checks()), dump(fs))
	}
	if fs[0].ID != "rdma_nic_present" || fs[0].Status != StatusFail || !strings.Contains(fs[0].Message, "no RDMA driver") {
		t.Errorf("first finding = %+v, want rdma_nic_present failing with the missing driver", fs[0])
	}
	for _, f := range fs[2:] {
		if f.Status != StatusSkipped || f.Message != SkipNoRDMADevice || f.Subject != SubjectNode {
			t.Errorf("%s: %s %q, want skipped %q", f.ID, f.Status, f.Message, SkipNoRDMADevice)
		}
	}
}

// cpuOnly is a CPU node of a mixed cluster: no RDMA stack, no RDMA vendor's NIC
// on the PCI bus, as the reader reports it.
func cpuOnly() *node.Snapshot {
	s := buildSnap()
	s.Devices, s.NICs = nil, nil
	s.Interfaces, s.PCI, s.Ethtool, s.DCB = nil, nil, nil, nil
	s.Modules = map[string]bool{}
	for _, src := range []string{"rdma", "netdev", "pcie", "ethtool", "dcb"} {
		s.Sources[src] = node.SourceAbsent
	}
	return s
}

func TestNotAnRDMANode(t *testing.T) {
	plan := testPlan(t)
	for _, c := range []struct {
		name     string
		plan     *config.Plan
		node     string
		snap     func(*node.Snapshot)
		notRDMA  bool
		reason   string
		wantFail string
	}{
		{name: "no plan", node: "cpu-01", notRDMA: true, reason: "no cluster plan lists it"},
		{name: "not in the plan", plan: plan, node: "cpu-01", notRDMA: true, reason: `the cluster plan does not list node "cpu-01"`},
		{name: "no name", plan: plan, notRDMA: true, reason: "its name is unknown"},
		{name: "in the plan", plan: plan, node: "node01", wantFail: "no RDMA device and no Mellanox/NVIDIA"},
		{name: "NIC without driver", plan: plan, node: "cpu-01", wantFail: "no RDMA driver",
			snap: func(s *node.Snapshot) {
				s.NICs = []node.NIC{{Address: "0000:18:00.0", VendorID: "0x15b3", DeviceID: "0x1021"}}
			}},
		{name: "PCI bus not scanned", node: "cpu-01", wantFail: "pcie collector is disabled", snap: func(s *node.Snapshot) { delete(s.Sources, "pcie") }},
		{name: "PCI bus partly read", node: "cpu-01", wantFail: "no RDMA device", snap: func(s *node.Snapshot) { s.Sources["pcie"] = node.SourcePartial }},
		{name: "rdma collector off", node: "cpu-01", wantFail: "no RDMA device", snap: func(s *node.Snapshot) { delete(s.Sources, "rdma") }},
		{name: "RDMA devices unreadable", node: "cpu-01", snap: func(s *node.Snapshot) { s.Sources["rdma"] = node.SourceFailed }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := cpuOnly()
			if c.snap != nil {
				c.snap(s)
			}
			fs := Run(s, c.plan, c.node)
			checkInvariants(t, fs)
			if len(fs) != len(Checks()) {
				t.Fatalf("%d findings, want one per check (%d):\n%s", len(fs), len(Checks()), dump(fs))
			}
			for _, f := range fs {
				isNot := f.Status == StatusSkipped && strings.HasPrefix(f.Message, SkipNotRDMANode+": ")
				if c.notRDMA && (!isNot || !strings.Contains(f.Message, c.reason)) {
					t.Errorf("%s %s: %s %q, want skipped as not an RDMA node (%q)", f.ID, f.Subject, f.Status, f.Message, c.reason)
				}
				if !c.notRDMA && strings.Contains(f.Message, SkipNotRDMANode) {
					t.Errorf("%s: %q, but the node is not known to lack RDMA", f.ID, f.Message)
				}
			}
			if c.wantFail != "" {
				if f := fs[0]; f.ID != "rdma_nic_present" || f.Status != StatusFail || !strings.Contains(f.Message, c.wantFail) {
					t.Errorf("rdma_nic_present = %s %q, want fail with %q", f.Status, f.Message, c.wantFail)
				}
			}
		})
	}
}

func TestNilSnapshot(t *testing.T) {
	fs := Run(nil, nil, "node01")
	checkInvariants(t, fs)
	for _, f := range fs {
		if f.Status != StatusSkipped {
			t.Errorf("%s: %s, want skipped without a snapshot", f.ID, f.Status)
		}
	}
}

// TestInfiniBandSkipsRoCE: on an IB node every RoCE-only check is skipped per port
// with the same reason, and the link checks still run.
func TestInfiniBandSkipsRoCE(t *testing.T) {
	s := buildSnap()
	makeIB(s)
	fs := Run(s, nil, "node01")
	checkInvariants(t, fs)
	roceOnly := []string{"port_rate_matches_netdev", "roce_mtu_4096_possible", "mtu_consistent", "roce_v2_gid_present",
		"default_roce_mode_v2", "global_pause_off_with_pfc", "ecn_enabled", "no_pfc_storm"}
	for _, id := range roceOnly {
		for i := 0; i < testRails; i++ {
			f, ok := find(fs, id, netdevName(i))
			if !ok {
				f, ok = find(fs, id, devName(i))
			}
			if !ok {
				t.Errorf("%s: no finding for rail %d", id, i)
				continue
			}
			if f.Status != StatusSkipped || f.Message != SkipInfiniBand {
				t.Errorf("%s %s: %s %q, want skipped %q", id, f.Subject, f.Status, f.Message, SkipInfiniBand)
			}
		}
	}
	if f, _ := find(fs, "port_active", "mlx5_0"); f.Status != StatusOK {
		t.Errorf("port_active on an active IB port: %+v", f)
	}
}

func TestChecksList(t *testing.T) {
	required := []string{"rdma_nic_present", "rdma_driver_loaded", "verbs_device_usable", "port_active", "link_layer_expected",
		"compute_ip_configured", "mtu_matches_plan", "roce_mtu_4096_possible", "mtu_consistent", "roce_v2_gid_present",
		"default_roce_mode_v2", "pfc_enabled_on_roce_priority", "pfc_only_on_roce_priority", "global_pause_off_with_pfc",
		"trust_mode_matches_plan", "ecn_enabled", "pcie_bandwidth_sufficient", "pcie_link_not_degraded", "firmware_consistent",
		"link_rate_matches_plan", "no_pfc_storm", "no_uncorrected_phy_errors", "nccl_env", "plan_node_known"}
	ids := map[string]bool{}
	for _, c := range Checks() {
		if ids[c.ID] {
			t.Errorf("duplicate check id %s", c.ID)
		}
		ids[c.ID] = true
		if c.Title == "" || c.Description == "" {
			t.Errorf("%s lacks a title or description", c.ID)
		}
		if c.Severity != SeverityCritical && c.Severity != SeverityWarning {
			t.Errorf("%s has severity %q, want critical or warning", c.ID, c.Severity)
		}
	}
	for _, id := range required {
		if !ids[id] {
			t.Errorf("check %s missing", id)
		}
	}
	if Checks()[0].ID != "rdma_nic_present" || Checks()[1].ID != "rdma_driver_loaded" {
		t.Errorf("root-cause checks must come first: %s, %s", Checks()[0].ID, Checks()[1].ID)
	}
	// Every check reports on the healthy node, so a check cannot silently drop out.
	fs := Run(buildSnap(), testPlan(t), "node01")
	got := map[string]bool{}
	for _, f := range fs {
		got[f.ID] = true
		// The hand-built node has no GPUs; TestGPUChecksHealthyDGX covers the
		// GPU checks on a healthy GPU node.
		// Its rails have a subnet each: the multi-NIC checks have nothing
		// to judge (checks_hostnet_test.go puts them in one).
		if f.Status != StatusOK && !(f.Status == StatusSkipped && strings.Contains(f.Message, "two samples")) && !(f.Status == StatusSkipped && slices.Contains(gpuChecks, f.ID)) &&
			!(f.Status == StatusSkipped && strings.Contains(f.Message, "no two compute interfaces share an IPv4 subnet")) {
			t.Errorf("healthy hand-built node: %s %s is %s: %s", f.ID, f.Subject, f.Status, f.Message)
		}
	}
	for id := range ids {
		if !got[id] {
			t.Errorf("check %s produced no finding", id)
		}
	}
}

func TestDeterministic(t *testing.T) {
	s := buildSnap()
	s.Interfaces["ens2f0np0"].MTU = 1500
	s.Devices[2].FirmwareVersion = "1.2.3"
	withPrevious(s, 10*time.Second)
	want := Run(s, testPlan(t), "node01")
	for i := 0; i < 20; i++ {
		got := Run(s, testPlan(t), "node01")
		if len(got) != len(want) {
			t.Fatalf("run %d: %d findings, want %d", i, len(got), len(want))
		}
		for j := range got {
			if !reflect.DeepEqual(got[j], want[j]) {
				t.Fatalf("run %d differs at %d:\n%+v\n%+v", i, j, got[j], want[j])
			}
		}
	}
}

// TestSubjectOrder: findings come in subject order whatever order the collector
// listed the devices in.
func TestSubjectOrder(t *testing.T) {
	s := buildSnap()
	for i, j := 0, len(s.Devices)-1; i < j; i, j = i+1, j-1 {
		s.Devices[i], s.Devices[j] = s.Devices[j], s.Devices[i]
	}
	fs := Run(s, nil, "node01")
	checkInvariants(t, fs)
	var got []string
	for _, f := range fs {
		if f.ID == "port_active" {
			got = append(got, f.Subject)
		}
	}
	if strings.Join(got, " ") != "mlx5_0 mlx5_1 mlx5_2" {
		t.Errorf("port_active subjects = %v, want mlx5_0 mlx5_1 mlx5_2", got)
	}
}

func TestNaturalCompare(t *testing.T) {
	got := []string{"mlx5_10", "node", "mlx5_2", "ens10f0np0", "ens2f0np0", "mlx5_1/2", "mlx5_1/10", "mlx5_01"}
	want := []string{"ens2f0np0", "ens10f0np0", "mlx5_1/2", "mlx5_1/10", "mlx5_01", "mlx5_2", "mlx5_10", "node"}
	slices.SortFunc(got, naturalCompare)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("natural order = %v, want %v", got, want)
	}
}

// Linux allows any bytes in interface and device names; findings are
// printed and exported as labels, which must be UTF-8.
func TestFindingsAreValidUTF8(t *testing.T) {
	s := buildSnap()
	const bad = "v\xff\xfe"
	old := s.Devices[0].Ports[0].Interface
	s.Devices[0].Name, s.Devices[0].Ports[0].Device = "mlx5_\xc3", "mlx5_\xc3"
	s.Devices[0].Ports[0].Interface = bad
	s.Devices[0].Ports[0].State = 1 // down, so port_active names it in a failure
	s.Interfaces[bad], s.Ethtool[bad], s.DCB[bad] = s.Interfaces[old], s.Ethtool[old], s.DCB[old]
	s.Interfaces[bad].Name = bad
	delete(s.Interfaces, old)
	delete(s.Ethtool, old)
	delete(s.DCB, old)
	fs := Run(s, nil, "node01")
	escaped, named := false, false
	for _, f := range fs {
		for _, text := range []string{f.Message, f.Fix} {
			if !utf8.ValidString(text) {
				t.Errorf("%s %s: invalid UTF-8 in %q", f.ID, f.Subject, text)
			}
			escaped = escaped || strings.Contains(text, `v\xff\xfe`)
		}
		// The subject is the name itself, as the snapshot and the
		// interface's series know it.
		named = named || f.Subject == bad
	}
	if !escaped {
		t.Error("no finding names the interface (escaped as v\\xff\\xfe)")
	}
	if !named {
		t.Error("no finding has the interface as its subject")
	}
}

// A device sysfs lists but that could not be read is its own state: not a
// device without ports, not an interface missing from the node, not "all ok".
func TestUnreadableDevices(t *testing.T) {
	plan := testPlan(t)
	t.Run("one device stuck", func(t *testing.T) {
		s := buildSnap()
		s.Devices[1] = &node.Device{Name: "mlx5_1", Unreadable: "its reads did not return within 3.75s"}
		s.Sources[node.SourceRDMA] = node.SourcePartial
		fs := Run(s, plan, "node01")
		checkInvariants(t, fs)
		if f, _ := find(fs, "rdma_devices_readable", "mlx5_1"); f.Status != StatusFail || !strings.Contains(f.Message, "did not return") || !strings.Contains(f.Fix, "firmware") {
			t.Errorf("rdma_devices_readable mlx5_1 = %s %q (fix %q)", f.Status, f.Message, f.Fix)
		}
		if f, _ := find(fs, "planned_interface_present", "ens2f0np0"); f.Status == StatusOK || strings.Contains(f.Message, "not on this node") {
			t.Errorf("planned_interface_present ens2f0np0 = %s %q", f.Status, f.Message)
		}
		if f, _ := find(fs, "port_active", "mlx5_1"); f.Status != StatusSkipped || !strings.Contains(f.Message, "could not be read") {
			t.Errorf("port_active mlx5_1 = %s %q, want a skip saying the device could not be read", f.Status, f.Message)
		}
		if f, _ := find(fs, "rdma_nic_present", SubjectNode); f.Status != StatusOK {
			t.Errorf("rdma_nic_present = %s %q (the other devices were read)", f.Status, f.Message)
		}
		if f, _ := find(fs, "port_active", "mlx5_0"); f.Status != StatusOK {
			t.Errorf("port_active mlx5_0 = %s: the readable devices are still judged", f.Status)
		}
	})
	t.Run("listing failed", func(t *testing.T) {
		s := buildSnap()
		s.Devices = nil
		s.Sources[node.SourceRDMA] = node.SourceFailed
		fs := Run(s, plan, "node01")
		checkInvariants(t, fs)
		if f, _ := find(fs, "rdma_nic_present", SubjectNode); f.Status != StatusSkipped || !strings.Contains(f.Message, "cannot tell") {
			t.Errorf("rdma_nic_present = %s %q, want a skip: a failed read is not a missing NIC", f.Status, f.Message)
		}
		if f, _ := find(fs, "rdma_devices_readable", SubjectNode); f.Status != StatusFail {
			t.Errorf("rdma_devices_readable = %s %q", f.Status, f.Message)
		}
		if f, _ := find(fs, "port_active", SubjectNode); f.Status != StatusSkipped || f.Message != SkipRDMAUnreadable {
			t.Errorf("port_active = %s %q", f.Status, f.Message)
		}
	})
	t.Run("all read", func(t *testing.T) {
		fs := Run(buildSnap(), plan, "node01")
		if f, _ := find(fs, "rdma_devices_readable", SubjectNode); f.Status != StatusOK {
			t.Errorf("rdma_devices_readable = %s %q", f.Status, f.Message)
		}
	})
}

// addVF gives rail 0's ConnectX-7 an SR-IOV virtual function, mlx5_3 on
// 0000:18:00.2, with its own netdev and GIDs, as the host sees it: its link
// registers are reserved (speed and width unknown), the bandwidth above it is
// the card's upstream link.
func addVF(s *node.Snapshot, vfAddr, pfAddr string) {
	pf := s.Devices[0]
	vf := *pf
	vp := *pf.Ports[0]
	vf.Name, vf.PCIAddress, vf.HCAType = "mlx5_3", vfAddr, "MT4126"
	vp.Device, vp.Interface, vp.GIDs = "mlx5_3", "ens1f0v0", gids("ens1f0v0", netip.MustParseAddr("192.168.100.12"), 3)
	vf.Ports = []*node.Port{&vp}
	s.Devices = append(s.Devices, &vf)
	s.Interfaces["ens1f0v0"] = &node.Interface{Name: "ens1f0v0", RDMADevice: "mlx5_3", Port: 1, MTU: 9000, OperState: "up", SpeedMbps: 400000, BusInfo: vfAddr}
	s.PCI[vfAddr] = &node.PCIFunction{Address: vfAddr, RDMADevices: []string{"mlx5_3"}, VendorID: "0x15b3", DeviceID: "0x101e",
		AvailableBandwidth: 63.014e9, LimitedBy: "0000:17:01.0", PhysFn: pfAddr, AER: map[string]uint64{}}
}

// TestSRIOVVirtualFunction: a VF shares its PF's port and link. Its rate is not
// added to the PF's, and its own (reserved) link is not judged.
func TestSRIOVVirtualFunction(t *testing.T) {
	vf := func(s *node.Snapshot) { addVF(s, "0000:18:00.2", pciAddr(0)) }
	orphan := func(s *node.Snapshot) { addVF(s, "0000:58:00.2", "0000:58:00.0") }
	runCases(t, []checkCase{
		{name: "PF", snap: vf, id: "pcie_bandwidth_sufficient", subject: "mlx5_0", want: StatusOK, msg: []string{"for 400 Gb/s of port rate"}, notMsg: []string{"800", "mlx5_3"}},
		{name: "PF without plan", noPlan: true, snap: vf, id: "pcie_bandwidth_sufficient", subject: "mlx5_0", want: StatusOK, msg: []string{"for 400 Gb/s of port rate"}},
		{name: "VF", noPlan: true, snap: vf, id: "pcie_bandwidth_sufficient", subject: "mlx5_3", want: StatusSkipped,
			msg: []string{"mlx5_3 is an SR-IOV virtual function of 0000:18:00.0", "no PCIe link of its own", "judged on mlx5_0"}},
		{name: "VF", noPlan: true, snap: vf, id: "pcie_link_not_degraded", subject: "mlx5_3", want: StatusSkipped,
			msg: []string{"SR-IOV virtual function of 0000:18:00.0", "judged on mlx5_0"}},
		{name: "VF planned, PF not", snap: vf, plan: func(p *config.Plan) {
			p.Nodes[0].Interfaces[0].Netdev, p.Nodes[0].Interfaces[0].RDMADevice = "ens1f0v0", "mlx5_3"
			p.Nodes[0].Interfaces[0].Address = netip.MustParsePrefix("192.168.100.12/24")
		}, id: "pcie_bandwidth_sufficient", subject: "mlx5_3", want: StatusSkipped,
			msg: []string{"virtual function of 0000:18:00.0", "mlx5_0, which is not a compute port of the plan", "lspci -vv -s 0000:18:00.0"}},
		{name: "VF of a PF without RDMA", noPlan: true, snap: orphan, id: "pcie_bandwidth_sufficient", subject: "mlx5_3", want: StatusSkipped,
			msg: []string{"virtual function of 0000:58:00.0", "no RDMA device on 0000:58:00.0", "lspci -vv -s 0000:58:00.0"}},
		// The PF's own link is still judged: downtrained, it fails on its own port.
		{name: "PF downtrained", snap: func(s *node.Snapshot) {
			vf(s)
			f := s.PCI[pciAddr(0)]
			f.CurrentWidth, f.CurrentBandwidth, f.AvailableBandwidth = 8, 31.507e9, 31.507e9
		}, id: "pcie_bandwidth_sufficient", subject: "mlx5_0", want: StatusFail, msg: []string{"252.1 Gb/s", "400 Gb/s of port rate"}},
	})
}

// makeDualPortCX3 makes rail 0 a dual-port 40G QDR ConnectX-3 on its Gen3 x8
// link (63 Gb/s usable), both ports up, without per-port hw_counters/.
func makeDualPortCX3(s *node.Snapshot) {
	d := s.Devices[0]
	d.Driver, d.HCAType = "mlx4_core", "MT4099"
	p1 := d.Ports[0]
	p1.RateBitsPerSecond, p1.HWCounters = 40e9, nil
	p2 := *p1
	p2.Number, p2.Interface, p2.Counters = 2, "", slices.Clone(p1.Counters)
	d.Ports = append(d.Ports, &p2)
	f := s.PCI[pciAddr(0)]
	f.CurrentSpeedGTs, f.MaxSpeedGTs, f.CurrentWidth, f.MaxWidth = 8, 8, 8, 8
	f.CurrentBandwidth, f.MaxBandwidth, f.AvailableBandwidth = 7.876e9, 7.876e9, 7.876e9
}

// TestMultiPortDesignLimit: a card whose link carries each port but not all of
// them at line rate at once is built that way; only a port that cannot reach
// line rate alone, or a link below its maximum, is a fault.
func TestMultiPortDesignLimit(t *testing.T) {
	runCases(t, []checkCase{
		{name: "dual-port ConnectX-3", noPlan: true, snap: makeDualPortCX3, id: "pcie_bandwidth_sufficient", subject: "mlx5_0", want: StatusWarn,
			msg: []string{"63 Gb/s usable (8 GT/s x8) for 80 Gb/s of combined port rate of mlx5_0's 2 ports", "each port alone fits", "both ports cannot run at line rate at once", "design limit"},
			fix: []string{"the card is built this way", "replace it"}, notFix: []string{"needs repair"}},
		{name: "both ports fit with little headroom", noPlan: true, snap: func(s *node.Snapshot) {
			makeDualPortCX3(s)
			s.Devices[0].Ports[0].RateBitsPerSecond, s.Devices[0].Ports[1].RateBitsPerSecond = 30e9, 30e9
		}, id: "pcie_bandwidth_sufficient", subject: "mlx5_0", want: StatusOK, msg: []string{"for 60 Gb/s", "design limit"}},
		{name: "one port down", noPlan: true, snap: func(s *node.Snapshot) {
			makeDualPortCX3(s)
			p := s.Devices[0].Ports[1]
			p.State, p.PhysState = 1, 3
		}, id: "pcie_bandwidth_sufficient", subject: "mlx5_0", want: StatusOK, msg: []string{"for 40 Gb/s of port rate"}},
		{name: "downtrained to x4", noPlan: true, snap: func(s *node.Snapshot) {
			makeDualPortCX3(s)
			f := s.PCI[pciAddr(0)]
			f.CurrentWidth, f.CurrentBandwidth, f.AvailableBandwidth = 4, 3.938e9, 3.938e9
		}, id: "pcie_bandwidth_sufficient", subject: "mlx5_0", want: StatusFail, msg: []string{"cannot reach line rate"}, fix: []string{"reseat"}},
		{name: "narrow upstream port", noPlan: true, snap: func(s *node.Snapshot) {
			makeDualPortCX3(s)
			f := s.PCI[pciAddr(0)]
			f.AvailableBandwidth, f.LimitedBy = 5.9e9, "0000:17:01.0"
		}, id: "pcie_bandwidth_sufficient", subject: "mlx5_0", want: StatusFail, msg: []string{"limited by upstream port 0000:17:01.0"}},
		{name: "a port faster than the link", noPlan: true, snap: func(s *node.Snapshot) {
			makeDualPortCX3(s)
			s.Devices[0].Ports[0].RateBitsPerSecond = 100e9
		}, id: "pcie_bandwidth_sufficient", subject: "mlx5_0", want: StatusFail, msg: []string{"140 Gb/s", "cannot reach line rate"}},
	})
}

// TestMLX4HWCountersOptional: mlx4 gives its ports hw_counters/ only with
// firmware per-port diagnostics, so their absence beside counters/ is no fault.
func TestMLX4HWCountersOptional(t *testing.T) {
	runCases(t, []checkCase{
		{name: "mlx4 without hw_counters/", noPlan: true, snap: makeDualPortCX3, id: "port_counters_readable", subject: "mlx5_0/1", want: StatusOK,
			msg: []string{"4 counters/ values read", "no hw_counters/", "per-port diagnostic counters"}},
		{name: "mlx4 without counters/", noPlan: true, snap: func(s *node.Snapshot) {
			makeDualPortCX3(s)
			s.Devices[0].Ports[1].Counters = nil
		}, id: "port_counters_readable", subject: "mlx5_0/2", want: StatusWarn, msg: []string{"counters/ and hw_counters/"}},
	})
}

// makeEFA turns rail 0 into an AWS EFA device as its driver registers it: node
// type unspecified, link layer Unknown (IB_LINK_LAYER_UNSPECIFIED), no netdev of
// its own and a single GID, its EFA address.
func makeEFA(s *node.Snapshot) {
	d, p := s.Devices[0], port(s, 0)
	d.Name, d.Driver, d.HCAType, d.BoardID = "efa_0", "efa", "", ""
	d.NodeType, d.NodeTypeName = node.NodeTypeUnspecified, "unspecified"
	p.Device, p.LinkLayer, p.Interface, p.RateBitsPerSecond = "efa_0", node.LinkLayerUnknown, "", 100e9
	p.Counters, p.DefaultRoCEMode = nil, ""
	p.GIDs = []node.GID{{Index: 0, GID: "fe80:0000:0000:0000:04d7:a2ff:fe12:3456", Type: node.GIDTypeRoCEv1}}
	s.PCI[pciAddr(0)].RDMADevices = []string{"efa_0"}
	delete(s.Interfaces, netdevName(0))
	delete(s.Ethtool, netdevName(0))
	delete(s.DCB, netdevName(0))
	s.Modules["efa"] = true
}

// makeIWARP turns rail 0 into an Intel X722 running iWARP under i40iw (kernels
// before 5.14): node type RNIC, link layer Ethernet, its one GID the MAC padded
// with zeros, no RoCE mode.
func makeIWARP(s *node.Snapshot) {
	d, p := s.Devices[0], port(s, 0)
	d.Name, d.Driver, d.HCAType, d.BoardID = "i40iw0", "i40e", "I40IW", "I40IW Board ID"
	d.NodeType, d.NodeTypeName = node.NodeTypeRNIC, "RNIC"
	p.Device, p.DefaultRoCEMode = "i40iw0", ""
	p.GIDs = []node.GID{{Index: 0, GID: "3cfd:fe9c:5b60:0000:0000:0000:0000:0000", Type: node.GIDTypeRoCEv1}}
	s.Interfaces[netdevName(0)].RDMADevice = "i40iw0"
	s.PCI[pciAddr(0)].RDMADevices = []string{"i40iw0"}
	s.Modules["i40e"], s.Modules["i40iw"] = true, true
}

func iwarpPlan(p *config.Plan) { p.Nodes[0].Interfaces[0].RDMADevice = "i40iw0" }

// TestNonRoCEPorts: EFA and iWARP ports are RDMA ports that are not RoCE; the RoCE
// checks skip them with a reason, as they skip InfiniBand ports, and the other
// rails are still judged.
func TestNonRoCEPorts(t *testing.T) {
	const efaWhy, iwarpWhy = "efa_0 is not a RoCE port (EFA", "i40iw0 is not a RoCE port (iWARP"
	var cases []checkCase
	for _, c := range []struct{ id, subject, what string }{
		{"roce_v2_gid_present", "efa_0", "a RoCE v2 GID does not apply"},
		{"default_roce_mode_v2", "efa_0", "RoCE mode does not apply"},
		{"roce_mtu_4096_possible", "efa_0", "RoCE path MTU does not apply"},
		{"mtu_consistent", "efa_0", "does not apply"},
		{"port_rate_matches_netdev", "efa_0", "does not apply"},
		{"global_pause_off_with_pfc", "efa_0", "802.3x pause does not apply"},
		{"ecn_enabled", "efa_0", "ECN (DCQCN) does not apply"},
		{"no_pfc_storm", "efa_0", "does not apply"},
		{"no_packet_discards", "efa_0", "does not apply"},
	} {
		cases = append(cases, checkCase{name: "EFA", noPlan: true, snap: makeEFA, id: c.id, subject: c.subject, want: StatusSkipped,
			msg: []string{efaWhy, "link layer Unknown", "node type 7: unspecified", c.what}})
	}
	for _, c := range []struct{ id, subject, what string }{
		{"roce_v2_gid_present", "ens1f0np0", "a RoCE v2 GID does not apply"},
		{"default_roce_mode_v2", "i40iw0", "RoCE mode does not apply"},
		{"roce_mtu_4096_possible", "ens1f0np0", "RoCE path MTU does not apply"},
		{"pfc_enabled_on_roce_priority", "ens1f0np0", "PFC does not apply"},
		{"pfc_only_on_roce_priority", "ens1f0np0", "PFC does not apply"},
		{"trust_mode_matches_plan", "ens1f0np0", "trust mode does not apply"},
		{"ecn_enabled", "ens1f0np0", "ECN (DCQCN) does not apply"},
	} {
		cases = append(cases, checkCase{name: "iWARP", plan: iwarpPlan, snap: makeIWARP, id: c.id, subject: c.subject, want: StatusSkipped,
			msg: []string{iwarpWhy, "RDMA over TCP", "node type 4: RNIC", c.what}})
	}
	cases = append(cases,
		// The Ethernet side of an iWARP port is still judged.
		checkCase{name: "iWARP MTU", plan: iwarpPlan, snap: func(s *node.Snapshot) { makeIWARP(s); s.Interfaces["ens1f0np0"].MTU = 1500 },
			id: "mtu_matches_plan", subject: "ens1f0np0", want: StatusFail, msg: []string{"MTU 1500"}},
		checkCase{name: "iWARP rate", plan: iwarpPlan, snap: makeIWARP, id: "port_rate_matches_netdev", subject: "i40iw0", want: StatusOK},
		// Global pause is not wrong on a TCP port because the plan asks RoCE for PFC.
		checkCase{name: "iWARP with global pause", plan: iwarpPlan, snap: func(s *node.Snapshot) {
			makeIWARP(s)
			s.Ethtool["ens1f0np0"].GlobalPause = &node.GlobalPause{RX: true, TX: true}
			s.DCB["ens1f0np0"].PFCEnabled = [8]bool{}
		}, id: "global_pause_off_with_pfc", subject: "ens1f0np0", want: StatusOK, msg: []string{"no PFC is in use"}},
		checkCase{name: "RoCE rail beside iWARP", plan: iwarpPlan, snap: makeIWARP, id: "roce_v2_gid_present", subject: "ens2f0np0", want: StatusOK},
		checkCase{name: "RoCE rail beside EFA", noPlan: true, snap: makeEFA, id: "roce_v2_gid_present", subject: "ens2f0np0", want: StatusOK},

		// NCCL's IB transport cannot use them: they are not in NCCL_IB_HCA and
		// need no GID index.
		checkCase{name: "EFA", noPlan: true, snap: makeEFA, id: "nccl_env", subject: "node", want: StatusOK,
			msg:    []string{"NCCL_IB_HCA==mlx5_1:1,mlx5_2:1 NCCL_IB_GID_INDEX=3", "efa_0 is EFA", "aws-ofi-nccl"},
			notMsg: []string{"efa_0:1", "roce_v2_gid_present"}},
		checkCase{name: "iWARP", plan: iwarpPlan, snap: makeIWARP, id: "nccl_env", subject: "node", want: StatusOK,
			msg:    []string{"NCCL_SOCKET_IFNAME==ens1f0np0,ens2f0np0,ens3f0np0 NCCL_IB_HCA==mlx5_1:1,mlx5_2:1 NCCL_IB_GID_INDEX=3", "i40iw0 is iWARP"},
			notMsg: []string{"i40iw0:1", "roce_v2_gid_present"}},
		checkCase{name: "only EFA", noPlan: true, snap: func(s *node.Snapshot) {
			makeEFA(s)
			s.Devices = s.Devices[:1]
		}, id: "nccl_env", subject: "node", want: StatusSkipped, msg: []string{"no RoCE or InfiniBand port", "aws-ofi-nccl"}},
	)
	runCases(t, cases)
}

// TestX722DriverFamily: i40iw drove the X722's iWARP until Linux 5.14, irdma
// since; the driver check names the one the device uses.
func TestX722DriverFamily(t *testing.T) {
	runCases(t, []checkCase{
		{name: "i40iw", plan: iwarpPlan, snap: makeIWARP, id: "rdma_driver_loaded", subject: "node", want: StatusOK,
			msg: []string{"loaded: i40e, i40iw, mlx5_core"}, notMsg: []string{"irdma", "built in"}},
		{name: "irdma on X722", snap: func(s *node.Snapshot) {
			makeIWARP(s)
			s.Devices[0].Name, s.Devices[0].HCAType, s.Devices[0].BoardID = "irdma0", "", ""
			port(s, 0).Device = "irdma0"
			s.Modules["i40iw"], s.Modules["irdma"] = false, true
		}, noPlan: true, id: "rdma_driver_loaded", subject: "node", want: StatusOK, msg: []string{"loaded: i40e, irdma"}, notMsg: []string{"i40iw"}},
	})
}

// makeLAG bonds rail 0's port with a second PF's netdev into bond0 (RoCE LAG):
// the RDMA port's netdev is the bond, whose speed is the sum of its slaves'.
func makeLAG(s *node.Snapshot) {
	p := port(s, 0)
	p.Interface, p.BondSlaves = "bond0", []string{"ens1f0np0", "ens1f1np1"}
	for i := range p.GIDs {
		p.GIDs[i].Interface = "bond0"
	}
	s.Interfaces["bond0"] = &node.Interface{Name: "bond0", RDMADevice: "mlx5_0", Port: 1, MTU: 9000, OperState: "up", SpeedMbps: 800000}
	s.Interfaces["ens1f1np1"] = &node.Interface{Name: "ens1f1np1", RDMADevice: "mlx5_0", Port: 1, MTU: 9000, OperState: "up", SpeedMbps: 400000}
}

func TestRoCELAGRate(t *testing.T) {
	slaveSpeed := func(mbps int) func(s *node.Snapshot) {
		return func(s *node.Snapshot) {
			makeLAG(s)
			s.Interfaces["ens1f0np0"].SpeedMbps, s.Interfaces["ens1f1np1"].SpeedMbps = mbps, mbps
		}
	}
	runCases(t, []checkCase{
		{name: "slave speed", noPlan: true, snap: makeLAG, id: "port_rate_matches_netdev", subject: "mlx5_0", want: StatusOK,
			msg: []string{"rate 400 Gb/s matches", "ens1f0np0 at 400000 Mb/s", "bond0, their sum, at 800000 Mb/s"}},
		{name: "slaves slower", noPlan: true, snap: slaveSpeed(200000), id: "port_rate_matches_netdev", subject: "mlx5_0", want: StatusWarn,
			msg: []string{"400 Gb/s while the slaves of bond0 run at ens1f0np0 at 200000 Mb/s"}, fix: []string{"firmware"}},
		{name: "one slave down", noPlan: true, snap: func(s *node.Snapshot) {
			makeLAG(s)
			s.Interfaces["ens1f1np1"].OperState, s.Interfaces["ens1f1np1"].SpeedMbps = "down", -1
			s.Interfaces["bond0"].SpeedMbps = 400000
		}, id: "port_rate_matches_netdev", subject: "mlx5_0", want: StatusOK, msg: []string{"ens1f0np0 at 400000 Mb/s"}, notMsg: []string{"ens1f1np1"}},
		{name: "slave speeds unknown", noPlan: true, snap: slaveSpeed(-1), id: "port_rate_matches_netdev", subject: "mlx5_0", want: StatusSkipped,
			msg: []string{"no up slave of bond0 (ens1f0np0, ens1f1np1)"}},
	})
}

// A rail past every other node's last one is named with a warning; with the
// pair probes off, or a plan of one node, there is nothing to judge.
func TestRailsTestableByPeers(t *testing.T) {
	narrow := strings.Replace(testPlanYAML, "      - {netdev: ens3f0np0, rdma_device: mlx5_2, ip: 192.168.102.12/24}\n", "", 1)
	for _, tc := range []struct {
		name, yaml string
		want       Status
		subject    string
		text       string
	}{
		{"node02 lacks rail 2", narrow, StatusWarn, "ens3f0np0", "rail 2, ens3f0np0 (mlx5_2), has no partner: every other node in the plan has at most 2"},
		{"every rail paired", testPlanYAML, StatusOK, SubjectNode, "each of the 3 rails has a partner"},
		{"probes off", strings.Replace(narrow, "  enabled: true", "  enabled: false", 1), StatusSkipped, SubjectNode, "pair probes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := config.Parse("unit.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			var got []Finding
			for _, f := range Run(buildSnap(), plan, "node01") {
				if f.ID == "rails_testable_by_peers" {
					got = append(got, f)
				}
			}
			if len(got) != 1 || got[0].Status != tc.want || got[0].Subject != tc.subject || !strings.Contains(got[0].Message, tc.text) {
				t.Errorf("findings %+v", got)
			}
		})
	}
}

// TestSeverityByWhatBreaksJobs: a failure pages (critical) only where a
// running job is hurt now; static configuration is a ticket (warning) even
// when it fails, and a warning is never critical.
func TestSeverityByWhatBreaksJobs(t *testing.T) {
	want := map[string]Severity{
		"port_active": SeverityCritical, "pfc_enabled_on_roce_priority": SeverityCritical,
		"roce_dscp_maps_to_pfc_priority": SeverityCritical, "no_transport_retries_exceeded": SeverityCritical,
		"no_pfc_storm": SeverityCritical, "no_link_flaps": SeverityCritical,
		"iommu_passthrough_or_off": SeverityWarning, "pcie_acs_off_on_gpu_nic_path": SeverityWarning,
		"gpu_nic_affinity": SeverityWarning, "gpu_pcie_link_not_degraded": SeverityWarning,
		"trust_mode_matches_plan": SeverityWarning, "default_roce_mode_v2": SeverityWarning,
	}
	for _, c := range Checks() {
		if w, ok := want[c.ID]; ok && c.Severity != w {
			t.Errorf("%s: severity %s, want %s", c.ID, c.Severity, w)
		}
	}

	// Both sides on findings: a static failure is a warning, a failure that
	// hurts a job is critical, warnings and passes carry none or warning.
	snap := buildSnap()
	snap.DCB["ens1f0np0"].Trust = "pcp"
	snap.DCB["ens2f0np0"].PFCEnabled[3] = false
	fs := Run(snap, testPlan(t), "node01")
	for _, tc := range []struct {
		id, subject string
		st          Status
		sev         Severity
	}{
		{"trust_mode_matches_plan", "ens1f0np0", StatusFail, SeverityWarning},
		{"pfc_enabled_on_roce_priority", "ens2f0np0", StatusFail, SeverityCritical},
		{"pfc_enabled_on_roce_priority", "ens1f0np0", StatusOK, ""},
	} {
		f, ok := find(fs, tc.id, tc.subject)
		if !ok || f.Status != tc.st || f.Severity != tc.sev {
			t.Errorf("%s %s = %s severity %q, want %s severity %q: %s", tc.id, tc.subject, f.Status, f.Severity, tc.st, tc.sev, f.Message)
		}
	}
	for _, f := range fs {
		if f.Status == StatusWarn && f.Severity != SeverityWarning {
			t.Errorf("%s %s warns with severity %q", f.ID, f.Subject, f.Severity)
		}
	}
}

// renameInterface gives the first port's netdev another name everywhere
// the snapshot knows it.
func renameInterface(s *node.Snapshot, name string) {
	old := s.Devices[0].Ports[0].Interface
	s.Devices[0].Ports[0].Interface = name
	for i := range s.Devices[0].Ports[0].GIDs {
		if s.Devices[0].Ports[0].GIDs[i].Interface == old {
			s.Devices[0].Ports[0].GIDs[i].Interface = name
		}
	}
	s.Interfaces[name], s.Ethtool[name], s.DCB[name] = s.Interfaces[old], s.Ethtool[old], s.DCB[old]
	s.Interfaces[name].Name = name
	s.DCB[name].Interface = name
	delete(s.Interfaces, old)
	delete(s.Ethtool, old)
	delete(s.DCB, old)
}

// The kernel takes `x;reboot` as an interface name: a fix that pastes it
// unquoted runs reboot. Every name in every fix is shell-quoted, and one
// that holds an escape sequence is written so that the terminal shows it.
func TestFixesQuoteNames(t *testing.T) {
	for _, tc := range []struct{ name, quoted string }{
		{"x;reboot", `'x;reboot'`},
		{"e\x1b]0;pwned\x07x", `$'e\x1b]0;pwned\x07x'`},
	} {
		s := buildSnap()
		renameInterface(s, tc.name)
		s.DCB[tc.name].PFCEnabled[3] = false
		s.Devices[0].Ports[0].State = 1
		fs := Run(s, nil, "node01")
		fixes := 0
		for _, f := range fs {
			if f.Fix == "" {
				continue
			}
			if strings.ContainsRune(f.Message+f.Fix, 0x1b) || strings.ContainsRune(f.Message+f.Fix, 0x07) {
				t.Errorf("%s: a control character reaches the terminal: %q / %q", f.ID, f.Message, f.Fix)
			}
			if strings.Contains(f.Fix, "x;reboot") || strings.Contains(f.Fix, "pwned") {
				fixes++
				if n, q := strings.Count(f.Fix, "x;reboot")+strings.Count(f.Fix, "pwned"), strings.Count(f.Fix, tc.quoted); n != q {
					t.Errorf("%s: %d mention(s) of %q, %d quoted as %s: %s", f.ID, n, tc.name, q, tc.quoted, f.Fix)
				}
			}
		}
		if fixes == 0 {
			t.Errorf("%q: no fix names the interface", tc.name)
		}
		if f, _ := find(fs, "port_active", s.Devices[0].Name); !strings.Contains(f.Fix, "ip link set dev "+tc.quoted+" up") {
			t.Errorf("port_active fix %q, want ip link set dev %s up", f.Fix, tc.quoted)
		}
	}
	// A healthy name is left as it is.
	if got := shellQuote("ens1f0np0"); got != "ens1f0np0" {
		t.Errorf("shellQuote(ens1f0np0) = %q", got)
	}
	if got := shellQuote("it's"); got != `'it'\''s'` {
		t.Errorf("shellQuote(it's) = %q", got)
	}
}
