package sysfixture

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// HostSide is what a node's host source reads besides sysfs: procfs (the
// IPv4 sysctls, the exporter's own limits), the `ip -j` captures of the
// replay directory and a root filesystem (rootfs/ of the scenario, given to
// --path.rootfs).
type HostSide struct {
	// Sysctls are net.ipv4.conf.<name>.{arp_ignore,arp_announce,rp_filter}
	// by name ("all", "default", the netdevs).
	Sysctls map[string][3]int
	// Rules, Routes and Neighbors become replay/ip-rule.json,
	// ip-route.json and ip-neigh.json; nil writes none.
	Rules     []IPRule
	Routes    []IPRoute
	Neighbors []IPNeigh
	// SelfMemlock is /proc/self/limits' "Max locked memory" (bytes or
	// "unlimited"), CapEff /proc/self/status's; "" writes neither.
	SelfMemlock, CapEff string
	// Etc are files under rootfs/etc by path; nil writes no root
	// filesystem.
	Etc map[string]string
}

// The entries of `ip -j rule show`, `ip -j route show table all` and
// `ip -j neigh show`, in the key order iproute2 6.1 prints them
// (internal/rtnl/testdata).
type (
	IPRule struct {
		Priority int    `json:"priority"`
		Src      string `json:"src"`
		Table    string `json:"table"`
	}
	IPRoute struct {
		Type     string   `json:"type,omitempty"`
		Dst      string   `json:"dst"`
		Gateway  string   `json:"gateway,omitempty"`
		Dev      string   `json:"dev"`
		Table    string   `json:"table,omitempty"`
		Protocol string   `json:"protocol,omitempty"`
		Scope    string   `json:"scope,omitempty"`
		PrefSrc  string   `json:"prefsrc,omitempty"`
		Flags    []string `json:"flags"`
	}
	IPNeigh struct {
		Dst    string   `json:"dst"`
		Dev    string   `json:"dev"`
		LLAddr string   `json:"lladdr,omitempty"`
		State  []string `json:"state"`
	}
)

// defaultRules are the three rules every Linux host has.
func defaultRules() []IPRule {
	return []IPRule{{0, "all", "local"}, {32766, "all", "main"}, {32767, "all", "default"}}
}

// write lays the host side out under root (the scenario's directory) and
// replay.
func (h *HostSide) write(root, replay string) error {
	w := &writer{root: root}
	names := make([]string, 0, len(h.Sysctls))
	for n := range h.Sysctls {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for i, k := range []string{"arp_ignore", "arp_announce", "rp_filter"} {
			w.file(fmt.Sprintf("proc/sys/net/ipv4/conf/%s/%s", n, k), fmt.Sprint(h.Sysctls[n][i]))
		}
	}
	if h.SelfMemlock != "" {
		w.raw("proc/self/limits", fmt.Sprintf("Limit                     Soft Limit           Hard Limit           Units     \n"+
			"Max cpu time              unlimited            unlimited            seconds   \n"+
			"Max open files            1048576              1048576              files     \n"+
			"Max locked memory         %-20s %-20s bytes     \n", h.SelfMemlock, h.SelfMemlock))
		w.raw("proc/self/status", "Name:\troce_exporter\nUmask:\t0022\nState:\tS (sleeping)\nCapInh:\t0000000000000000\nCapPrm:\t"+h.CapEff+"\nCapEff:\t"+h.CapEff+"\nCapBnd:\t000001ffffffffff\n")
	}
	paths := make([]string, 0, len(h.Etc))
	for p := range h.Etc {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		w.raw(filepath.Join("rootfs/etc", p), h.Etc[p])
	}
	if w.err != nil {
		return w.err
	}
	for name, v := range map[string]any{"ip-rule.json": h.Rules, "ip-route.json": h.Routes, "ip-neigh.json": h.Neighbors} {
		if reflectNil(v) {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(replay, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(replay, name), append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func reflectNil(v any) bool {
	switch x := v.(type) {
	case []IPRule:
		return x == nil
	case []IPRoute:
		return x == nil
	case []IPNeigh:
		return x == nil
	}
	return v == nil
}

// railsOneSubnetAddr is rail i's address when all rails share
// 192.168.100.0/24, and peerOneSubnetAddr node02's (health's
// plan-node01-one-subnet.yaml).
func railsOneSubnetAddr(i int) string { return fmt.Sprintf("192.168.100.%d", 11+i) }
func peerOneSubnetAddr(i int) string  { return fmt.Sprintf("192.168.100.%d", 21+i) }

// RailsOneSubnetDefaultSysctls is the healthy 8-rail node with every rail
// in one subnet, 192.168.100.0/24, and the host set up as installed: RHEL's
// strict rp_filter (IBM: "strict reverse-path forwarding is enabled by
// default"), the kernel's arp_ignore and arp_announce 0, no policy rules, so
// main sends the whole subnet out of rail 0. The ARP table shows the flux:
// node02's rail 0 and rail 1 addresses both learnt on rail 0, with the MAC
// of node02's rail-0 NIC (as in internal/rtnl/testdata/ip-neigh-arp-flux.json).
func RailsOneSubnetDefaultSysctls() Scenario {
	n := HealthyCX7(8)
	h := &HostSide{Sysctls: map[string][3]int{"all": {0, 0, 1}, "default": {0, 0, 1}}, Rules: defaultRules(),
		Routes: []IPRoute{{Dst: "default", Gateway: "10.0.0.1", Dev: "eno1", Protocol: "static", Flags: []string{}}}}
	for i := range n.Devices {
		d := &n.Devices[i]
		a := railsOneSubnetAddr(i)
		d.GIDs[2].GID, d.GIDs[3].GID = ipv4GID(192, 168, 100, 11+i), ipv4GID(192, 168, 100, 11+i)
		h.Sysctls[d.Netdev] = [3]int{0, 0, 1}
		h.Routes = append(h.Routes, IPRoute{Dst: "192.168.100.0/24", Dev: d.Netdev, Protocol: "kernel", Scope: "link", PrefSrc: a, Flags: []string{}})
	}
	for i := range n.Devices {
		d := n.Devices[i]
		a := railsOneSubnetAddr(i)
		h.Routes = append(h.Routes,
			IPRoute{Type: "local", Dst: a, Dev: d.Netdev, Table: "local", Protocol: "kernel", Scope: "host", PrefSrc: a, Flags: []string{}},
			IPRoute{Type: "broadcast", Dst: "192.168.100.255", Dev: d.Netdev, Table: "local", Protocol: "kernel", Scope: "link", PrefSrc: a, Flags: []string{}})
	}
	peerRail0MAC := "b8:3f:d2:a1:3b:3c"
	h.Neighbors = []IPNeigh{
		{Dst: "10.0.0.1", Dev: "eno1", LLAddr: "00:1c:73:00:00:01", State: []string{"REACHABLE"}},
		{Dst: peerOneSubnetAddr(0), Dev: Netdev(0), LLAddr: peerRail0MAC, State: []string{"REACHABLE"}},
		{Dst: peerOneSubnetAddr(1), Dev: Netdev(0), LLAddr: peerRail0MAC, State: []string{"STALE"}},
	}
	return Scenario{Node: n, Replay: map[string]NIC{}, Host: h}
}

// MemlockDefault8MiB is the healthy node on a fresh install: no memlock
// line in /etc/security/limits.conf or limits.d, systemd's
// DefaultLimitMEMLOCK commented out (its 8M default), and the exporter
// itself at 8 MiB without CAP_IPC_LOCK (the plain systemd unit). Logins
// (ssh, mpirun's remote ranks) get 8 MiB: NCCL's ibv_reg_mr fails.
func MemlockDefault8MiB() Scenario {
	return Scenario{Node: HealthyCX7(8), Replay: map[string]NIC{}, Host: &HostSide{
		SelfMemlock: "8388608", CapEff: "0000000000000000",
		Etc: map[string]string{
			// Debian 12's libpam-modules limits.conf, its comment header cut.
			"security/limits.conf": "# /etc/security/limits.conf\n#\n#Each line describes a limit for a user in the form:\n#\n#<domain>        <type>  <item>  <value>\n#\n#*               soft    core            0\n#root            hard    core            100000\n#*               hard    rss             10000\n#@student        hard    nproc           20\n#@faculty        soft    nproc           20\n#@faculty        hard    nproc           50\n#ftp             hard    nproc           0\n#ftp             -       chroot          /ftp\n#@student        -       maxlogins       4\n\n# End of file\n",
			"systemd/system.conf":  "#  This file is part of systemd.\n[Manager]\n#LogLevel=info\n#DefaultLimitNOFILE=1024:524288\n#DefaultLimitMEMLOCK=8M\n#DefaultLimitLOCKS=\n",
		},
	}}
}

// PFCBuffersMisconfigured is the healthy node with MLNX_OFED's mlnx_qos
// showing buffers and ETS on every rail (ProductionQoS), and three of them
// set up wrong: rail 2's RoCE priority left in buffer 0 with every lossy
// priority (PFC set on a port whose buffers nobody split), rail 5's
// lossless buffer sized for 100G at 7 m although the cable is set to 30 m
// at 400G, and rail 7's RoCE class an ETS class with no share.
func PFCBuffersMisconfigured() Scenario {
	nics := map[string]NIC{}
	for i := 0; i < 8; i++ {
		nic := DefaultNIC(i)
		nic.MlnxQos = true
		nic.QoS = ProductionQoS()
		nics[fmt.Sprintf("mlx5_%d", i)] = nic
	}
	shared := nics["mlx5_2"]
	shared.QoS.PrioBuffer, shared.QoS.BufferSize = [8]int{}, [8]int{262016}
	small := nics["mlx5_5"]
	small.QoS.BufferSize[0], small.QoS.BufferSize[1], small.QoS.CableLen = 130944, 130944, 30
	starved := nics["mlx5_7"]
	starved.QoS.TSA[3], starved.QoS.BW = "ets", [8]int{20, 10, 70, 0, 0}
	starved.QoS.TSA[4] = "strict"
	return Scenario{Node: HealthyCX7(8), Replay: nics}
}

// SwitchPortMTU1500 is the healthy node cabled to leaf ports that announce
// their maximum frame size, VLAN and MAU type over LLDP (Leaf400G), one of
// which, rail 4's, was left at the switch's default MTU (MFS 1518), and
// rail 6's leaf port reports 100G.
func SwitchPortMTU1500() Scenario {
	nics := map[string]NIC{}
	for i := 0; i < 8; i++ {
		nic := DefaultNIC(i)
		nic.Switch = Leaf400G()
		nics[fmt.Sprintf("mlx5_%d", i)] = nic
	}
	nics["mlx5_4"].Switch.MFS = 1518
	nics["mlx5_6"].Switch.MAU = "100GbaseCR4 - 100GBASE-R PCS/PMA over 4 lane shielded copper balanced cable"
	return Scenario{Node: HealthyCX7(8), Replay: nics}
}

// CX6DxOnRail3 is the healthy node with a ConnectX-6 Dx (MT4125,
// MT_0000000359, 200GbE) in rail 3's slot among the ConnectX-7s: the guide's
// step 5, a different NIC model on one rail. Its Gen4 x16 link in a Gen5
// slot is at what the card supports; its 200G port is what the card does.
func CX6DxOnRail3() Scenario {
	n := HealthyCX7(8)
	d := &n.Devices[3]
	d.DeviceID, d.HCAType, d.BoardID, d.FWVer = "0x101d", "MT4125", "MT_0000000359", "22.39.1002"
	d.Rate, d.Speed = "200 Gb/sec (4X HDR)", "200000"
	d.PCIeCurSpeed, d.PCIeMaxSpeed = gen4, gen4
	return Scenario{Node: n, Replay: map[string]NIC{}}
}
