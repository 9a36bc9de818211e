package config

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/roce-exporter/roce_exporter/node"
)

// Drafting a plan from a node (`roce_exporter plan init`). What the node
// shows is written down: its compute interfaces in rail order with their
// RDMA devices and addresses, its management address, the networks they sit
// in, and the expectations its ports meet today. What it cannot show, and
// what it does not meet today, a person must confirm: a value a port gets
// wrong never becomes the expectation (MTU 1500 on a RoCE port writes the
// usual 9000, not 1500), so the doctor keeps reporting the fault; the line
// says CONFIRM and why.

// The usual values of a RoCE v2 fabric, written where the node shows none
// or one that fails: MTU 9000 (RoCE needs at least node.MinMTUForRoCE4096),
// PFC on priority 3 (NVIDIA's lossless RoCE priority), DSCP trust, ECN on.
const (
	usualMTU         = 9000
	usualPFCPriority = 3
)

// DraftInput is what plan init read of one node.
type DraftInput struct {
	// Node is the node's name in the plan.
	Node     string
	Snapshot *node.Snapshot
	// Addresses are every interface's addresses (`ip addr`), nil when they
	// cannot be known (a copied sysfs tree without captures).
	Addresses map[string][]netip.Prefix
	// DefaultRoute is the interface of the default route, "" when unknown.
	DefaultRoute string
	// Source says what was read, for the draft's first line ("this
	// machine", "sample node mlx5-degraded, not this machine").
	Source string
	// NodeNote, when not "", says why a person must confirm the node's
	// name (it is this machine's over a sample node).
	NodeNote string
}

// Draft is a plan drafted from one node.
type Draft struct {
	// Ports is how many compute ports were drafted; with none, there is
	// nothing to draft (a node without RDMA).
	Ports int
	in    DraftInput
	// Confirm lists the values a person must confirm or fill in, each as
	// "key: why", in the order the draft writes them.
	Confirm []string

	linkLayer    string
	management   *draftAddress
	mgmtNetwork  netip.Prefix
	compute      []netip.Prefix
	interfaces   []*draftInterface
	expectations []draftLine
	// notDrafted are the RDMA ports left out, with why.
	notDrafted []string
}

// draftLine is one key of the draft with its comment; confirm marks a
// value a person must look at, out one that is left commented out.
type draftLine struct {
	key, value, comment string
	confirm, out        bool
}

type draftAddress struct {
	iface   string
	addr    netip.Prefix
	comment string
	confirm bool
}

type draftInterface struct {
	netdev, device string
	addr           netip.Prefix
	comment        string
	confirm        bool
}

// draftPort is one compute port of the node as read.
type draftPort struct {
	dev   *node.Device
	port  *node.Port
	iface *node.Interface
	dcb   *node.DCBState
}

func (p draftPort) netdev() string { return p.port.Interface }

// NewDraft drafts the plan of the node in.
func NewDraft(in DraftInput) *Draft {
	d := &Draft{in: in}
	if in.NodeNote != "" {
		d.in.NodeNote = "CONFIRM: " + in.NodeNote
		d.Confirm = append(d.Confirm, "nodes[0].name: "+in.NodeNote)
	}
	ports := d.computePorts()
	d.Ports = len(ports)
	d.linkLayer = majorityOf(ports, func(p draftPort) (string, bool) { return p.port.LinkLayer, true }, node.LinkLayerEthernet)
	d.draftInterfaces(ports)
	d.draftManagement(ports)
	d.draftExpectations(ports)
	return d
}

// computePorts are the node's RDMA ports with a netdev, in rail order: by
// RDMA device name in natural order, then port number. SR-IOV VFs and
// devices that could not be read are left out, and said so.
func (d *Draft) computePorts() []draftPort {
	snap := d.in.Snapshot
	if snap == nil {
		return nil
	}
	devices := slices.Clone(snap.Devices)
	slices.SortStableFunc(devices, func(a, b *node.Device) int { return node.NaturalCompare(a.Name, b.Name) })
	var out []draftPort
	for _, dev := range devices {
		switch {
		case dev.Unreadable != "":
			d.notDrafted = append(d.notDrafted, fmt.Sprintf("%s (could not be read: %s)", dev.Name, dev.Unreadable))
			continue
		case snap.PCI[dev.PCIAddress] != nil && snap.PCI[dev.PCIAddress].PhysFn != "":
			d.notDrafted = append(d.notDrafted, fmt.Sprintf("%s (an SR-IOV VF of %s: VFs belong to VMs and containers, not to the node's rails)", dev.Name, snap.PCI[dev.PCIAddress].PhysFn))
			continue
		}
		for _, port := range dev.Ports {
			switch {
			case port.Interface == "":
				d.notDrafted = append(d.notDrafted, fmt.Sprintf("%s port %d (no netdev)", dev.Name, port.Number))
				continue
			case port.LinkLayer != node.LinkLayerEthernet && port.LinkLayer != node.LinkLayerInfiniBand:
				d.notDrafted = append(d.notDrafted, fmt.Sprintf("%s port %d (link layer %q, neither Ethernet nor InfiniBand)", dev.Name, port.Number, port.LinkLayer))
				continue
			}
			p := draftPort{dev: dev, port: port, iface: snap.Interfaces[port.Interface], dcb: snap.DCB[port.Interface]}
			if p.dcb == nil {
				// RoCE LAG: PFC and trust live on the bond's slaves.
				for _, slave := range port.BondSlaves {
					if p.dcb = snap.DCB[slave]; p.dcb != nil {
						break
					}
				}
			}
			out = append(out, p)
		}
	}
	return out
}

// draftInterfaces writes each compute port with its address, and the
// compute networks they are in.
func (d *Draft) draftInterfaces(ports []draftPort) {
	for rail, p := range ports {
		di := &draftInterface{netdev: p.netdev(), device: p.dev.Name}
		var notes []string
		addrs := globalIPv4(p.iface)
		switch {
		case len(addrs) > 0:
			di.addr = addrs[0]
			if len(addrs) > 1 {
				notes = append(notes, fmt.Sprintf("CONFIRM: it also has %s", joinPrefixes(addrs[1:])))
				di.confirm = true
			}
		case d.linkLayer == node.LinkLayerInfiniBand:
			notes = append(notes, "no IPoIB address")
		default:
			why := "no IPv4 address on it today"
			if p.iface != nil && !p.iface.Up() {
				why = "no IPv4 address on it today: it is down, and NetworkManager and systemd-networkd remove the address of a port without carrier"
			} else if p.iface == nil || !p.iface.AddressesKnown {
				why = "its addresses could not be read (a copied sysfs tree without an ip-addr.txt capture)"
			}
			notes = append(notes, "CONFIRM: write its compute IP, as `ip -br addr show "+p.netdev()+"` will print it: "+why)
			di.confirm = true
			d.Confirm = append(d.Confirm, fmt.Sprintf("nodes[0].interfaces[%d].ip: %s", rail, why))
		}
		note := fmt.Sprintf("rail %d", rail)
		if n := d.in.Snapshot.LLDP[p.netdev()]; n != nil && n.Switch() != "" {
			note += fmt.Sprintf(", cabled to %s %s", n.Switch(), n.SwitchPort())
		}
		di.comment = strings.Join(append([]string{note}, notes...), "; ")
		d.interfaces = append(d.interfaces, di)
		if di.addr.IsValid() && !slices.Contains(d.compute, di.addr.Masked()) {
			d.compute = append(d.compute, di.addr.Masked())
		}
	}
}

// draftManagement picks the management address: the default route's
// interface when it has an IPv4 address, else the only candidate, else the
// first one (to confirm).
func (d *Draft) draftManagement(ports []draftPort) {
	rdma := map[string]bool{}
	for _, p := range ports {
		rdma[p.netdev()] = true
		for _, s := range p.port.BondSlaves {
			rdma[s] = true
		}
	}
	for _, dev := range d.in.Snapshot.Devices {
		for _, port := range dev.Ports {
			rdma[port.Interface] = true
		}
	}
	var candidates []string
	for _, name := range slices.SortedFunc(maps.Keys(d.in.Addresses), node.NaturalCompare) {
		if rdma[name] || name == "lo" || virtualInterface(name) {
			continue
		}
		for _, a := range d.in.Addresses[name] {
			if a.Addr().Is4() && a.Addr().IsGlobalUnicast() {
				candidates = append(candidates, name)
				break
			}
		}
	}
	pick := ""
	switch {
	case slices.Contains(candidates, d.in.DefaultRoute):
		pick = d.in.DefaultRoute
	case len(candidates) > 0:
		pick = candidates[0]
	}
	if pick == "" {
		why := "no interface other than the RDMA ones has an IPv4 address"
		if d.in.Addresses == nil {
			why = "the node's other interfaces could not be read (a copied sysfs tree without an ip-addr.txt capture)"
		}
		d.Confirm = append(d.Confirm, "networks.management: "+why)
		return
	}
	var addr netip.Prefix
	for _, a := range d.in.Addresses[pick] {
		if a.Addr().Is4() && a.Addr().IsGlobalUnicast() {
			addr = a
			break
		}
	}
	m := &draftAddress{iface: pick, addr: addr, comment: "on " + pick}
	if pick == d.in.DefaultRoute {
		m.comment += ", the default route's interface"
	}
	if others := slices.DeleteFunc(slices.Clone(candidates), func(c string) bool { return c == pick }); len(others) > 0 {
		m.comment += fmt.Sprintf("; CONFIRM: %s also have addresses: the management network is the one ssh and Prometheus reach the node on", strings.Join(others, ", "))
		m.confirm = true
		d.Confirm = append(d.Confirm, "nodes[0].management_ip: "+pick+" was picked among "+strings.Join(candidates, ", "))
	}
	d.management, d.mgmtNetwork = m, addr.Masked()
}

// virtualInterface tells a container, VM or tunnel interface by its name:
// not the port a node is managed on.
func virtualInterface(name string) bool {
	for _, prefix := range []string{"docker", "br-", "virbr", "veth", "cni", "flannel", "cali", "vxlan", "tun", "tap", "kube", "lxc", "weave", "tailscale", "wg", "podman", "cilium", "genev", "ib"} {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// draftExpectations writes what every port must look like.
func (d *Draft) draftExpectations(ports []draftPort) {
	d.add(draftLine{key: "link_layer", value: d.linkLayer, comment: fmt.Sprintf("the link layer of %s", countPorts(len(ports)))})
	if d.linkLayer == node.LinkLayerEthernet {
		d.draftMTU(ports)
		d.draftRoCEMode(ports)
		d.draftPFC(ports)
		d.draftTrust(ports)
		d.draftECN(ports)
		d.draftDSCP(ports)
	} else {
		d.add(draftLine{key: "mtu", value: "65520", out: true, comment: "IPoIB's MTU is not checked unless you write it"})
	}
	d.draftLinkRate(ports)
	d.add(draftLine{key: "min_bandwidth_fraction", value: strconv.FormatFloat(defaultMinBandwidthFraction, 'f', -1, 64), comment: "the default: probes fail below it"})
	d.draftFirmware(ports)
}

func (d *Draft) add(l draftLine) {
	if l.confirm {
		l.comment = "CONFIRM: " + l.comment
		d.Confirm = append(d.Confirm, "expectations."+l.key+": "+l.comment[len("CONFIRM: "):])
	}
	d.expectations = append(d.expectations, l)
}

func (d *Draft) draftMTU(ports []draftPort) {
	mtu := func(p draftPort) (int, bool) {
		if p.iface == nil || p.iface.MTU <= 0 {
			return 0, false
		}
		return p.iface.MTU, true
	}
	v, n, odd := tally(ports, mtu)
	switch {
	case n == 0:
		d.add(draftLine{key: "mtu", value: strconv.Itoa(usualMTU), confirm: true, comment: "no MTU could be read on this node; 9000 is usual on a RoCE fabric"})
	case v < node.MinMTUForRoCE4096:
		d.add(draftLine{key: "mtu", value: strconv.Itoa(usualMTU), confirm: true, comment: fmt.Sprintf(
			"%s MTU %d today, too small for RoCE's 4096-byte packets (at least %d): the usual 9000 is written, not %d, so mtu_matches_plan fails until the ports carry it (or write what your switches carry)",
			portsHave(n-len(odd), len(ports)), v, node.MinMTUForRoCE4096, v)})
	case len(odd) > 0:
		d.add(draftLine{key: "mtu", value: strconv.Itoa(v), confirm: true, comment: fmt.Sprintf("%s MTU %d; %s, which fails mtu_matches_plan until it is set to %d", portsHave(n-len(odd), len(ports)), v, describeOdd(odd, func(p draftPort) string { return strconv.Itoa(p.iface.MTU) }), v)})
	default:
		d.add(draftLine{key: "mtu", value: strconv.Itoa(v), comment: fmt.Sprintf("%s MTU %d", portsHave(n, len(ports)), v)})
	}
}

func (d *Draft) draftRoCEMode(ports []draftPort) {
	mode := func(p draftPort) (string, bool) {
		switch m := p.port.DefaultRoCEMode; {
		case strings.Contains(m, "v2"):
			return string(RoCEv2), true
		case strings.Contains(m, "v1"):
			return string(RoCEv1), true
		}
		return "", false
	}
	v, n, odd := tally(ports, mode)
	switch {
	case n == 0:
		d.add(draftLine{key: "roce_mode", value: string(RoCEv2), comment: "rdma_cm's default mode is not readable here (its configfs directory does not exist); v2 is what NCCL and perftest use"})
	case v != string(RoCEv2) || len(odd) > 0:
		d.add(draftLine{key: "roce_mode", value: string(RoCEv2), confirm: true, comment: fmt.Sprintf("rdma_cm's default is RoCE v1 on %d of %d ports today; v2 is written, what NCCL and perftest use (rdma_cm users such as NVMe-oF follow the default)", countWhere(ports, func(p draftPort) bool { m, ok := mode(p); return ok && m == string(RoCEv1) }), len(ports))})
	default:
		d.add(draftLine{key: "roce_mode", value: v, comment: fmt.Sprintf("rdma_cm's default on %s", countPorts(n))})
	}
}

func (d *Draft) draftPFC(ports []draftPort) {
	known := 0
	meets := map[int]int{}
	for _, p := range ports {
		if p.dcb == nil || !p.dcb.PFCKnown {
			continue
		}
		known++
		for prio, on := range p.dcb.PFCEnabled {
			if on {
				meets[prio]++
			}
		}
	}
	if known == 0 {
		d.add(draftLine{key: "pfc_priority", value: strconv.Itoa(usualPFCPriority), confirm: true, comment: "PFC could not be read on this node (no DCB netlink or capture); 3 is NVIDIA's usual lossless priority; leave the line out if the fabric runs lossy RoCE by design"})
		return
	}
	if len(meets) == 0 {
		d.add(draftLine{key: "pfc_priority", value: strconv.Itoa(usualPFCPriority), confirm: true, comment: "PFC is off on every port today: the usual priority 3 is written, so pfc_enabled_on_roce_priority fails until PFC is on; leave the line out if the fabric runs lossy RoCE by design"})
		return
	}
	// The priority most ports protect; 3 wins a tie, then the lowest.
	prio := -1
	for _, p := range slices.Sorted(maps.Keys(meets)) {
		if prio < 0 || meets[p] > meets[prio] || meets[p] == meets[prio] && p == usualPFCPriority {
			prio = p
		}
	}
	var odd []string
	for _, p := range ports {
		if p.dcb == nil || !p.dcb.PFCKnown {
			continue
		}
		var on []string
		for q, en := range p.dcb.PFCEnabled {
			if en {
				on = append(on, strconv.Itoa(q))
			}
		}
		if !p.dcb.PFCEnabled[prio] || len(on) > 1 {
			odd = append(odd, fmt.Sprintf("%s has PFC on %s", p.netdev(), orNone(on)))
		}
	}
	if len(odd) > 0 {
		d.add(draftLine{key: "pfc_priority", value: strconv.Itoa(prio), confirm: true, comment: fmt.Sprintf("%d of %d ports protect priority %d; %s today, which the PFC checks report until it is PFC on %d alone", meets[prio], known, prio, strings.Join(odd, ", "), prio)})
		return
	}
	d.add(draftLine{key: "pfc_priority", value: strconv.Itoa(prio), comment: fmt.Sprintf("PFC on priority %d alone on %s", prio, countPorts(known))})
}

func (d *Draft) draftTrust(ports []draftPort) {
	trust := func(p draftPort) (string, bool) {
		if p.dcb == nil || p.dcb.Trust == "" {
			return "", false
		}
		return p.dcb.Trust, true
	}
	v, n, odd := tally(ports, trust)
	switch {
	case n == 0:
		d.add(draftLine{key: "trust", value: string(TrustDSCP), confirm: true, comment: "the trust mode could not be read on this node; dscp is usual for RoCE v2"})
	case len(odd) > 0:
		d.add(draftLine{key: "trust", value: v, confirm: true, comment: fmt.Sprintf("%s trust %s; %s, which fails trust_mode_matches_plan", portsHave(n-len(odd), len(ports)), v, describeOdd(odd, func(p draftPort) string { return "trust " + p.dcb.Trust }))})
	case v == string(TrustPCP):
		d.add(draftLine{key: "trust", value: v, confirm: true, comment: fmt.Sprintf("%s trust pcp: RoCE then needs a VLAN whose tag carries the priority; dscp is usual for RoCE v2", portsHave(n, len(ports)))})
	default:
		d.add(draftLine{key: "trust", value: v, comment: fmt.Sprintf("%s trust %s", portsHave(n, len(ports)), v)})
	}
}

// pfcPriority is the pfc_priority the draft writes, usualPFCPriority when
// it writes none.
func (d *Draft) pfcPriority() int {
	for _, l := range d.expectations {
		if l.key == "pfc_priority" && !l.out {
			if p, err := strconv.Atoi(l.value); err == nil {
				return p
			}
		}
	}
	return usualPFCPriority
}

func (d *Draft) draftECN(ports []draftPort) {
	prio := d.pfcPriority()
	var on, off []string
	for _, p := range ports {
		if p.dcb == nil {
			continue
		}
		// DCQCN needs both ends of it: the notification point that sends
		// CNPs and the reaction point that slows down on them.
		np, rp := p.dcb.ECN[node.ECNRoleNP], p.dcb.ECN[node.ECNRoleRP]
		if np == nil || rp == nil || !np.Present[prio] || !rp.Present[prio] {
			continue
		}
		if np.Enabled[prio] && rp.Enabled[prio] {
			on = append(on, p.netdev())
		} else {
			off = append(off, p.netdev())
		}
	}
	switch {
	case len(on)+len(off) == 0:
		d.add(draftLine{key: "ecn", value: "true", comment: "not readable on this node (MLNX_OFED's ecn/ files): the doctor infers it from rp_cnp_ignored between two samples"})
	case len(off) > 0:
		d.add(draftLine{key: "ecn", value: "true", confirm: true, comment: fmt.Sprintf("ECN is off on priority %d of %s today: DCQCN needs it, so true is written and ecn_enabled fails until it is on (write false only for a fabric without ECN by design)", prio, strings.Join(off, ", "))})
	default:
		d.add(draftLine{key: "ecn", value: "true", comment: fmt.Sprintf("ECN on priority %d on %s", prio, countPorts(len(on)))})
	}
}

func (d *Draft) draftDSCP(ports []draftPort) {
	dscpOf := func(p draftPort) (int, bool) {
		switch {
		case p.port.TrafficClass != nil:
			return *p.port.TrafficClass >> 2, true
		case p.port.DefaultRoCETOS != nil:
			return *p.port.DefaultRoCETOS >> 2, true
		}
		return 0, false
	}
	v, n, _ := tally(ports, dscpOf)
	dscp := node.DefaultRoCEDSCP
	comment := fmt.Sprintf("the default; jobs mark RoCE with it through NCCL_IB_TC=%d", node.RoCETrafficClass(dscp))
	if n > 0 {
		dscp = v
		comment = fmt.Sprintf("RDMA's default traffic class %d on %s", node.RoCETrafficClass(dscp), countPorts(n))
	}
	prio := d.pfcPriority()
	var wrong []string
	for _, p := range ports {
		if p.dcb != nil && p.dcb.Trust == node.TrustDSCP && p.dcb.DSCP != nil && p.dcb.DSCP.Mapped[dscp] && int(p.dcb.DSCP.Prio[dscp]) != prio {
			wrong = append(wrong, fmt.Sprintf("%s maps it to priority %d", p.netdev(), p.dcb.DSCP.Prio[dscp]))
		}
	}
	if len(wrong) > 0 {
		d.add(draftLine{key: "roce_dscp", value: strconv.Itoa(dscp), confirm: true, comment: fmt.Sprintf("%s; %s today, not to %d, which fails roce_dscp_maps_to_pfc_priority", comment, strings.Join(wrong, ", "), prio)})
	} else {
		d.add(draftLine{key: "roce_dscp", value: strconv.Itoa(dscp), comment: comment})
	}
	cnp := func(p draftPort) (int, bool) {
		if p.dcb == nil || p.dcb.CNPDSCP == nil {
			return 0, false
		}
		return *p.dcb.CNPDSCP, true
	}
	if v, n, odd := tally(ports, cnp); n > 0 && len(odd) == 0 {
		d.add(draftLine{key: "cnp_dscp", value: strconv.Itoa(v), comment: fmt.Sprintf("MLNX_OFED's roce_np/cnp_dscp on %s", countPorts(n))})
	} else {
		d.add(draftLine{key: "cnp_dscp", value: strconv.Itoa(node.DefaultCNPDSCP), comment: "the default (MLNX_OFED's)"})
	}
}

func (d *Draft) draftLinkRate(ports []draftPort) {
	rate := func(p draftPort) (int, bool) {
		return int(p.port.RateBitsPerSecond / 1e9), p.port.Up() && p.port.RateBitsPerSecond > 0
	}
	v, n, odd := tally(ports, rate)
	switch {
	case n == 0:
		d.add(draftLine{key: "link_rate_gbps", value: "400", out: true, comment: "no port is up to show its rate: left out, each port's own rate is used"})
	case len(odd) > 0:
		d.add(draftLine{key: "link_rate_gbps", value: strconv.Itoa(v), confirm: true, comment: fmt.Sprintf("%s %d Gb/s; %s, which fails link_rate_matches_plan", portsHave(n-len(odd), len(ports)), v, describeOdd(odd, func(p draftPort) string { return fmt.Sprintf("%d Gb/s", int(p.port.RateBitsPerSecond/1e9)) }))})
	default:
		comment := fmt.Sprintf("the rate of %s", countPorts(n))
		if down := len(ports) - n; down > 0 {
			comment += fmt.Sprintf(" that are up (%d down)", down)
		}
		d.add(draftLine{key: "link_rate_gbps", value: strconv.Itoa(v), comment: comment})
	}
}

func (d *Draft) draftFirmware(ports []draftPort) {
	byModel := map[string]map[string][]string{}
	for _, p := range ports {
		if p.dev.FirmwareVersion == "" {
			continue
		}
		model := p.dev.HCAType + "/" + p.dev.BoardID
		if byModel[model] == nil {
			byModel[model] = map[string][]string{}
		}
		if !slices.Contains(byModel[model][p.dev.FirmwareVersion], p.dev.Name) {
			byModel[model][p.dev.FirmwareVersion] = append(byModel[model][p.dev.FirmwareVersion], p.dev.Name)
		}
	}
	var odd []string
	for _, model := range slices.Sorted(maps.Keys(byModel)) {
		versions := byModel[model]
		if len(versions) < 2 {
			continue
		}
		top := slices.MaxFunc(slices.Collect(maps.Keys(versions)), func(a, b string) int {
			return cmp.Or(cmp.Compare(len(versions[a]), len(versions[b])), node.NaturalCompare(a, b))
		})
		for _, v := range slices.Sorted(maps.Keys(versions)) {
			if v != top {
				odd = append(odd, fmt.Sprintf("%s runs %s, the others %s", strings.Join(versions[v], ", "), v, top))
			}
		}
	}
	if len(odd) > 0 {
		d.add(draftLine{key: "firmware_consistent", value: "true", confirm: true, comment: strings.Join(odd, "; ") + " today, which fails firmware_consistent until they match"})
		return
	}
	d.add(draftLine{key: "firmware_consistent", value: "true", comment: "one firmware per NIC model"})
}

// tally counts a value over the ports: the most common (ties: the larger),
// how many ports had one, and the ports with another (so the most common is
// on n - len(odd) of them).
func tally[V cmp.Ordered](ports []draftPort, of func(draftPort) (V, bool)) (V, int, []draftPort) {
	counts := map[V]int{}
	n := 0
	for _, p := range ports {
		if v, ok := of(p); ok {
			counts[v]++
			n++
		}
	}
	var best V
	first := true
	for _, v := range slices.Sorted(maps.Keys(counts)) {
		if first || counts[v] >= counts[best] {
			best, first = v, false
		}
	}
	var odd []draftPort
	for _, p := range ports {
		if v, ok := of(p); ok && v != best {
			odd = append(odd, p)
		}
	}
	return best, n, odd
}

func majorityOf(ports []draftPort, of func(draftPort) (string, bool), none string) string {
	v, n, _ := tally(ports, of)
	if n == 0 {
		return none
	}
	return v
}

func countWhere(ports []draftPort, f func(draftPort) bool) int {
	n := 0
	for _, p := range ports {
		if f(p) {
			n++
		}
	}
	return n
}

func countPorts(n int) string {
	if n == 1 {
		return "the port"
	}
	return fmt.Sprintf("all %d ports", n)
}

// portsHave says how many of the ports share the value: "all 8 ports have"
// or "7 of 8 ports have".
func portsHave(n, total int) string {
	switch {
	case n == total && n == 1:
		return "the port has"
	case n == total:
		return countPorts(n) + " have"
	case n == 1:
		return fmt.Sprintf("1 of %d ports has", total)
	}
	return fmt.Sprintf("%d of %d ports have", n, total)
}

func describeOdd(odd []draftPort, value func(draftPort) string) string {
	parts := make([]string, len(odd))
	for i, p := range odd {
		parts[i] = p.netdev() + " has " + value(p)
	}
	return strings.Join(parts, ", ")
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "no priority"
	}
	return strings.Join(s, ",")
}

func globalIPv4(i *node.Interface) []netip.Prefix {
	if i == nil {
		return nil
	}
	var out []netip.Prefix
	for _, a := range i.Addresses {
		if a.Addr().Is4() && a.Addr().IsGlobalUnicast() {
			out = append(out, a)
		}
	}
	return out
}

func joinPrefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}
