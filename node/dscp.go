package node

import (
	"fmt"
	"strconv"
	"strings"
)

// NumDSCP is the number of DSCP code points (six bits of the IP traffic class).
const NumDSCP = 64

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
