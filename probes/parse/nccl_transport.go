package parse

import (
	"regexp"
	"slices"
	"strings"
)

// Transport is NCCL's own report of how it moved data between nodes,
// from its NCCL_DEBUG=INFO lines (subsystems INIT and NET): the network it
// chose, the HCAs it opened and whether the channels use GPUDirect RDMA.
// A run that fell back to TCP sockets, or to RDMA through host memory, can
// still meet a bandwidth floor on a small job; this is what tells.
type Transport struct {
	// Network is the network NCCL used: "IB" (InfiniBand and RoCE),
	// "Socket", or a net plugin's name ("IBext_v8"); "" when not reported.
	Network string `json:"network,omitempty"`
	// HCAs are the devices of "NET/IB : Using [0]mlx5_0:1/RoCE ...", as
	// device:port/link layer, in NCCL's order, each once.
	HCAs []string `json:"hcas,omitempty"`
	// NetChannels counts inter-node channel connections ("via NET/..."),
	// SocketChannels those over NET/Socket, GDRDMAChannels those with
	// GPUDirect RDMA ("/GDRDMA").
	NetChannels    int `json:"net_channels,omitempty"`
	SocketChannels int `json:"socket_channels,omitempty"`
	GDRDMAChannels int `json:"gdrdma_channels,omitempty"`
	// GDRDisabled names the HCAs of "GPU Direct RDMA Disabled for HCA n
	// 'name'" lines (NCCL >= 2.1x, NET subsystem).
	GDRDisabled []string `json:"gdr_disabled,omitempty"`
}

var (
	// "Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA" (>= 2.12), "Channel 01 : 2[c7000] -> 0[87000]
	// [receive] via NET/IB/5/GDRDMA" (older), "via NET/Socket/0", "via NET/IBext_v8/2"; other transports
	// (P2P, SHM, CollNet) are intra-node or not NET.
	ncclViaNetRe = regexp.MustCompile(`\b(?:Channel|Ring) \d+(?:/\d+)? : .*\bvia NET/([A-Za-z][A-Za-z0-9_]*)/\d+((?:/[A-Za-z]+)*)`)
	// "Using network IB", "Using network Socket", "Using network IBext_v9".
	ncclUsingNetworkRe = regexp.MustCompile(`\bNCCL INFO Using network (\S+)`)
	// "NET/IB : Using [0]mlx5_10:1/RoCE [1]mlx5_11:1/RoCE [RO]; OOB enp220s0np0:..."
	ncclIBUsingRe  = regexp.MustCompile(`\bNET/IB\w* : Using (.*?)(?:;|$)`)
	ncclIBItemRe   = regexp.MustCompile(`\[\d+\]([^\s\[;]+)`)
	ncclGDROffRe   = regexp.MustCompile(`GPU Direct RDMA Disabled for HCA \d+ '([^']+)'`)
	ncclNetLineRe  = regexp.MustCompile(`\bNCCL INFO\b`)
	ncclSocketName = "Socket"
)

// NCCLTransport reads NCCL's transport report out of a run's output.
// It never fails: output without NCCL INFO lines gives an empty report.
func NCCLTransport(text string) Transport {
	var t Transport
	networks := map[string]bool{}
	for len(text) > 0 {
		var line string
		line, text, _ = strings.Cut(text, "\n")
		if !ncclNetLineRe.MatchString(line) {
			continue
		}
		if m := ncclViaNetRe.FindStringSubmatch(line); m != nil {
			t.NetChannels++
			networks[m[1]] = true
			if m[1] == ncclSocketName {
				t.SocketChannels++
			}
			if slices.Contains(strings.Split(m[2], "/"), "GDRDMA") {
				t.GDRDMAChannels++
			}
			continue
		}
		if m := ncclUsingNetworkRe.FindStringSubmatch(line); m != nil {
			t.Network = m[1]
			continue
		}
		if m := ncclIBUsingRe.FindStringSubmatch(line); m != nil {
			for _, it := range ncclIBItemRe.FindAllStringSubmatch(m[1], -1) {
				if !slices.Contains(t.HCAs, it[1]) {
					t.HCAs = append(t.HCAs, it[1])
				}
			}
			continue
		}
		if m := ncclGDROffRe.FindStringSubmatch(line); m != nil && !slices.Contains(t.GDRDisabled, m[1]) {
			t.GDRDisabled = append(t.GDRDisabled, m[1])
		}
	}
	// Old NCCL (< 2.1x) prints no "Using network" line: the channels say.
	if t.Network == "" && len(networks) == 1 {
		for n := range networks {
			t.Network = n
		}
	}
	return t
}

// Reported says whether the output held any of NCCL's transport lines:
// without NCCL_DEBUG=INFO there is nothing to judge.
func (t Transport) Reported() bool {
	return t.Network != "" || t.NetChannels > 0 || len(t.HCAs) > 0
}

// SocketFallback reports inter-node traffic over TCP sockets.
func (t Transport) SocketFallback() bool {
	return t.Network == ncclSocketName || t.SocketChannels > 0
}

// NoGDRDMA reports RDMA channels none of which use GPUDirect RDMA.
func (t Transport) NoGDRDMA() bool {
	return t.NetChannels > t.SocketChannels && t.GDRDMAChannels == 0
}
