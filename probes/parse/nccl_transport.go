package parse

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Transport is NCCL's own report of how it moved data between nodes,
// from its NCCL_DEBUG=INFO lines (subsystems INIT and NET): the network it
// chose, the HCAs it opened and whether the channels use GPUDirect RDMA.
// A run that fell back to TCP sockets, or to RDMA through host memory, can
// still meet a bandwidth floor on a small job; this is what tells.
//
// GPUDirect RDMA is decided by each rank for its own GPU and NIC, so one
// host without it leaves "/GDRDMA" on the other hosts' lines: Hosts keeps
// the report of every host the lines name (their "host:pid:tid" prefix).
type Transport struct {
	// Network is the network NCCL used: "IB" (InfiniBand and RoCE),
	// "Socket", or a net plugin's name ("IBext_v8", "AWS Libfabric",
	// "FastSocket"); "" when not reported.
	Network string `json:"network,omitempty"`
	// HCAs are the devices of "NET/IB : Using [0]mlx5_0:1/RoCE ...", as
	// device:port/link layer (with NCCL's rail and plane when it prints
	// them), in NCCL's order, each once; the members of merged virtual NICs
	// ("[0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE}") are listed one by one.
	HCAs []string `json:"hcas,omitempty"`
	// MergedNICs are NCCL's virtual NICs that merge several ports, each as
	// its members' HCAs.
	MergedNICs [][]string `json:"merged_nics,omitempty"`
	// NetChannels counts inter-node channel connections ("via NET/..."),
	// SocketChannels those over a TCP transport (NET/Socket, a TCP plugin),
	// GDRDMAChannels those with GPUDirect RDMA ("/GDRDMA", PXN's
	// "/0(8)/GDRDMA" included).
	NetChannels    int `json:"net_channels,omitempty"`
	SocketChannels int `json:"socket_channels,omitempty"`
	GDRDMAChannels int `json:"gdrdma_channels,omitempty"`
	// GDRDisabled names the HCAs of NCCL's per-NIC capability lines that
	// say "GPU Direct RDMA Disabled for HCA n 'name'" (NCCL >= 2.13, pre-2.13
	// with " (no module)"): no peer-memory module and no DMA-BUF for that
	// NIC on that host. It says nothing about topology.
	GDRDisabled []string `json:"gdr_disabled,omitempty"`
	// Hosts is the same report per host, in the order the lines first name
	// them; lines without a host prefix are under "".
	Hosts []HostTransport `json:"hosts,omitempty"`
}

// HostTransport is what the lines of one host say.
type HostTransport struct {
	Host string `json:"host"`
	// Network is the last "Using network" line of the host.
	Network        string `json:"network,omitempty"`
	NetChannels    int    `json:"net_channels,omitempty"`
	SocketChannels int    `json:"socket_channels,omitempty"`
	GDRDMAChannels int    `json:"gdrdma_channels,omitempty"`
	// NICGDREnabled and NICGDRDisabled name the HCAs of the host's per-NIC
	// capability lines ("NET/IB : GPU Direct RDMA Enabled|Disabled for HCA
	// n 'name'"), on RDMA networks only.
	NICGDREnabled  []string `json:"nic_gdr_enabled,omitempty"`
	NICGDRDisabled []string `json:"nic_gdr_disabled,omitempty"`
	// DistanceEnabled and DistanceDisabled are NCCL's topology decisions
	// (src/graph/paths.cc ncclTopoCheckGdr: "GPU Direct RDMA Disabled for
	// GPU ... (distance 6 > 4)"), each distinct comparison once, as printed:
	// "6 <= 7", "6 > 4". The numbers are NCCL's path classes, whose values
	// differ between releases: only the comparison is meant.
	DistanceEnabled  []string `json:"gdr_distance_enabled,omitempty"`
	DistanceDisabled []string `json:"gdr_distance_disabled,omitempty"`
	// GDRLevel is NCCL_NET_GDR_LEVEL as the host's NCCL read it from its
	// environment ("NCCL_NET_GDR_LEVEL set by environment to PIX"), "" when
	// it kept its default (PXB).
	GDRLevel string `json:"gdr_level,omitempty"`
}

// tcpNetworks are NCCL networks that move data over TCP sockets: NCCL's own
// Socket transport and Google's FastSocket net plugin. On a RoCE or
// InfiniBand cluster either is a fallback.
var tcpNetworks = []string{"Socket", "FastSocket"}

// IsTCPNetwork says whether NCCL's network name is a TCP transport.
func IsTCPNetwork(name string) bool { return slices.Contains(tcpNetworks, name) }

var (
	// The "host:pid:tid [dev] NCCL INFO" prefix of every NCCL log line
	// (src/debug.cc), the host cut at its first dot; a launcher's or a
	// timestamp's prefix may come before it.
	ncclHostRe = regexp.MustCompile(`([A-Za-z0-9][A-Za-z0-9_.-]*):\d+:\d+ \[\d+\] NCCL INFO\b`)
	// "Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA" (>= 2.12), "Channel 01 : 2[c7000] -> 0[87000]
	// [receive] via NET/IB/5/GDRDMA" (older), PXN's "via NET/IB/0(8)/GDRDMA" (the proxy rank in parentheses),
	// "/GDRDMA(PCI)", "/Shared", and plugin names with spaces ("via NET/AWS Libfabric/0"). Other transports
	// (P2P, SHM, CollNet) are intra-node or not NET.
	ncclViaNetRe = regexp.MustCompile(`\b(?:Channel|Ring) \d+(?:/\d+)? : .*\bvia NET/([A-Za-z][^/]*)/\d+(?:\(\d+\))?((?:/[A-Za-z]+(?:\([A-Za-z]+\))?)*)`)
	// "Using network IB", "Using network Socket", "Using network AWS Libfabric".
	ncclUsingNetworkRe = regexp.MustCompile(`\bNCCL INFO Using network (\S.*?)\s*$`)
	// "NET/Plugin: Loaded net plugin FastSocket (v6)", "... NCCL RDMA Plugin v6 (v6)": NCCL uses a plugin
	// whose init succeeded before its own IB and Socket transports; "Using network" says it for sure.
	ncclLoadedPluginRe = regexp.MustCompile(`\bNET/Plugin ?: Loaded net plugin (\S.*?) \(v\d+\)\s*$`)
	// "NET/IB : Using [0]mlx5_10:1/RoCE [1]mlx5_11:1/RoCE [RO]; OOB enp220s0np0:...", NCCL >= 2.24 with rail and
	// plane "[0]mlx5_0:1:2/RoCE", and NCCL 2.20-2.23's merged NICs "[0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE}".
	ncclIBUsingRe   = regexp.MustCompile(`\bNET/IB\w* : Using (.*?)(?:;|$)`)
	ncclIBItemRe    = regexp.MustCompile(`\[\d+\] ?([^\s\[\]{},;=]+)`)
	ncclIBMergedRe  = regexp.MustCompile(`\[\d+\]=\{([^}]*)\}`)
	ncclNICGDRRe    = regexp.MustCompile(`\bNET/(\S[^:]*?) ?: GPU Direct RDMA (Enabled|Disabled) for HCA \d+ '([^']*)'`)
	ncclGDRLevelRe  = regexp.MustCompile(`\bNCCL_NET_GDR_LEVEL set by environment to (\S+)`)
	ncclDistanceRe  = regexp.MustCompile(`\bGPU Direct RDMA (Enabled|Disabled) for GPU\b.*\(distance (\d+ (?:<=|>=|<|>) \d+)\)`)
	ncclInfoMarkRe  = regexp.MustCompile(`\bNCCL INFO\b`)
	ncclSocketName  = "Socket"
	ncclUnknownHost = ""
)

// NCCLTransport reads NCCL's transport report out of a run's output.
// It never fails: output without NCCL INFO lines gives an empty report.
func NCCLTransport(text string) Transport {
	var t Transport
	networks := map[string]bool{}
	plugin := ""
	hostIndex := map[string]int{}
	hostOf := func(line string) *HostTransport {
		name := ncclUnknownHost
		if m := ncclHostRe.FindStringSubmatch(line); m != nil {
			name = m[1]
		}
		i, ok := hostIndex[name]
		if !ok {
			i = len(t.Hosts)
			hostIndex[name] = i
			t.Hosts = append(t.Hosts, HostTransport{Host: name})
		}
		return &t.Hosts[i]
	}
	for len(text) > 0 {
		var line string
		line, text, _ = strings.Cut(text, "\n")
		line = strings.TrimRight(line, "\r")
		if !ncclInfoMarkRe.MatchString(line) {
			continue
		}
		if m := ncclViaNetRe.FindStringSubmatch(line); m != nil {
			h := hostOf(line)
			t.NetChannels++
			h.NetChannels++
			networks[m[1]] = true
			if IsTCPNetwork(m[1]) {
				t.SocketChannels++
				h.SocketChannels++
			}
			if slices.ContainsFunc(strings.Split(m[2], "/"), func(s string) bool { return strings.HasPrefix(s, "GDRDMA") }) {
				t.GDRDMAChannels++
				h.GDRDMAChannels++
			}
			continue
		}
		if m := ncclUsingNetworkRe.FindStringSubmatch(line); m != nil {
			if t.Network == "" || IsTCPNetwork(m[1]) {
				t.Network = m[1]
			}
			hostOf(line).Network = m[1]
			continue
		}
		if m := ncclLoadedPluginRe.FindStringSubmatch(line); m != nil {
			plugin = m[1]
			continue
		}
		if m := ncclIBUsingRe.FindStringSubmatch(line); m != nil {
			t.addHCAs(m[1])
			continue
		}
		if m := ncclNICGDRRe.FindStringSubmatch(line); m != nil {
			if IsTCPNetwork(m[1]) {
				// A socket "HCA" never has GPUDirect; the fallback is judged.
				if m[2] == "Disabled" {
					t.GDRDisabled = appendOnce(t.GDRDisabled, m[3])
				}
				continue
			}
			h := hostOf(line)
			if m[2] == "Enabled" {
				h.NICGDREnabled = appendOnce(h.NICGDREnabled, m[3])
			} else {
				h.NICGDRDisabled = appendOnce(h.NICGDRDisabled, m[3])
				t.GDRDisabled = appendOnce(t.GDRDisabled, m[3])
			}
			continue
		}
		if m := ncclGDRLevelRe.FindStringSubmatch(line); m != nil {
			hostOf(line).GDRLevel = m[1]
			continue
		}
		if m := ncclDistanceRe.FindStringSubmatch(line); m != nil {
			h := hostOf(line)
			if m[1] == "Enabled" {
				h.DistanceEnabled = appendOnce(h.DistanceEnabled, m[2])
			} else {
				h.DistanceDisabled = appendOnce(h.DistanceDisabled, m[2])
			}
		}
	}
	// Old NCCL (< 2.1x) prints no "Using network" line: the channels say;
	// without either, a plugin NCCL loaded is the network it uses.
	if t.Network == "" && len(networks) == 1 {
		for n := range networks {
			t.Network = n
		}
	}
	if t.Network == "" && len(networks) == 0 {
		t.Network = plugin
	}
	return t
}

// addHCAs reads the device list of one "NET/IB : Using" line.
func (t *Transport) addHCAs(list string) {
	for _, it := range ncclIBItemRe.FindAllStringSubmatch(list, -1) {
		t.HCAs = appendOnce(t.HCAs, it[1])
	}
	for _, g := range ncclIBMergedRe.FindAllStringSubmatch(list, -1) {
		var members []string
		for _, it := range ncclIBItemRe.FindAllStringSubmatch(g[1], -1) {
			members = append(members, it[1])
		}
		if len(members) > 1 && !slices.ContainsFunc(t.MergedNICs, func(m []string) bool { return slices.Equal(m, members) }) {
			t.MergedNICs = append(t.MergedNICs, members)
		}
	}
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// Reported says whether the output held any of NCCL's transport lines:
// without NCCL_DEBUG=INFO there is nothing to judge.
func (t Transport) Reported() bool {
	return t.Network != "" || t.NetChannels > 0 || len(t.HCAs) > 0 || len(t.Hosts) > 0
}

// SocketFallback reports inter-node traffic over TCP: NCCL's Socket
// transport or a TCP net plugin, by any host's network or channels.
func (t Transport) SocketFallback() bool {
	if IsTCPNetwork(t.Network) || t.SocketChannels > 0 {
		return true
	}
	return slices.ContainsFunc(t.Hosts, func(h HostTransport) bool { return IsTCPNetwork(h.Network) })
}

// RDMAChannels counts the host's inter-node channels over RDMA.
func (h HostTransport) RDMAChannels() int { return h.NetChannels - h.SocketChannels }

// NoNICGDR reports a host whose every per-NIC capability line says
// "GPU Direct RDMA Disabled": NCCL found neither a peer-memory module nor
// DMA-BUF there, whatever the topology.
func (h HostTransport) NoNICGDR() bool {
	return len(h.NICGDRDisabled) > 0 && len(h.NICGDREnabled) == 0
}

// ncclPathNames are NCCL's path classes, nearest first (src/graph/topo.cc,
// master), as NCCL_NET_GDR_LEVEL names them.
var ncclPathNames = []string{"LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS"}

// ncclLegacyLevels maps the numeric NCCL_NET_GDR_LEVEL values of NCCL before
// 2.5 onto the names (src/graph/paths.cc levelsOldToNew).
var ncclLegacyLevels = []string{"LOC", "PIX", "PXB", "PHB", "SYS", "SYS"}

// GDRLevelBelow reports whether the host's NCCL_NET_GDR_LEVEL keeps
// GPUDirect RDMA off for a GPU–NIC path of class path ("PIX", "PXB", …):
// the path is beyond the level. False when no level was set or either name
// is unknown.
func (h HostTransport) GDRLevelBelow(path string) bool {
	level := strings.ToUpper(h.GDRLevel)
	if n, err := strconv.Atoi(level); err == nil && n >= 0 && n < len(ncclLegacyLevels) {
		level = ncclLegacyLevels[n]
	}
	l, p := slices.Index(ncclPathNames, level), slices.Index(ncclPathNames, path)
	return l >= 0 && p >= 0 && p > l
}

// GDROffByDistance reports a host whose NCCL turned GPUDirect RDMA off by
// its own distance rule for every GPU–NIC pair it decided (the path is
// beyond NCCL_NET_GDR_LEVEL): by design, not a fault.
func (h HostTransport) GDROffByDistance() bool {
	return len(h.DistanceDisabled) > 0 && len(h.DistanceEnabled) == 0
}
