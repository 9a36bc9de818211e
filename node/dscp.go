package node

import (
	"fmt"
	"strconv"
	"strings"
)

// NumDSCP is the number of DSCP code points (six bits of the IP traffic class).
const NumDSCP = 64

// DefaultRoCEDSCP is the DSCP RoCE data is usually marked with (AF31): NVIDIA's RoCE
// QoS guides, mlx5's default dscp2prio (26 lands on priority 3) and switch vendors'
// lossless profiles (SONiC, Dell OS10, Arista) all use it. The plan's default.
const DefaultRoCEDSCP = 26

// DefaultCNPDSCP is the DSCP of congestion notification packets (CS6): the default of
// MLNX_OFED's /sys/class/net/<if>/ecn/roce_np/cnp_dscp, with cnp_802p_prio 6. The
// plan's default.
const DefaultCNPDSCP = 48

// ECT0 is the ECN field value "ECN-Capable Transport (0)" (RFC 3168, binary 10): the
// two low bits of the traffic class RoCE v2 data is sent with, so that switches mark
// congestion (CE) instead of dropping, which DCQCN needs.
const ECT0 = 2

// RoCETrafficClass is the IP traffic class (ToS byte) RoCE marked with dscp is sent
// with: the DSCP in the upper six bits and ECT(0) in the ECN bits. This is the value
// NCCL_IB_TC, perftest's --tclass, mlx5's tc/<port>/traffic_class and cma_roce_tos
// take: NVIDIA's RoCE QoS guidance for DSCP 26 is 106 = 26<<2 | 0b10 (see "Setting the
// traffic class" in NVIDIA's MLNX_OFED/DOCA "RoCE Configuration" and att/netarbiter
// nvmf/setup-nic-lossless-layer3.sh, which runs `echo 106 > .../tc/1/traffic_class`
// and `cma_roce_tos -t 106`).
func RoCETrafficClass(dscp int) int { return dscp<<2 | ECT0 }

// DefaultRoCETrafficClass is RoCETrafficClass(DefaultRoCEDSCP), 106.
const DefaultRoCETrafficClass = DefaultRoCEDSCP<<2 | ECT0

// DSCPMap is the DSCP → 802.1p priority map a NIC applies in DSCP trust (the DCB
// APP table's DSCP entries, or mlnx_qos's "dscp2prio mapping").
type DSCPMap struct {
	// Mapped[d] is true when DSCP d has an entry.
	Mapped [NumDSCP]bool
	// Prio[d] is DSCP d's priority. When the APP table maps one DSCP to several
	// priorities (802.1Qaz allows it; mlx5 never does), the lowest is kept, so that
	// a lossy mapping is what the checks see rather than hide.
	Prio [NumDSCP]uint8
}

// Set records DSCP d → priority p, keeping the lowest priority of repeated entries.
func (m *DSCPMap) Set(d, p uint8) {
	if int(d) >= NumDSCP || p > 7 {
		return
	}
	if !m.Mapped[d] || p < m.Prio[d] {
		m.Prio[d] = p
	}
	m.Mapped[d] = true
}

// Lookup returns DSCP d's priority.
func (m *DSCPMap) Lookup(d int) (int, bool) {
	if m == nil || d < 0 || d >= NumDSCP || !m.Mapped[d] {
		return 0, false
	}
	return int(m.Prio[d]), true
}

// DSCPsOn lists the DSCPs mapped to priority p, ascending.
func (m *DSCPMap) DSCPsOn(p int) []int {
	var out []int
	for d := 0; d < NumDSCP; d++ {
		if m.Mapped[d] && int(m.Prio[d]) == p {
			out = append(out, d)
		}
	}
	return out
}

// ParseMlx5TrafficClass reads MLNX_OFED's /sys/class/infiniband/<dev>/tc/<port>/traffic_class.
// Its show function (mlx5_ib tc sysfs, traffic_class_show) prints "Global tclass=%d\n" only
// when a global traffic class was written, then one line per match rule (tclass=N plus
// dst_ip/src_ip/... selectors); an empty file means none is set and every QP keeps the
// traffic class its application gave it. set is false then.
func ParseMlx5TrafficClass(text string) (tc int, set bool, err error) {
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		v, ok := strings.CutPrefix(line, "Global tclass=")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 8)
		if err != nil {
			return 0, false, fmt.Errorf("traffic_class: %q is not a traffic class 0..255", line)
		}
		return int(n), true, nil
	}
	return 0, false, nil
}

// ParseToS reads a ToS byte file such as rdma_cm's configfs default_roce_tos ("106\n").
func ParseToS(text string) (int, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(text), 10, 8)
	if err != nil {
		return 0, fmt.Errorf("%q is not a type of service 0..255", strings.TrimSpace(text))
	}
	return int(n), nil
}
