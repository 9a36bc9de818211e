package config

import (
	"fmt"
	"maps"
	"net/netip"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// This file is the plan's schema: one handler per key, each checking its value on its
// own. Checks between fields live in validate.go.

func (l *loader) decodePlan(root *yaml.Node) *Plan {
	if root.Kind != yaml.MappingNode {
		l.errorAt(root, "", "a plan is a mapping with the sections networks, expectations, nodes and probes, not %s", describe(root))
		return nil
	}
	plan := &Plan{}
	l.object(field{"", root}, fieldHandlers{
		"cluster":      func(f field) { plan.Cluster, _ = l.text(f) },
		"networks":     func(f field) { l.decodeNetworks(f, &plan.Networks) },
		"expectations": func(f field) { l.decodeExpectations(f, &plan.Expectations) },
		"nodes": func(f field) {
			if f.node.Kind == yaml.SequenceNode && len(f.node.Content) == 0 {
				l.errorAt(f.node, f.path, "lists no nodes; a plan needs at least one")
			}
			l.list(f, func(_ int, item field) {
				if node := l.decodeNode(item); node != nil {
					plan.Nodes = append(plan.Nodes, node)
					l.nodePath[node] = item.path
				}
			})
		},
		"probes": func(f field) { l.decodeProbes(f, &plan.Probes) },
	})
	return plan
}

func (l *loader) decodeNetworks(f field, networks *Networks) {
	l.object(f, fieldHandlers{
		"management": func(f field) { networks.Management, _ = l.network(f) },
		"compute": func(f field) {
			addCompute := func(f field) {
				if prefix, ok := l.network(f); ok {
					networks.Compute = append(networks.Compute, prefix)
					l.computePath = append(l.computePath, f.path)
				}
			}
			if f.node.Kind != yaml.SequenceNode {
				addCompute(f)
				return
			}
			if len(f.node.Content) == 0 {
				l.errorAt(f.node, f.path, "lists no networks")
			}
			l.list(f, func(_ int, item field) { addCompute(item) })
		},
	})
}

// network reads a subnet in CIDR form.
func (l *loader) network(f field) (netip.Prefix, bool) {
	s, ok := l.text(f)
	if !ok {
		return netip.Prefix{}, false
	}
	prefix, err := netip.ParsePrefix(s)
	if err != nil {
		if _, addrErr := netip.ParseAddr(s); addrErr == nil {
			l.errorAt(f.node, f.path, "%q is an address, not a network: add the prefix length, e.g. 10.0.0.0/24", s)
		} else {
			l.errorAt(f.node, f.path, "%q is not a network in CIDR form such as 10.0.0.0/24", s)
		}
		return netip.Prefix{}, false
	}
	if prefix != prefix.Masked() {
		// Usually an interface address pasted where the subnet belongs.
		l.errorAt(f.node, f.path, "%s has host bits set; the network is %s", prefix, prefix.Masked())
		return netip.Prefix{}, false
	}
	return prefix, true
}

func (l *loader) decodeExpectations(f field, e *Expectations) {
	l.object(f, fieldHandlers{
		"link_layer": func(f field) {
			e.LinkLayer = keyword(l, f, []LinkLayer{LinkLayerEthernet, LinkLayerInfiniBand},
				"%q must be Ethernet (RoCE) or InfiniBand, as `rdma link show` or /sys/class/infiniband/*/ports/1/link_layer reports it")
		},
		"mtu": func(f field) {
			// The link-layer-specific ceiling is checked in validate, once the link layer is known.
			if mtu, ok := l.integer(f); ok {
				if mtu < minMTU || mtu > maxIPoIBMTU {
					l.errorAt(f.node, f.path, "%d is outside %d–%d (Ethernet allows up to %d)", mtu, minMTU, maxIPoIBMTU, maxEthernetMTU)
					return
				}
				e.MTU = mtu
			}
		},
		"roce_mode": func(f field) {
			e.RoCEMode = keyword(l, f, []RoCEMode{RoCEv1, RoCEv2},
				"%q must be v1 or v2 (v2, routable RoCE over UDP/IP, is what NCCL and modern fabrics use)")
		},
		"pfc_priority": func(f field) {
			if priority, ok := l.integer(f); ok {
				if priority < 0 || priority > 7 {
					l.errorAt(f.node, f.path, "%d is not an 802.1p priority (0–7); leave the key out for lossy RoCE", priority)
					return
				}
				e.PFCPriority = &priority
			}
		},
		"roce_dscp": func(f field) { e.RoCEDSCP = l.dscp(f) },
		"cnp_dscp":  func(f field) { e.CNPDSCP = l.dscp(f) },
		"vlan": func(f field) {
			if vid, ok := l.integer(f); ok {
				if vid < 1 || vid > 4094 {
					l.errorAt(f.node, f.path, "%d is not a VLAN ID (1–4094); leave the key out when the compute network has no VLAN of its own", vid)
					return
				}
				e.VLAN = &vid
			}
		},
		"ib_service_level": func(f field) {
			if sl, ok := l.integer(f); ok {
				if sl < 0 || sl > 15 {
					l.errorAt(f.node, f.path, "%d is not an InfiniBand service level (0–15)", sl)
					return
				}
				e.IBServiceLevel = &sl
			}
		},
		"trust": func(f field) { e.Trust = keyword(l, f, []Trust{TrustDSCP, TrustPCP}, "%q must be dscp or pcp") },
		"ecn": func(f field) {
			if on, ok := l.boolean(f); ok {
				e.ECN = &on
			}
		},
		"min_bandwidth_fraction": func(f field) {
			if fraction, ok := l.number(f); ok {
				if fraction <= 0 || fraction > 1 {
					l.errorAt(f.node, f.path, "%v must be above 0 and at most 1 (0.9 means 90%% of the port rate)", fraction)
					return
				}
				e.MinBandwidthFraction = fraction
			}
		},
		"link_rate_gbps": func(f field) {
			if rate, ok := l.number(f); ok {
				if rate < minLinkRateGbps || rate > maxLinkRateGbps {
					l.errorAt(f.node, f.path, "%v is not a port rate: write it in Gb/s, between %d and %d (e.g. 100, 200, 400, 800)", rate, minLinkRateGbps, maxLinkRateGbps)
					return
				}
				e.LinkRateGbps = rate
			}
		},
		"firmware_consistent": func(f field) { e.FirmwareConsistent, _ = l.boolean(f) },
		"other_rdma_classes": func(f field) {
			l.list(f, func(_ int, item field) {
				if c, ok := l.decodeRDMAClass(item); ok {
					e.OtherRDMAClasses = append(e.OtherRDMAClasses, c)
					l.rdmaClassPath = append(l.rdmaClassPath, item.path)
				}
			})
		},
	})
}

// rdmaClassName: a short word that reads well in a finding.
var rdmaClassName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$`)

func (l *loader) decodeRDMAClass(f field) (RDMAClass, bool) {
	if !l.mapping(f) {
		return RDMAClass{}, false
	}
	var c RDMAClass
	nameOK, prioOK := false, false
	l.object(f, fieldHandlers{
		"name": func(f field) {
			if name, ok := l.text(f); ok {
				if !rdmaClassName.MatchString(name) {
					l.errorAt(f.node, f.path, "%q is not a class name: letters, digits, '.', '-' and '_', at most 32 characters (it names the class in the doctor's findings, e.g. storage)", name)
					return
				}
				c.Name, nameOK = name, true
			}
		},
		"priority": func(f field) {
			if p, ok := l.integer(f); ok {
				if p < 0 || p > 7 {
					l.errorAt(f.node, f.path, "%d is not an 802.1p priority (0–7): the priority the class's traffic runs on, as `mlnx_qos -i <netdev>` or `dcb app show` maps its DSCP", p)
					return
				}
				c.Priority, prioOK = p, true
			}
		},
	}, "name", "priority")
	return c, nameOK && prioOK
}

// The range of expectations.link_rate_gbps: 1 Gb/s (RoCE on a lab's 1GbE) to twice the
// fastest port standard in sight (IEEE 802.3dj and InfiniBand XDR: 1.6 Tb/s). Outside it
// the value is a unit mistake (400e9 for 400) or nonsense (1e300), and the floors derived
// from it would be meaningless.
const (
	minLinkRateGbps = 1
	maxLinkRateGbps = 3200
)

// dscp reads a DSCP code point, the six upper bits of the IP traffic class.
func (l *loader) dscp(f field) *int {
	v, ok := l.integer(f)
	if !ok {
		return nil
	}
	if v < 0 || v > 63 {
		hint := ""
		if v > 63 && v <= 255 {
			// 106, the traffic class (ToS byte) of DSCP 26 with ECT, is a common mix-up.
			hint = fmt.Sprintf("; %d looks like a traffic class (DSCP<<2 plus the ECN bits), which is DSCP %d", v, v>>2)
		}
		l.errorAt(f.node, f.path, "%d is not a DSCP (0–63)%s", v, hint)
		return nil
	}
	return &v
}

// keyword reads one of a fixed set of words, in any letter case, as the value it names;
// for anything else it reports format with the value written.
func keyword[T ~string](l *loader, f field, values []T, format string) T {
	s, ok := l.text(f)
	if !ok {
		return ""
	}
	for _, v := range values {
		if strings.ToLower(s) == strings.ToLower(string(v)) {
			return v
		}
	}
	l.errorAt(f.node, f.path, format, s)
	return ""
}

const (
	minMTU = 68 // the IPv4 minimum; the kernel refuses less
	// maxEthernetMTU is the largest jumbo frame common RoCE NICs and switches take.
	maxEthernetMTU = 9216
	// maxIPoIBMTU is the IPoIB connected-mode maximum.
	maxIPoIBMTU = 65520
)

// nodeName: what hostnames, metric labels and mpirun host lists all accept.
var nodeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func (l *loader) decodeNode(f field) *Node {
	if !l.mapping(f) {
		return nil
	}
	node := &Node{}
	isMapping := l.object(f, fieldHandlers{
		"name": func(f field) {
			if name, ok := l.text(f); ok {
				if !nodeName.MatchString(name) || len(name) > 253 {
					l.errorAt(f.node, f.path, "%q is not a host name: use letters, digits, '.', '-' and '_' (what `hostname -s` prints)", name)
					return
				}
				node.Name = name
			}
		},
		"management_ip": func(f field) { node.ManagementIP, _ = l.address(f) },
		"interfaces": func(f field) {
			if f.node.Kind == yaml.SequenceNode && len(f.node.Content) == 0 {
				l.errorAt(f.node, f.path, "lists no interfaces; a node needs at least one compute interface")
			}
			l.list(f, func(rail int, item field) {
				if iface := l.decodeInterface(item, rail); iface != nil {
					node.Interfaces = append(node.Interfaces, iface)
					l.interfacePath[iface] = item.path
				}
			})
		},
	}, "name", "management_ip", "interfaces")
	if !isMapping {
		return nil
	}
	return node
}

// address reads a management IP; a prefix length, if written, is ignored because only the
// address identifies the node.
func (l *loader) address(f field) (netip.Addr, bool) {
	s, ok := l.text(f)
	if !ok {
		return netip.Addr{}, false
	}
	if prefix, err := netip.ParsePrefix(s); err == nil {
		return prefix.Addr().Unmap(), true
	}
	addr, err := netip.ParseAddr(s)
	if err != nil || addr.Zone() != "" {
		l.errorAt(f.node, f.path, "%q is not an IP address such as 10.0.0.11", s)
		return netip.Addr{}, false
	}
	return addr.Unmap(), true
}

func (l *loader) decodeInterface(f field, rail int) *ComputeInterface {
	if !l.mapping(f) {
		return nil
	}
	iface := &ComputeInterface{Rail: rail}
	isMapping := l.object(f, fieldHandlers{
		"netdev":      func(f field) { iface.Netdev, _ = l.deviceName(f, maxNetdevName) },
		"rdma_device": func(f field) { iface.RDMADevice, _ = l.deviceName(f, maxRDMADeviceName) },
		"ip": func(f field) {
			s, ok := l.text(f)
			if !ok {
				return
			}
			prefix, err := netip.ParsePrefix(s)
			if err != nil {
				if _, addrErr := netip.ParseAddr(s); addrErr == nil && !strings.Contains(s, "/") {
					l.errorAt(f.node, f.path, "%q has no prefix length: write it as `ip -br addr` shows it, e.g. %s/24", s, s)
				} else {
					l.errorAt(f.node, f.path, "%q is not an address with prefix length such as 192.168.100.11/24", s)
				}
				return
			}
			iface.Address = netip.PrefixFrom(prefix.Addr().Unmap(), prefix.Bits())
		},
	}, "netdev")
	if !isMapping {
		return nil
	}
	return iface
}

const (
	maxNetdevName     = 15 // IFNAMSIZ - 1
	maxRDMADeviceName = 63 // IB_DEVICE_NAME_MAX - 1
)

// deviceName reads a kernel device name: the kernel refuses '/', ':' and whitespace in
// them, so such a value is a typo, not a device.
func (l *loader) deviceName(f field, maxLength int) (string, bool) {
	name, ok := l.text(f)
	if !ok {
		return "", false
	}
	if name == "" || name == "." || name == ".." || len(name) > maxLength ||
		strings.ContainsAny(name, "/: \t\n\r") || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		l.errorAt(f.node, f.path, "%q is not a device name (at most %d characters, no '/', ':' or spaces)", name, maxLength)
		return "", false
	}
	return name, true
}

func (l *loader) decodeProbes(f field, p *Probes) {
	l.object(f, fieldHandlers{
		"enabled": func(f field) { p.Enabled, _ = l.boolean(f) },
		"state_dir": func(f field) {
			if dir, ok := l.text(f); ok {
				if !filepath.IsAbs(dir) {
					l.errorAt(f.node, f.path, "%q must be an absolute path: the exporter's working directory is not fixed", dir)
					return
				}
				p.StateDir = dir
			}
		},
		"max_port_utilization": func(f field) {
			if share, ok := l.number(f); ok {
				if share <= 0 || share > 1 {
					l.errorAt(f.node, f.path, "%v must be above 0 and at most 1 (0.1 skips a probe while the port is more than 10%% busy; 1 never skips)", share)
					return
				}
				p.MaxPortUtilization = share
			}
		},
		"nic_test_interval": func(f field) { p.NICTestInterval, _ = l.duration(f, false) },
		"max_fabric_share": func(f field) {
			if share, ok := l.number(f); ok {
				if share <= 0 || share > 1 {
					l.errorAt(f.node, f.path, "%v must be above 0 and at most 1 (0.25 keeps at most a quarter of the nodes under test at once)", share)
					return
				}
				p.MaxFabricShare = share
			}
		},
		"fresh_rounds": func(f field) {
			if n, ok := l.integer(f); ok {
				if n < 2 || n > 100 {
					l.errorAt(f.node, f.path, "%d must be 2–100: a NIC is named only after failing with two different peers, which takes two rounds", n)
					return
				}
				p.FreshRounds = n
			}
		},
		"ib_write_bw":  func(f field) { l.decodePerftest(f, &p.IBWriteBW) },
		"ib_write_lat": func(f field) { l.decodePerftest(f, &p.IBWriteLat) },
		"nccl":         func(f field) { l.decodeNCCL(f, &p.NCCL) },
		"ping":         func(f field) { l.decodePing(f, &p.Ping) },
		"incast":       func(f field) { l.decodeIncast(f, &p.Incast) },
	})
}

func (l *loader) scheduleFields(s *Schedule) fieldHandlers {
	return fieldHandlers{
		"enabled":  func(f field) { s.Enabled, _ = l.boolean(f) },
		"interval": func(f field) { s.Interval, _ = l.duration(f, false) },
		"timeout":  func(f field) { s.Timeout, _ = l.duration(f, false) },
		"jitter":   func(f field) { s.Jitter, _ = l.duration(f, true) },
	}
}

// perftest's own limits (src/perftest_parameters.c): -s 1..UINT_MAX/2, -q 1..16384,
// -x is stored in a uint8.
const (
	maxPerftestMessageSize = 1<<31 - 1
	maxPerftestQueuePairs  = 16384
	maxGIDIndex            = 255
)

func (l *loader) decodePerftest(f field, p *Perftest) {
	l.object(f, l.perftestFields(p))
}

// maxIncastSenders bounds an incast: past a few senders the switch port is no more
// oversubscribed in any way that matters, while every sender is one more node loaded.
const maxIncastSenders = 16

func (l *loader) decodeIncast(f field, in *Incast) {
	handlers := l.perftestFields(&in.Perftest)
	handlers["senders"] = func(f field) {
		if n, ok := l.integer(f); ok {
			if n < 2 || n > maxIncastSenders {
				l.errorAt(f.node, f.path, "%d must be 2–%d: an incast needs at least two senders to oversubscribe the receiver's switch port", n, maxIncastSenders)
				return
			}
			in.Senders = n
		}
	}
	l.object(f, handlers)
}

func (l *loader) perftestFields(p *Perftest) fieldHandlers {
	handlers := l.scheduleFields(&p.Schedule)
	maps.Copy(handlers, fieldHandlers{
		"command": func(f field) { p.Command, _ = l.executable(f) },
		"duration": func(f field) {
			if d, ok := l.duration(f, false); ok {
				if d%time.Second != 0 {
					l.errorAt(f.node, f.path, "%v is not a whole number of seconds, which is all perftest's -D takes", d)
					return
				}
				p.Duration = d
			}
		},
		"message_size": func(f field) {
			if size, ok := l.size(f); ok {
				if size > maxPerftestMessageSize {
					l.errorAt(f.node, f.path, "%v is above perftest's limit of %d bytes", size, maxPerftestMessageSize)
					return
				}
				p.MessageSize = size
			}
		},
		"queue_pairs": func(f field) {
			if n, ok := l.integer(f); ok {
				if n < 1 || n > maxPerftestQueuePairs {
					l.errorAt(f.node, f.path, "%d is outside perftest's range 1–%d", n, maxPerftestQueuePairs)
					return
				}
				p.QueuePairs = n
			}
		},
		"gid_index": func(f field) {
			if index, ok := l.integer(f); ok {
				if index < 0 || index > maxGIDIndex {
					l.errorAt(f.node, f.path, "%d is outside 0–%d; leave the key out to let perftest pick the RoCE v2 GID itself", index, maxGIDIndex)
					return
				}
				p.GIDIndex = &index
			}
		},
		"port_range": func(f field) { p.PortRange, _ = l.portRange(f) },
		"use_cuda":   func(f field) { p.UseCUDA, _ = l.boolean(f) },
		"extra_args": func(f field) { p.ExtraArgs = l.extraArgs(f, perftestOwnedFlags, perftestTable) },
	})
	return handlers
}

func (l *loader) portRange(f field) (PortRange, bool) {
	s, ok := l.text(f)
	if !ok {
		return PortRange{}, false
	}
	firstText, lastText, isRange := strings.Cut(s, "-")
	first, firstErr := strconv.ParseUint(strings.TrimSpace(firstText), 10, 16)
	last, lastErr := strconv.ParseUint(strings.TrimSpace(lastText), 10, 16)
	switch {
	case !isRange || firstErr != nil || lastErr != nil:
		l.errorAt(f.node, f.path, "%q is not a port range such as 18515-18530", s)
	case first == 0 || last < first:
		l.errorAt(f.node, f.path, "%q must run from a lower to a higher port, both within 1–65535", s)
	default:
		return PortRange{First: uint16(first), Last: uint16(last)}, true
	}
	return PortRange{}, false
}

func (l *loader) decodeNCCL(f field, n *NCCL) {
	handlers := l.scheduleFields(&n.Schedule)
	maps.Copy(handlers, fieldHandlers{
		"leader":  func(f field) { n.Leader, _ = l.text(f) },
		"mpirun":  func(f field) { n.MPIRun, _ = l.executable(f) },
		"command": func(f field) { n.Command, _ = l.executable(f) },
		"gpus_per_node": func(f field) {
			if count, ok := l.integer(f); ok {
				if count < 1 {
					l.errorAt(f.node, f.path, "must be at least 1 (`nvidia-smi -L | wc -l` counts them)")
					return
				}
				if count > maxGPUsPerNode {
					l.errorAt(f.node, f.path, "%d is more than %d, the most GPUs the NVIDIA driver supports in one system; the probe would start that many MPI ranks on every node (`nvidia-smi -L | wc -l` counts them)", count, maxGPUsPerNode)
					return
				}
				n.GPUsPerNode = count
			}
		},
		"min_bytes":         func(f field) { n.MinBytes, _ = l.size(f) },
		"max_bytes":         func(f field) { n.MaxBytes, _ = l.size(f) },
		"nvidia_smi":        func(f field) { n.NVIDIASMI, _ = l.executable(f) },
		"extra_mpirun_args": func(f field) { n.ExtraMPIRunArgs = l.extraArgs(f, mpirunOwnedFlags, mpirun4Table, mpirun5Table) },
		"env":               func(f field) { n.Env = l.environment(f) },
		"node_env":          func(f field) { n.NodeEnv = l.nodeEnvironment(f) },
		"min_bus_bandwidth_gbytes": func(f field) {
			if floor, ok := l.number(f); ok {
				if floor <= 0 {
					l.errorAt(f.node, f.path, "must be above 0 GB/s; leave the key out for no floor")
					return
				}
				n.MinBusBandwidthGBps = floor
			}
		},
		"large_message_bytes": func(f field) { n.LargeMessageBytes, _ = l.size(f) },
		"group_size": func(f field) {
			if k, ok := l.integer(f); ok {
				if k == 1 || k < 0 || k > 1024 {
					l.errorAt(f.node, f.path, "%d must be 2–1024 (an NCCL group needs at least two nodes to cross the network), or 0 to run no groups", k)
					return
				}
				n.GroupSize = k
			}
		},
	})
	l.object(f, handlers)
}

// nodeEnvironment reads node name: {NAME: value} pairs; the plan's nodes are checked
// once they are all known (validateProbes).
func (l *loader) nodeEnvironment(f field) map[string]map[string]string {
	out := map[string]map[string]string{}
	if !l.mapping(f) {
		return out
	}
	for i := 0; i+1 < len(f.node.Content); i += 2 {
		keyNode, valueNode := f.node.Content[i], f.node.Content[i+1]
		if keyNode.Kind != yaml.ScalarNode {
			l.errorAt(keyNode, f.path, "keys must be node names, not %s", describe(keyNode))
			continue
		}
		path := childPath(f.path, keyNode.Value)
		if _, dup := out[keyNode.Value]; dup {
			l.errorAt(keyNode, path, "is set twice; keep one")
			continue
		}
		if !l.spend(valueNode, path) {
			return out
		}
		value := l.resolve(valueNode, path)
		if value == nil || isNull(value) {
			continue
		}
		l.written[path] = position{keyNode.Line, keyNode.Column}
		out[keyNode.Value] = l.environment(field{path, value})
	}
	return out
}

// maxGPUsPerNode is NV_MAX_DEVICES, "the maximum number of GPUs supported in a single
// system" in the NVIDIA driver (open-gpu-kernel-modules, src/common/sdk/nvidia/inc/
// nvlimits.h). GPU servers ship with 4 to 16; the bound catches a typo like 100000, which
// mpirun would turn into 100,000 ranks per node.
const maxGPUsPerNode = 32

func (l *loader) decodePing(f field, p *Ping) {
	handlers := l.scheduleFields(&p.Schedule)
	handlers["count"] = func(f field) {
		if count, ok := l.integer(f); ok {
			if count < 1 {
				l.errorAt(f.node, f.path, "must be at least 1")
				return
			}
			p.Count = count
		}
	}
	l.object(f, handlers)
}
