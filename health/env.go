package health

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/node"
)

// env is one evaluation: the inputs plus what every check would otherwise recompute.
type env struct {
	snap     *node.Snapshot
	prev     *node.Snapshot
	plan     *config.Plan
	nodeName string
	// node is this node's plan entry; nil when planReason says why.
	node       *config.Node
	planReason Text
	// noRDMA: the node has no RDMA device that could be read.
	noRDMA bool
	// unreadable are the RDMA devices sysfs lists but that could not be read;
	// snap and prev hold only the readable ones.
	unreadable []*node.Device
	// rdmaUnknown: no RDMA device could be read, and the reason is not that the
	// node has none (the listing failed, or every device is unreadable).
	rdmaUnknown bool
	// notRDMANode, when not "", says why this node is not an RDMA node: it has
	// no RDMA hardware and the plan does not list it.
	notRDMANode Text
	// targets are the ports the per-port checks look at: the plan's compute
	// interfaces in rail order when the plan knows this node, else every RDMA port.
	targets []*target
	// devices are the distinct RDMA devices of the targets, in target order.
	devices []*node.Device
}

// target is one compute port: what the plan says and what the node has. Any of the
// node-side parts may be nil when the node lacks them.
type target struct {
	netdev  string
	planned *config.ComputeInterface
	dev     *node.Device
	port    *node.Port
	iface   *node.Interface
	// unreadable is the RDMA device the target would use when it is there but
	// could not be read.
	unreadable *node.Device
}

func newEnv(snap *node.Snapshot, plan *config.Plan, nodeName string) *env {
	e := &env{snap: snap, plan: plan, nodeName: nodeName}
	if snap == nil {
		return e
	}
	e.snap, e.unreadable = readableOnly(snap)
	e.prev, _ = readableOnly(snap.Previous)
	e.noRDMA = len(e.snap.Devices) == 0
	e.rdmaUnknown = e.noRDMA && (len(e.unreadable) > 0 || snap.Sources[node.SourceRDMA] == node.SourceFailed)
	switch {
	case plan == nil:
		e.planReason = Textf(SkipNoPlan)
	case nodeName == "":
		e.planReason = Textf("this node's name is unknown, so its plan entry cannot be found (see plan_node_known)")
	default:
		if n, ok := plan.Node(nodeName); ok {
			e.node = n
		} else {
			e.planReason = Textf("node %q is not in the cluster plan (see plan_node_known)", nodeName)
		}
	}
	e.notRDMANode = e.notRDMAReason()
	e.targets = e.buildTargets()
	e.devices = targetDevices(e.targets)
	return e
}

// planNames are the names this node's plan entry gives its interfaces and
// devices, which a fix may name before the node has them.
func (e *env) planNames() []string {
	if e.node == nil {
		return nil
	}
	var out []string
	for _, ci := range e.node.Interfaces {
		out = append(out, ci.Netdev, ci.RDMADevice)
	}
	return out
}

// notRDMAReason tells a node that should have no RDMA from one that lost it: no
// RDMA device, no RDMA-capable NIC on a fully scanned PCI bus, and no plan entry
// saying it should have one. Without a complete look at both, or with a plan
// entry, a missing NIC stays a failure of rdma_nic_present.
func (e *env) notRDMAReason() Text {
	snap := e.snap
	if !e.noRDMA || e.rdmaUnknown || len(e.unreadable) > 0 || e.node != nil || len(snap.NICs) > 0 ||
		!snap.SourceRead(node.SourceRDMA) || !snap.SourceRead(node.SourcePCIe) {
		return Textf("")
	}
	unlisted := Textf("no cluster plan lists it")
	switch {
	case e.plan != nil && e.nodeName != "":
		unlisted = Textf("the cluster plan does not list node %q", e.nodeName)
	case e.plan != nil:
		unlisted = Textf("the cluster plan does not list it (its name is unknown)")
	}
	return Textf("%s: no RDMA device and no RDMA-capable NIC on the PCI bus, and %s (a node that should have RDMA NICs belongs in the plan, so that their absence fails)", Textf(SkipNotRDMANode), unlisted)
}

// readableOnly returns the snapshot with only the devices that could be read,
// and the others: a device that could not be read has no ports, and a check must
// not take it for a device without any.
func readableOnly(snap *node.Snapshot) (*node.Snapshot, []*node.Device) {
	if snap == nil {
		return nil, nil
	}
	var readable, unreadable []*node.Device
	for _, d := range snap.Devices {
		if d.Unreadable != "" {
			unreadable = append(unreadable, d)
		} else {
			readable = append(readable, d)
		}
	}
	if len(unreadable) == 0 {
		return snap, nil
	}
	c := *snap
	c.Devices = readable
	return &c, unreadable
}

// unreadableDevice returns the unreadable device of that name, or nil.
func (e *env) unreadableDevice(name string) *node.Device {
	for _, d := range e.unreadable {
		if d.Name == name {
			return d
		}
	}
	return nil
}

func (e *env) buildTargets() []*target {
	var out []*target
	if e.node != nil {
		for _, pi := range e.node.Interfaces {
			t := &target{netdev: pi.Netdev, planned: pi, iface: e.snap.Interfaces[pi.Netdev]}
			t.dev, t.port = e.portByNetdev(pi.Netdev)
			if t.port == nil && pi.RDMADevice != "" {
				// Fall back to the planned device only when it backs no netdev (IB
				// without IPoIB); one that backs another netdev belongs to that one,
				// and planned_interface_present reports the mix-up.
				if d := e.snap.Device(pi.RDMADevice); d != nil && len(d.Ports) > 0 && d.Ports[0].Interface == "" {
					t.dev, t.port = d, d.Ports[0]
				}
			}
			if t.port == nil {
				name := pi.RDMADevice
				if name == "" && t.iface != nil {
					name = t.iface.RDMADevice
				}
				t.unreadable = e.unreadableDevice(name)
			}
			out = append(out, t)
		}
		return out
	}
	for _, d := range e.snap.Devices {
		for _, p := range d.Ports {
			out = append(out, &target{netdev: p.Interface, dev: d, port: p, iface: e.snap.Interfaces[p.Interface]})
		}
	}
	return out
}

// portByNetdev finds the RDMA port a netdev backs, from either side of the mapping:
// the port's own netdev or the interface's RDMA device.
func (e *env) portByNetdev(netdev string) (*node.Device, *node.Port) {
	if netdev == "" {
		return nil, nil
	}
	for _, d := range e.snap.Devices {
		for _, p := range d.Ports {
			if p.Interface == netdev {
				return d, p
			}
		}
	}
	if i := e.snap.Interfaces[netdev]; i != nil && i.RDMADevice != "" {
		if d := e.snap.Device(i.RDMADevice); d != nil {
			for _, p := range d.Ports {
				if p.Number == i.Port {
					return d, p
				}
			}
		}
	}
	return nil, nil
}

// ib reports whether the target is an InfiniBand port, where RoCE checks do not apply.
func (t *target) ib() bool {
	if t.port != nil {
		return t.port.LinkLayer == node.LinkLayerInfiniBand
	}
	return false
}

// ethernet reports whether the port's Ethernet side (its netdev's MTU, pause,
// PHY) can be judged: not an InfiniBand port, nor one whose link layer is
// neither (EFA's driver reports an unspecified one, and the device has no netdev
// of its own). A target without a port, or whose link layer is unreadable,
// counts as Ethernet, as before its kind was known.
func (t *target) ethernet() bool {
	return t.port == nil || t.port.LinkLayer == "" || t.port.Ethernet()
}

// roce reports whether RoCE checks apply: an Ethernet port of an adapter that
// speaks RoCE. iWARP (RDMA over TCP) and usNIC ports read link layer Ethernet
// too; only the node type tells them from RoCE, which is a CA like InfiniBand.
func (t *target) roce() bool {
	return t.ethernet() && (t.port == nil || rdmaProtocol(t.dev) == "")
}

// notEthernet says why a check of the port's Ethernet side does not apply, ""
// when it does; what names what the check judges, for the reason.
func (t *target) notEthernet(what string) Text {
	if t.ethernet() {
		return Textf("")
	}
	return t.notRoCEText(what)
}

// notRoCE says why a RoCE check does not apply to the port, "" when it does.
func (t *target) notRoCE(what string) Text {
	if t.roce() {
		return Textf("")
	}
	return t.notRoCEText(what)
}

// rdmaProtocol names the protocol of a device that is neither RoCE nor
// InfiniBand, "" for those (and for a device whose node type is unknown).
func rdmaProtocol(d *node.Device) string {
	switch {
	case d == nil:
		return ""
	case d.IWARP():
		return "iWARP, RDMA over TCP"
	case d.NodeType == node.NodeTypeUSNIC || d.NodeType == node.NodeTypeUSNICUDP:
		return "usNIC"
	case d.Driver == "efa":
		return "EFA, AWS's Elastic Fabric Adapter"
	}
	return ""
}

// notRoCEText is SkipInfiniBand on an InfiniBand port, else "efa_0 is not a
// RoCE port (EFA…; link layer Unknown, node type 7: unspecified): a RoCE v2 GID
// does not apply".
func (t *target) notRoCEText(what string) Text {
	if t.ib() {
		return Textf(SkipInfiniBand)
	}
	var kind []string
	if p := rdmaProtocol(t.dev); p != "" {
		kind = append(kind, p)
	}
	var attrs []string
	if t.port.LinkLayer != "" {
		attrs = append(attrs, "link layer "+t.port.LinkLayer)
	}
	if t.dev != nil && t.dev.NodeType != 0 {
		attrs = append(attrs, "node type "+stateText(t.dev.NodeType, t.dev.NodeTypeName))
	}
	if len(attrs) > 0 {
		kind = append(kind, strings.Join(attrs, ", "))
	}
	return Textf("%s is not a RoCE port (%s): %s does not apply", PortSubject(t.dev, t.port), strings.Join(kind, "; "), what)
}

// subject names the target by its netdev, the name operators configure; ports
// without one fall back to the RDMA name.
func (t *target) subject() string {
	if t.netdev != "" {
		return t.netdev
	}
	return t.devSubject()
}

// devSubject names the target's RDMA port.
func (t *target) devSubject() string {
	if t.port == nil {
		if t.planned != nil && t.planned.RDMADevice != "" {
			return t.planned.RDMADevice
		}
		return t.netdev
	}
	return PortSubject(t.dev, t.port)
}

func (t *target) pciAddress() string {
	if t.dev != nil && t.dev.PCIAddress != "" {
		return t.dev.PCIAddress
	}
	if t.iface != nil {
		return t.iface.BusInfo
	}
	return ""
}

// absent reports whether the target is on this node neither as an RDMA port nor as a
// netdev. Only a planned interface can be: the others come from the node's ports.
func (t *target) absent() bool { return t.port == nil && t.iface == nil }

// missingReason explains why a target lacks the part a check needs.
func (t *target) missingReason(what string) Text {
	if t.unreadable != nil {
		return Textf("%s could not be read (see rdma_devices_readable)", t.unreadable.Name)
	}
	if t.absent() {
		return Textf("%s is not on this node (see planned_interface_present)", t.netdev)
	}
	return Textf("no %s for %s", what, t.subject())
}

// targetDevices returns the distinct RDMA devices of the targets, in target order.
func targetDevices(targets []*target) []*node.Device {
	seen := map[string]bool{}
	var out []*node.Device
	for _, t := range targets {
		if t.dev != nil && !seen[t.dev.Name] {
			seen[t.dev.Name] = true
			out = append(out, t.dev)
		}
	}
	return out
}

// interval is the time between the previous scrape and this one, in seconds.
func (e *env) interval() (float64, bool) {
	if e.prev == nil {
		return 0, false
	}
	dt := e.snap.Time.Sub(e.prev.Time).Seconds()
	return dt, dt > 0
}

func (e *env) prevPort(p *node.Port) *node.Port {
	if e.prev == nil || p == nil {
		return nil
	}
	if d := e.prev.Device(p.Device); d != nil {
		for _, pp := range d.Ports {
			if pp.Number == p.Number {
				return pp
			}
		}
	}
	return nil
}

func (e *env) prevEthtool(netdev string) *node.EthtoolStats {
	if e.prev == nil {
		return nil
	}
	return e.prev.Ethtool[netdev]
}

func (e *env) prevInterface(netdev string) *node.Interface {
	if e.prev == nil {
		return nil
	}
	return e.prev.Interfaces[netdev]
}

func (e *env) prevPCI(addr string) *node.PCIFunction {
	if e.prev == nil {
		return nil
	}
	return e.prev.PCI[addr]
}

// prevGPU is the link of the GPU at addr in the previous sample.
func (e *env) prevGPU(addr string) *node.PCIFunction {
	if e.prev == nil || e.prev.GPU == nil {
		return nil
	}
	for _, g := range e.prev.GPU.GPUs {
		if g.PCI != nil && g.PCI.Address == addr {
			return g.PCI
		}
	}
	return nil
}

// sourceReason explains why a collector's part of the snapshot is missing; "" when
// it was read, in full or in part.
func (e *env) sourceReason(source string, what Text) Text {
	st, ran := e.snap.Sources[source]
	switch {
	case !ran:
		return Textf("%s not collected: the %s collector is disabled (--collector.%s)", what, source, source)
	case st == node.SourceFailed:
		return Textf("%s not collected: the %s collector failed (see roce_scrape_collector_success and the exporter log)", what, source)
	case st == node.SourceAbsent:
		return Textf("%s not collected: no interface of this node reports it (the %s collector found none)", what, source)
	}
	return Textf("")
}

// delta is cur-prev for a counter, false when the counter went backwards (a driver
// reload or device reset): a negative rate would be meaningless.
func delta(cur, prev uint64) (uint64, bool) {
	if cur < prev {
		return 0, false
	}
	return cur - prev, true
}

// History and now. An error counter counts since boot (or since the driver last
// reset it), so its total is history: something went wrong at some time, which an
// operator should know about but which may be long over, so it warns. Its increase
// between the previous sample and this one is happening now, and fails where the
// check says it must. A run with one sample sees only the history and judges it the
// same way, so the doctor with and without --interval agrees on all both can see.

// window is one counter compared between the previous sample and this one.
type window struct {
	inc uint64
	dt  float64
	// compared: both samples have the counter and it did not go backwards.
	compared bool
	// reset: it went backwards, the driver restarted it between the samples.
	reset bool
}

func (e *env) window(cur, prev uint64, havePrev bool) window {
	dt, okdt := e.interval()
	if !havePrev || !okdt {
		return window{}
	}
	d, ok := delta(cur, prev)
	if !ok {
		return window{dt: dt, reset: true}
	}
	return window{inc: d, dt: dt, compared: true}
}

// rising reports whether the counter increased between the samples.
func (w window) rising() bool { return w.compared && w.inc > 0 }

// last is " in the last 5s".
func (w window) last() Text { return Textf(" in the last %s", secs(w.dt)) }

// historyNote ends the message about a total that is not known to be rising.
func (w window) historyNote() Text {
	switch {
	case w.compared:
		return Textf(", none new%s", w.last())
	case w.reset:
		return Textf("; the counter restarted between the two samples, so whether it still happens is unknown")
	}
	return Textf("; a second sample tells whether it still happens")
}

// gbps formats bits/s as a short Gb/s number: 400, 252.1.
func gbps(bitsPerSecond float64) string {
	return num(bitsPerSecond / 1e9)
}

func num(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

func secs(v float64) string {
	if v >= 10 {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64) + "s"
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) + "s"
}

func pct(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/10, 'f', -1, 64) + "%"
}

// joinNatural sorts names the way findings are sorted and joins them.
func joinNatural(names []string) string {
	s := slices.Clone(names)
	slices.SortStableFunc(s, naturalCompare)
	return strings.Join(s, ", ")
}

func stateText(n int, name string) string {
	if name == "" {
		return strconv.Itoa(n)
	}
	return strconv.Itoa(n) + ": " + name
}

func orPlaceholder(v, placeholder string) string {
	if v == "" {
		return placeholder
	}
	return v
}
