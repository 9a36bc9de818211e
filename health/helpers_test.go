package health

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/node"
)

// The hand-built node: three rails of ConnectX-7 400G, mlx5_i <-> ens(i+1)f0np0 with
// 192.168.(100+i).11/24, configured the way the test plan expects.
const testRails = 3

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func netdevName(i int) string { return fmt.Sprintf("ens%df0np0", i+1) }
func devName(i int) string    { return fmt.Sprintf("mlx5_%d", i) }
func pciAddr(i int) string    { return fmt.Sprintf("0000:%02x:00.0", 0x18+0x10*i) }
func rootAddr(i int) string   { return fmt.Sprintf("0000:%02x:01.0", 0x17+0x10*i) }
func railIP(i int) netip.Addr { return netip.MustParseAddr(fmt.Sprintf("192.168.%d.11", 100+i)) }

// mappedGID spells an IPv4 address as the kernel prints an IPv4-mapped GID.
func mappedGID(a netip.Addr) string {
	b := a.As4()
	return fmt.Sprintf("0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", b[0], b[1], b[2], b[3])
}

func gids(netdev string, ip netip.Addr, v2Index int) []node.GID {
	ll := "fe80:0000:0000:0000:ba3f:d2ff:fea1:2b3c"
	return []node.GID{
		{Index: 0, GID: ll, Type: "IB/RoCE v1", Interface: netdev},
		{Index: 1, GID: ll, Type: "RoCE v2", Interface: netdev},
		{Index: v2Index - 1, GID: mappedGID(ip), Type: "IB/RoCE v1", Interface: netdev},
		{Index: v2Index, GID: mappedGID(ip), Type: "RoCE v2", Interface: netdev},
	}
}

func allPrio(on bool) *node.ECNSetting {
	var a node.ECNSetting
	for i := range a.Enabled {
		a.Enabled[i], a.Present[i] = on, true
	}
	return &a
}

// buildSnap returns a fresh healthy snapshot; every call builds new values, so a
// test can take two and change one without touching the other.
func buildSnap() *node.Snapshot {
	s := &node.Snapshot{
		Time:       t0,
		Sources:    map[string]node.SourceStatus{"rdma": node.SourceOK, "netdev": node.SourceOK, "pcie": node.SourceOK, "ethtool": node.SourceOK, "dcb": node.SourceOK, "transceiver": node.SourceOK, node.SourceDevlink: node.SourceOK},
		Modules:    map[string]bool{"ib_core": true, "ib_uverbs": true, "rdma_cm": true, "mlx5_core": true, "mlx5_ib": true, "bnxt_en": false, "bnxt_re": false},
		Interfaces: map[string]*node.Interface{},
		PCI:        map[string]*node.PCIFunction{},
		Ethtool:    map[string]*node.EthtoolStats{},
		DCB:        map[string]*node.DCBState{},
		// A healthy optic in every cage (checks_phys_test.go).
		Transceivers: map[string]*node.Transceiver{},
	}
	for i := 0; i < testRails; i++ {
		dev, nd, pci, ip := devName(i), netdevName(i), pciAddr(i), railIP(i)
		verbs := fmt.Sprintf("/dev/infiniband/uverbs%d", i)
		port := &node.Port{
			Device: dev, Number: 1, LinkLayer: "Ethernet",
			State: 4, StateName: "ACTIVE", PhysState: 5, PhysStateName: "LinkUp",
			RateBitsPerSecond: 400e9, Interface: nd,
			Counters: []node.Counter{{Name: "link_downed", Value: 1}, {Name: "symbol_error", Value: 0},
				{Name: "port_rcv_data", Value: 1_000_000_000}, {Name: "port_xmit_data", Value: 1_100_000_000}},
			HWCounters: []node.Counter{
				{Name: "rp_cnp_ignored", Value: 0}, {Name: "rp_cnp_handled", Value: 500},
				{Name: "np_ecn_marked_roce_packets", Value: 1000}, {Name: "np_cnp_sent", Value: 900},
				{Name: "req_transport_retries_exceeded", Value: 0},
			},
			GIDs:            gids(nd, ip, 3),
			DefaultRoCEMode: "RoCE v2",
		}
		s.Devices = append(s.Devices, &node.Device{
			Name: dev, Driver: "mlx5_core", PCIAddress: pci, FirmwareVersion: "28.39.1002",
			HCAType: "MT4129", BoardID: "MT_0000000838",
			VerbsDevices: []string{verbs}, VerbsPresent: []string{verbs},
			Ports: []*node.Port{port},
		})
		s.Interfaces[nd] = &node.Interface{
			Name: nd, RDMADevice: dev, Port: 1, MTU: 9000, OperState: "up", SpeedMbps: 400000,
			CarrierChanges: 2, Driver: "mlx5_core", BusInfo: pci,
			Addresses:      []netip.Prefix{netip.PrefixFrom(ip, 24), netip.MustParsePrefix("fe80::ba3f:d2ff:fea1:2b3c/64")},
			AddressesKnown: true,
		}
		s.PCI[pci] = &node.PCIFunction{
			Address: pci, RDMADevices: []string{dev}, VendorID: "0x15b3", DeviceID: "0x1021",
			CurrentSpeedGTs: 32, MaxSpeedGTs: 32, CurrentWidth: 16, MaxWidth: 16,
			CurrentBandwidth: 63.014e9, MaxBandwidth: 63.014e9, AvailableBandwidth: 63.014e9,
			LimitedBy: pci, AER: map[string]uint64{"correctable": 0, "fatal": 0, "nonfatal": 0},
			Upstream: &node.PCIPort{Address: rootAddr(i), MaxSpeedGTs: 32, MaxWidth: 16,
				AER: map[string]uint64{"correctable": 0, "fatal": 0, "nonfatal": 0}},
		}
		s.Transceivers[nd] = testModule()
		s.Ethtool[nd] = &node.EthtoolStats{
			Interface:   nd,
			GlobalPause: &node.GlobalPause{},
			Values: []node.EthtoolValue{
				{Family: node.FamilyPFCPauseDuration, Direction: "rx", Priority: 3, Value: 10000},
				{Family: node.FamilyPFCPauseDuration, Direction: "tx", Priority: 3, Value: 2000},
				{Family: node.FamilyPFCPauseStormEvents, Priority: -1, Label: node.StormWarning},
				{Family: node.FamilyPFCPauseStormEvents, Priority: -1, Label: node.StormError},
				{Family: node.FamilyPHYUncorrectedSymbolErrors, Priority: -1},
				{Family: node.FamilyPHYLinkDownEvents, Priority: -1, Value: 1},
				{Family: node.FamilyPriorityPackets, Direction: "rx", Priority: 0, Value: 2_000_000},
				{Family: node.FamilyPriorityPackets, Direction: "rx", Priority: 3, Value: 3_000_000_000},
				{Family: node.FamilyPriorityBytes, Direction: "rx", Priority: 0, Value: 90_000_000},
				{Family: node.FamilyPriorityBytes, Direction: "tx", Priority: 0, Value: 80_000_000},
				{Family: node.FamilyPriorityBytes, Direction: "rx", Priority: 3, Value: 4_100_000_000},
				{Family: node.FamilyPriorityBytes, Direction: "tx", Priority: 3, Value: 4_500_000_000},
				{Family: node.FamilyPriorityDiscards, Direction: "rx", Priority: 0, Label: node.DiscardOther},
				{Family: node.FamilyPriorityDiscards, Direction: "rx", Priority: 3, Label: node.DiscardOther},
				{Family: node.FamilyPHYDiscards, Direction: "rx", Priority: -1},
			},
		}
		s.HealthReporters = append(s.HealthReporters,
			&node.HealthReporter{Handle: "pci/" + pci, PCIAddress: pci, Name: "fw_fatal", Healthy: true},
			&node.HealthReporter{Handle: "pci/" + pci + "/65535", PCIAddress: pci, Name: "tx", Healthy: true})
		var pfc [8]bool
		pfc[3] = true
		s.DCB[nd] = &node.DCBState{Interface: nd, PFCKnown: true, PFCCap: 8, PFCEnabled: pfc, Trust: "dscp",
			ECN:  map[string]*node.ECNSetting{"np": allPrio(true), "rp": allPrio(true)},
			DSCP: mlx5DefaultDSCPMap(), CNPDSCP: intp(48), CNPPrio: intp(6), DCQCN: defaultDCQCN()}
		port.TrafficClass, port.TrafficClassFile = intp(106), true
	}
	roceBuffers(s)
	switchPorts(s)
	s.Sources[node.SourceHost] = node.SourceOK
	s.Host = healthyHost()
	return s
}

// peerIP is node02's compute address on rail i in the test plan, peerMAC
// the MAC of its rail-i NIC.
func peerIP(i int) netip.Addr { return netip.MustParseAddr(fmt.Sprintf("192.168.%d.12", 100+i)) }
func peerMAC(i int) string    { return fmt.Sprintf("0a:00:00:00:02:%02x", i) }

// healthyHost is the host side of the hand-built node: a subnet per rail,
// the kernel's default sysctls (right for that), the default rules with a
// route per rail in main, node02's rail addresses resolved each on its
// rail, and memlock unlimited for everyone, the exporter included.
func healthyHost() *node.HostState {
	h := &node.HostState{IPv4Conf: map[string]*node.IPv4Conf{"all": {}},
		Rules: []node.PolicyRule{
			{Priority: 0, Action: node.RuleLookup, Table: node.TableLocal, SuppressPrefixLen: -1},
			{Priority: 32766, Action: node.RuleLookup, Table: node.TableMain, SuppressPrefixLen: -1},
			{Priority: 32767, Action: node.RuleLookup, Table: node.TableDefault, SuppressPrefixLen: -1},
		},
		Routes:    []node.Route{},
		Neighbors: []node.Neighbor{},
		Memlock: &node.Memlock{HostConfig: true,
			Limits:    []node.MemlockSetting{{File: "/etc/security/limits.d/rdma.conf", Line: 2, Domain: "*", Type: "soft", Soft: node.Unlimited}, {File: "/etc/security/limits.d/rdma.conf", Line: 3, Domain: "*", Type: "hard", Hard: node.Unlimited}},
			SelfKnown: true, SelfSoft: node.Unlimited, SelfHard: node.Unlimited, SelfCapIPCLock: true},
	}
	for i := 0; i < testRails; i++ {
		nd, ip := netdevName(i), railIP(i)
		h.IPv4Conf[nd] = &node.IPv4Conf{}
		h.Routes = append(h.Routes,
			node.Route{Table: node.TableMain, Dst: netip.PrefixFrom(ip, 24).Masked(), Type: "unicast", Dev: nd, PrefSrc: ip},
			node.Route{Table: node.TableLocal, Dst: netip.PrefixFrom(ip, 32), Type: "local", Dev: nd, PrefSrc: ip})
		h.Neighbors = append(h.Neighbors, node.Neighbor{Dev: nd, IP: peerIP(i), MAC: peerMAC(i), State: "REACHABLE"})
	}
	return h
}

// switchPorts cables every rail to a leaf port that announces MFS 9216,
// VLAN 100 untagged and 400GBASE-DR4 over LLDP, as h1 of
// internal/lldpcli/testdata/json0-details-dot1-dot3.json.
func switchPorts(s *node.Snapshot) {
	s.Sources[node.SourceLLDP] = node.SourceOK
	s.LLDP = map[string]*node.LLDPNeighbor{}
	for i := 0; i < testRails; i++ {
		nd := netdevName(i)
		s.LLDP[nd] = &node.LLDPNeighbor{Interface: nd, ChassisName: "leaf-1", ChassisID: "b8:ce:f6:11:00:00", ChassisIDType: "mac",
			PortID: fmt.Sprintf("Ethernet%d", 8*i), PortIDType: "local", MaxFrameSize: 9216, PVID: 100, VLANs: []int{100},
			MACPHY: &node.LLDPMACPHY{AutonegSupported: true, AutonegEnabled: true, MAU: "400GbaseDR4 - 400GBASE-R PCS/PMA over 4-lane single-mode fiber PMD"}}
	}
}

// withPrevious gives cur a previous sample taken dt earlier that is the healthy
// baseline; tests then move cur's counters.
func withPrevious(cur *node.Snapshot, dt time.Duration) *node.Snapshot {
	prev := buildSnap()
	prev.Time = cur.Time.Add(-dt)
	cur.Previous = prev
	return prev
}

const testPlanYAML = `cluster: unit
networks:
  management: 10.0.0.0/24
  compute: [192.168.100.0/24, 192.168.101.0/24, 192.168.102.0/24]
expectations:
  link_layer: Ethernet
  mtu: 9000
  roce_mode: v2
  pfc_priority: 3
  trust: dscp
  ecn: true
  vlan: 100
  link_rate_gbps: 400
nodes:
  - name: node01
    management_ip: 10.0.0.11
    interfaces:
      - {netdev: ens1f0np0, rdma_device: mlx5_0, ip: 192.168.100.11/24}
      - {netdev: ens2f0np0, rdma_device: mlx5_1, ip: 192.168.101.11/24}
      - {netdev: ens3f0np0, rdma_device: mlx5_2, ip: 192.168.102.11/24}
  - name: node02
    management_ip: 10.0.0.12
    interfaces:
      - {netdev: ens1f0np0, rdma_device: mlx5_0, ip: 192.168.100.12/24}
      - {netdev: ens2f0np0, rdma_device: mlx5_1, ip: 192.168.101.12/24}
      - {netdev: ens3f0np0, rdma_device: mlx5_2, ip: 192.168.102.12/24}
probes:
  enabled: true
`

func testPlan(t *testing.T) *config.Plan {
	t.Helper()
	p, err := config.Parse("unit.yaml", []byte(testPlanYAML))
	if err != nil {
		t.Fatalf("test plan does not load: %v", err)
	}
	return p
}

func port(s *node.Snapshot, i int) *node.Port { return s.Devices[i].Ports[0] }

func setCounter(vs *[]node.Counter, name string, v uint64) {
	for i := range *vs {
		if (*vs)[i].Name == name {
			(*vs)[i].Value = v
			return
		}
	}
	*vs = append(*vs, node.Counter{Name: name, Value: v})
}

func dropCounter(vs *[]node.Counter, name string) {
	*vs = slices.DeleteFunc(*vs, func(c node.Counter) bool { return c.Name == name })
}

func setEth(st *node.EthtoolStats, family node.Family, dir string, prio int, label string, v uint64) {
	for i := range st.Values {
		e := &st.Values[i]
		if e.Family == family && e.Direction == dir && e.Priority == prio && e.Label == label {
			e.Value = v
			return
		}
	}
	st.Values = append(st.Values, node.EthtoolValue{Family: family, Direction: dir, Priority: prio, Label: label, Value: v})
}

func dropEth(st *node.EthtoolStats, family node.Family) {
	st.Values = slices.DeleteFunc(st.Values, func(v node.EthtoolValue) bool { return v.Family == family })
}

func ethVal(st *node.EthtoolStats, family node.Family, dir string, prio int, label string) uint64 {
	v, _ := st.Get(family, dir, prio, label)
	return v
}

// makeIB turns the snapshot into an InfiniBand node: IB link layer, no GID IPv4
// entries, no RoCE configuration sources.
func makeIB(s *node.Snapshot) {
	for _, d := range s.Devices {
		p := d.Ports[0]
		p.LinkLayer = "InfiniBand"
		p.GIDs = []node.GID{{Index: 0, GID: "fe80:0000:0000:0000:0c42:a103:006a:1020", Type: "IB/RoCE v1"}}
		p.DefaultRoCEMode = ""
	}
}

// checkInvariants holds for every finding of every run: known statuses, a message,
// a fix exactly when something is wrong, and ids from the registry in its order.
func checkInvariants(t *testing.T, fs []Finding) {
	t.Helper()
	order := map[string]int{}
	for i, c := range Checks() {
		order[c.ID] = i
	}
	seen := map[[2]string]bool{}
	last := -1
	for i, f := range fs {
		if i > 0 && fs[i-1].ID == f.ID && naturalCompare(f.Subject, fs[i-1].Subject) < 0 {
			t.Errorf("%s: subject %s after %s, want subjects in natural order", f.ID, f.Subject, fs[i-1].Subject)
		}
		pos, ok := order[f.ID]
		if !ok {
			t.Errorf("finding with unknown id %q", f.ID)
			continue
		}
		if pos < last {
			t.Errorf("finding %s/%s out of check order", f.ID, f.Subject)
		}
		last = pos
		key := [2]string{f.ID, f.Subject}
		if seen[key] {
			t.Errorf("two findings for %s/%s", f.ID, f.Subject)
		}
		seen[key] = true
		if f.Subject == "" || strings.TrimSpace(f.Message) == "" {
			t.Errorf("%s/%s: empty subject or message: %+v", f.ID, f.Subject, f)
		}
		if strings.ContainsAny(f.Message, "\n") || strings.ContainsAny(f.Fix, "\n") {
			t.Errorf("%s/%s: message and fix must be one line", f.ID, f.Subject)
		}
		switch f.Status {
		case StatusOK, StatusSkipped:
			if f.Fix != "" {
				t.Errorf("%s/%s is %s but has a fix: %q", f.ID, f.Subject, f.Status, f.Fix)
			}
		case StatusWarn, StatusFail:
			if f.Fix == "" {
				t.Errorf("%s/%s is %s without a fix: %s", f.ID, f.Subject, f.Status, f.Message)
			}
		default:
			t.Errorf("%s/%s: unknown status %q", f.ID, f.Subject, f.Status)
		}
	}
}

func find(fs []Finding, id, subject string) (Finding, bool) {
	for _, f := range fs {
		if f.ID == id && f.Subject == subject {
			return f, true
		}
	}
	return Finding{}, false
}

func dump(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %s %s %s: %s\n", f.ID, f.Subject, f.Status, f.Message)
	}
	return b.String()
}

func intp(v int) *int { return &v }

// mlx5DefaultDSCPMap is the map mlx5 fills in DSCP trust: DSCP d on priority d/8.
func mlx5DefaultDSCPMap() *node.DSCPMap {
	var m node.DSCPMap
	for d := 0; d < node.NumDSCP; d++ {
		m.Set(uint8(d), uint8(d/8))
	}
	return &m
}

// dscpMap is mlx5's default map with some DSCPs moved.
func dscpMap(over map[int]int) *node.DSCPMap {
	m := mlx5DefaultDSCPMap()
	for d, p := range over {
		m.Set(uint8(d), uint8(p))
	}
	return m
}
