package fleetsim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"

	"github.com/roce-exporter/roce_exporter/collector"
	"github.com/roce-exporter/roce_exporter/config"
	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/pipeline"
	"github.com/roce-exporter/roce_exporter/probes"
	"github.com/roce-exporter/roce_exporter/probes/schedule"
)

// exporterPort is the port the exporter listens on: the instance label is
// host:port.
const exporterPort = "14791"

// lineRate is a 400G port in bytes per second.
const lineRate = 400e9 / 8

// exportedCollectors are the collectors whose series the rules read about
// a node: the probe results, the ports (roce_port_info, the link-down
// counter) and the LLDP neighbours.
var exportedCollectors = []string{"rdma", "lldp", "probe"}

// fleet is what every trial of one size and layout shares: the plan, the
// schedule every node derives from it, the topology.
type fleet struct {
	plan       *config.Plan
	names      []string
	byName     map[string]int
	byInstance map[string]int
	topo       *Topology
	sched      *schedule.FleetSchedule
	bound      time.Duration // probes.fresh_rounds intervals plus the timeout
}

func device(rail int) string           { return "mlx5_" + strconv.Itoa(rail) }
func netdev(rail int) string           { return fmt.Sprintf("ens%df0np0", rail+1) }
func (f *fleet) instance(n int) string { return f.names[n] + ":" + exporterPort }

// planYAML writes the cluster plan of a simulated fleet: every node with
// one compute interface per rail, pair probes every interval.
func planYAML(nodes, rails int, interval, duration, timeout time.Duration, share float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster: fleetsim\nnetworks:\n  management: 10.0.0.0/16\n  compute:\n")
	for r := range rails {
		fmt.Fprintf(&b, "    - 10.%d.0.0/16\n", 100+r)
	}
	fmt.Fprintf(&b, "probes:\n  enabled: true\n  nic_test_interval: %s\n  max_fabric_share: %g\n", interval, share)
	fmt.Fprintf(&b, "  ib_write_bw: {duration: %s, timeout: %s}\n", duration, timeout)
	b.WriteString("nodes:\n")
	for i := range nodes {
		fmt.Fprintf(&b, "  - name: %s\n    management_ip: 10.0.%d.%d\n    interfaces:\n", nodeName(i), i/250, i%250+1)
		for r := range rails {
			fmt.Fprintf(&b, "      - {netdev: %s, rdma_device: %s, ip: 10.%d.%d.%d/16}\n", netdev(r), device(r), 100+r, i/250, i%250+1)
		}
	}
	return b.String()
}

func nodeName(i int) string { return fmt.Sprintf("gpu%04d", i+1) }

// newFleet builds the plan with the real plan loader and the schedule with
// the real fleet schedule.
func newFleet(cfg Config, layout Layout) (*fleet, error) {
	plan, err := config.Parse("fleetsim.yaml", []byte(planYAML(cfg.Nodes, cfg.Rails, cfg.Interval, cfg.Duration, cfg.Timeout, cfg.Share)))
	if err != nil {
		return nil, err
	}
	f := &fleet{plan: plan, names: plan.NodeNames(), byName: map[string]int{}, byInstance: map[string]int{},
		topo: NewTopology(layout, cfg.Nodes, cfg.Rails, cfg.Spines)}
	for i, n := range f.names {
		f.byName[n] = i
		f.byInstance[f.instance(i)] = i
	}
	bw := plan.Probes.IBWriteBW
	f.sched = schedule.NewFleetSchedule(f.names, bw.Schedule, plan.Probes.MaxFabricShare)
	f.bound = config.FreshFor(bw.Schedule, plan.Probes.FreshRounds)
	return f, nil
}

// machine is one simulated node and its exporter.
type machine struct {
	index int
	// as is the plan name its exporter runs under (its own, unless a
	// collision gave it another's).
	as       string
	up       bool
	store    *probes.Store
	renderer *collector.Renderer
	col      *pipeline.Collection
	// linkDowned is each rail's link_downed counter.
	linkDowned []uint64
	scrape     scrapeCache
}

// newExporter (re)starts a machine's exporter under name as, with an empty
// store.
func (tr *trial) newExporter(m *machine, as string) error {
	m.as = as
	m.store = probes.NewStore()
	m.store.SetClock(tr.clock)
	m.store.SetSelf(as)
	m.store.SetFreshness(probes.KindIBWriteBW, tr.fleet.bound)
	// The exporter judges its identity from the node's addresses: the plan's
	// compute IPs of its name are on it only when the name is its own.
	m.store.SetIdentityMismatch(!m.verified())
	m.store.SetUntestableRails(probes.KindIBWriteBW, tr.fleet.plan.UntestableRails(as))
	r, err := collector.NewRenderer(exportedCollectors, m.store)
	if err != nil {
		return err
	}
	m.renderer = r
	m.scrape.dirty = true
	return nil
}

// verified reports whether the machine's exporter runs under the machine's
// own plan name; otherwise it neither tests nor serves (probes/identity.go).
func (m *machine) verified() bool { return m.as == nodeName(m.index) }

// serves reports whether the machine's responders accept a test.
func (m *machine) serves() bool { return m.up && m.verified() }

// snapshot is what the reader would read of the machine: its ports (with
// the link-down counter) and their LLDP neighbours.
func (tr *trial) snapshot(m *machine) *node.Snapshot {
	topo := tr.fleet.topo
	snap := &node.Snapshot{LLDP: map[string]*node.LLDPNeighbor{}}
	for r := range topo.Rails {
		up := !tr.linkDown(m.index, r, tr.now)
		state, phys := 4, 5 // ACTIVE, LinkUp
		if !up {
			state, phys = 1, 3 // DOWN, Disabled
		}
		p := &node.Port{Device: device(r), Number: 1, LinkLayer: "Ethernet", State: state, StateKnown: true, PhysState: phys, PhysStateKnown: true,
			Interface: netdev(r), Counters: []node.Counter{{Name: "link_downed", Value: m.linkDowned[r]}}}
		if up {
			p.RateBitsPerSecond = lineRate * 8
		}
		snap.Devices = append(snap.Devices, &node.Device{Name: device(r), Driver: "mlx5_core", Ports: []*node.Port{p}})
		sw := topo.Switches()[topo.SwitchOf(m.index, r)]
		snap.LLDP[netdev(r)] = &node.LLDPNeighbor{Interface: netdev(r), ChassisName: sw.Name, ChassisID: sw.ID, ChassisIDType: "mac",
			PortID: topo.PortOf(m.index, r), PortIDType: "ifname"}
	}
	return snap
}

// scrapeCache is a target's series between scrapes. The rendered series
// change only when the store gets a result, a result ages out of the
// freshness bound, or the node's counters move; until then a scrape
// appends the same values again (by reference, as Prometheus' scrape
// cache does).
type scrapeCache struct {
	dirty      bool
	validUntil time.Time
	byKey      map[string]*cachedSeries
	list       []*cachedSeries
	gen        int
	key        []byte
	up         cachedSeries
}

type cachedSeries struct {
	lset labels.Labels
	ref  storage.SeriesRef
	v    float64
	gen  int
}

var staleNaN = math.Float64frombits(value.StaleNaN)

// scrapeTarget appends one scrape of machine m at t: its series, stale
// markers for the series it no longer exports, and up. A machine that is
// down fails the scrape: up 0 and every series stale.
func (tr *trial) scrapeTarget(app storage.AppenderV2, m *machine, t time.Time) error {
	c := &m.scrape
	if c.byKey == nil {
		c.byKey = map[string]*cachedSeries{}
	}
	ts := t.UnixMilli()
	inst := tr.fleet.instance(m.index)
	if !m.up {
		for k, s := range c.byKey {
			if _, err := app.Append(s.ref, s.lset, 0, ts, staleNaN, nil, nil, storage.AOptions{}); err != nil {
				return err
			}
			delete(c.byKey, k)
		}
		c.list, c.dirty = nil, true
	} else if c.dirty || !t.Before(c.validUntil) {
		if err := tr.render(m, inst, ts, app); err != nil {
			return err
		}
	}
	for _, s := range c.list {
		ref, err := app.Append(s.ref, s.lset, 0, ts, s.v, nil, nil, storage.AOptions{})
		if err != nil {
			return fmt.Errorf("%s: %w", s.lset, err)
		}
		s.ref = ref
	}
	up := 0.0
	if m.up {
		up = 1
	}
	if c.up.lset.IsEmpty() {
		c.up.lset = labels.FromStrings(labels.MetricName, "up", "job", tr.cfg.Job, "instance", inst)
	}
	ref, err := app.Append(c.up.ref, c.up.lset, 0, ts, up, nil, nil, storage.AOptions{})
	c.up.ref = ref
	return err
}

// render runs the real collectors on the machine's snapshot and store, and
// marks stale what it no longer exports.
func (tr *trial) render(m *machine, inst string, ts int64, app storage.AppenderV2) error {
	c := &m.scrape
	c.gen++
	c.list = c.list[:0]
	m.col.Snapshot = tr.snapshot(m)
	err := m.renderer.Render(m.col, func(name string, names, values []string, v float64) {
		if !tr.rules.Stores(name) {
			return
		}
		c.key = append(c.key[:0], name...)
		for _, val := range values {
			c.key = append(c.key, 0xff)
			c.key = append(c.key, val...)
		}
		s := c.byKey[string(c.key)]
		if s == nil {
			b := labels.NewScratchBuilder(len(names) + 3)
			b.Add(labels.MetricName, name)
			b.Add("job", tr.cfg.Job)
			b.Add("instance", inst)
			for i, n := range names {
				b.Add(n, values[i])
			}
			b.Sort()
			s = &cachedSeries{lset: b.Labels()}
			c.byKey[string(c.key)] = s
		} else if s.gen == c.gen {
			return // emitted twice: the exporter's encoder keeps the first
		}
		s.v, s.gen = v, c.gen
		c.list = append(c.list, s)
	})
	if err != nil {
		return err
	}
	for k, s := range c.byKey {
		if s.gen != c.gen {
			if _, err := app.Append(s.ref, s.lset, 0, ts, staleNaN, nil, nil, storage.AOptions{}); err != nil {
				return err
			}
			delete(c.byKey, k)
		}
	}
	c.dirty = false
	// The next change without a new result: the oldest fresh result
	// leaving the freshness bound.
	c.validUntil = tr.end.Add(time.Hour)
	for _, r := range m.store.Latest() {
		if exp := r.Start.Add(tr.fleet.bound + time.Nanosecond); exp.Before(c.validUntil) {
			c.validUntil = exp
		}
	}
	return nil
}
