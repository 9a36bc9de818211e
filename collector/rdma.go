package collector

import (
	"log/slog"
	"strconv"

	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/pipeline"
)

func init() { registerSource(node.SourceRDMA, newRDMACollector) }

var (
	deviceInfoDesc = newGaugeDesc(namespace+"_device_info",
		"RDMA device metadata; value is always 1.",
		"device", "driver", "hca_type", "board_id", "firmware_version", "node_guid", "pci_address")
	portInfoDesc = newGaugeDesc(namespace+"_port_info",
		"RDMA port metadata; value is always 1.", "device", "port", "link_layer", "interface")
	portStateDesc = newGaugeDesc(namespace+"_port_state_id",
		"Logical port state: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER.", "device", "port")
	portPhysStateDesc = newGaugeDesc(namespace+"_port_physical_state_id",
		"Physical port state: 1 Sleep, 2 Polling, 3 Disabled, 4 PortConfigurationTraining, 5 LinkUp, 6 LinkErrorRecovery, 7 PhyTest.",
		"device", "port")
	portUpDesc = newGaugeDesc(namespace+"_port_up",
		"1 if the port is ACTIVE with the physical link up, else 0.", "device", "port")
	portRateDesc = newGaugeDesc(namespace+"_port_rate_bytes_per_second",
		"Port signalling rate. Absent on a down RoCE port, whose sysfs rate is a placeholder.", "device", "port")
	portActiveMTUDesc = newGaugeDesc(namespace+"_port_active_mtu_bytes",
		"RoCE path MTU the port can use: the largest IB MTU <= netdev MTU - 96 bytes of RoCE headers.", "device", "port")
	gidInfoDesc = newGaugeDesc(namespace+"_gid_info",
		"Populated GID table slot; value is always 1. Cached for --collector.rdma.gid-refresh.",
		"device", "port", "index", "gid", "type", "interface")
	lifespanDesc = newGaugeDesc(namespace+"_hw_counters_lifespan_seconds",
		"How long the kernel caches hw_counters values (the hw_counters/lifespan file).", "device", "port")
	defaultRoCEModeDesc = newGaugeDesc(namespace+"_default_roce_mode_info",
		"Default RoCE mode used by rdma_cm, from configfs, where the device directory exists; value is always 1.",
		"device", "port", "mode")
)

// rdmaCollector exports devices, ports, counters and GID tables.
type rdmaCollector struct {
	// One family per counter file name, made the first time the name is
	// seen: the names come from the driver.
	pma map[string]counterFamily
	hw  map[string]counterFamily
	// ibCountersOnEthernet exports the InfiniBand link-layer counters on
	// RoCE ports too (--collector.rdma.ib-counters-on-ethernet).
	ibCountersOnEthernet bool
}

// infiniBandOnlyCounters are PortCounters of the InfiniBand link and subnet
// layers: virtual lane 15 (subnet management), switch relay, partition-key
// constraints, local link integrity and flow-control buffer overruns. A RoCE
// port has an Ethernet link instead, so mlx5 reports them as zeros forever;
// seven series per port that no alert, panel or check reads. The doctor
// still sees them in the model.
var infiniBandOnlyCounters = map[string]bool{
	"VL15_dropped":                    true,
	"port_rcv_switch_relay_errors":    true,
	"port_rcv_constraint_errors":      true,
	"port_xmit_constraint_errors":     true,
	"port_rcv_remote_physical_errors": true,
	"local_link_integrity_errors":     true,
	"excessive_buffer_overrun_errors": true,
}

type counterFamily struct {
	desc  *Desc
	scale float64
}

func newRDMACollector(o *Options, _ *slog.Logger) Collector {
	return &rdmaCollector{pma: map[string]counterFamily{}, hw: map[string]counterFamily{},
		ibCountersOnEthernet: o != nil && o.IBCountersOnEthernet}
}

func (c *rdmaCollector) Update(col *pipeline.Collection, out *Sink) error {
	snap := col.Snapshot
	for _, d := range snap.Devices {
		if d.Unreadable != "" {
			continue // nothing but its name is known; the rdma_devices_readable check says why
		}
		out.emit(deviceInfoDesc, 1, d.Name, d.Driver, d.HCAType, d.BoardID, d.FirmwareVersion, d.NodeGUID, d.PCIAddress)
		for _, p := range d.Ports {
			c.emitPort(p, out)
		}
	}
	return nil
}

func (c *rdmaCollector) emitPort(p *node.Port, out *Sink) {
	dev, port := p.Device, strconv.Itoa(p.Number)
	if p.StateKnown {
		out.emit(portStateDesc, float64(p.State), dev, port)
	}
	if p.PhysStateKnown {
		out.emit(portPhysStateDesc, float64(p.PhysState), dev, port)
	}
	if p.StateKnown {
		out.emit(portUpDesc, boolFloat(p.Up()), dev, port)
	}
	out.emit(portInfoDesc, 1, dev, port, p.LinkLayer, p.Interface)
	if p.RateBitsPerSecond > 0 {
		out.emit(portRateDesc, p.RateBitsPerSecond/8, dev, port)
	}
	for _, v := range p.Counters {
		if infiniBandOnlyCounters[v.Name] && p.Ethernet() && !c.ibCountersOnEthernet {
			continue
		}
		f := c.family(c.pma, v.Name, false)
		out.emit(f.desc, float64(v.Value)*f.scale, dev, port)
	}
	for _, v := range p.HWCounters {
		f := c.family(c.hw, v.Name, true)
		out.emit(f.desc, float64(v.Value), dev, port)
	}
	if p.LifespanKnown {
		out.emit(lifespanDesc, p.HWCountersLifespan.Seconds(), dev, port)
	}
	if p.ActiveMTU > 0 {
		out.emit(portActiveMTUDesc, float64(p.ActiveMTU), dev, port)
	}
	for _, g := range p.GIDs {
		out.emit(gidInfoDesc, 1, dev, port, strconv.Itoa(g.Index), g.GID, g.Type, g.Interface)
	}
	if p.DefaultRoCEMode != "" {
		out.emit(defaultRoCEModeDesc, 1, dev, port, p.DefaultRoCEMode)
	}
	if p.TrafficClass != nil {
		out.emit(defaultTrafficClassDesc, float64(*p.TrafficClass), dev, port, "mlx5_tc")
	}
	if p.DefaultRoCETOS != nil {
		out.emit(defaultTrafficClassDesc, float64(*p.DefaultRoCETOS), dev, port, "rdma_cm")
	}
}

// defaultTrafficClassDesc: one series per source that sets a default, absent when
// neither file exists or no global traffic class is set (never 0 for "unknown").
var defaultTrafficClassDesc = newGaugeDesc(namespace+"_rdma_default_traffic_class",
	"Default IP traffic class (ToS byte: DSCP<<2 | ECN bits) RDMA is sent with: source=mlx5_tc is MLNX_OFED's /sys/class/infiniband/<dev>/tc/<port>/traffic_class global override (every QP), source=rdma_cm is configfs default_roce_tos (rdma_cm connections that set none). Absent where the file does not exist or sets nothing.",
	"device", "port", "source")

// family returns the metric family of a counter file, made once per name.
func (c *rdmaCollector) family(cache map[string]counterFamily, name string, hw bool) counterFamily {
	if f, ok := cache[name]; ok {
		return f
	}
	var f counterFamily
	if hw {
		typ := typeCounter
		if node.IsHWGauge(name) {
			typ = typeGauge
		}
		f = counterFamily{desc: newDesc(hwMetricName(name), helpFor("hw_counters", name), typ, "device", "port"), scale: 1}
	} else {
		metric, scale := counterMetricName(name)
		f = counterFamily{desc: newDesc(metric, helpFor("counters", name), typeCounter, "device", "port"), scale: scale}
	}
	cache[name] = f
	return f
}
