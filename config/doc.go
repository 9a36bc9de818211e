// Package config loads the cluster plan: the operator's IP plan written down as YAML,
// the expectations every node's RoCE or InfiniBand setup must meet, and the probe
// schedule. deploy/examples/cluster.yaml is a commented example of every key.
//
//	cluster: demo
//	networks:
//	  management: 10.0.0.0/24          # CIDR
//	  compute: 192.168.100.0/24        # CIDR, or a list of CIDRs (one per rail)
//	expectations:
//	  link_layer: Ethernet             # Ethernet | InfiniBand
//	  mtu: 9000
//	  roce_mode: v2                    # v1 | v2
//	  pfc_priority: 3                  # 0-7; absent = lossy RoCE, PFC checks skipped
//	  trust: dscp                      # dscp | pcp
//	  ecn: true
//	  roce_dscp: 26                    # 0-63; traffic class = dscp<<2 | ECT(0) = 106
//	  cnp_dscp: 48                     # 0-63
//	  vlan: 100                        # 1-4094; absent = VLAN not checked
//	  ib_service_level: 0              # InfiniBand only, 0-15 (NCCL_IB_SL)
//	  min_bandwidth_fraction: 0.9
//	  link_rate_gbps: 400
//	  firmware_consistent: true
//	  other_rdma_classes:              # Ethernet only; RDMA besides RoCE's, on its own priority
//	    - {name: storage, priority: 4} # name [A-Za-z0-9._-]{1,32}; priority 0-7, not pfc_priority
//	nodes:
//	  - name: node01
//	    management_ip: 10.0.0.11
//	    interfaces:                    # rail order
//	      - {netdev: ens1f0, rdma_device: mlx5_0, ip: 192.168.100.11/24}
//	probes:
//	  enabled: false
//	  state_dir: /var/lib/roce_exporter
//	  max_port_utilization: 0.1
//	  ib_write_bw:  {enabled, interval, timeout, jitter, command, duration, message_size,
//	                 queue_pairs, gid_index, port_range, extra_args}
//	  ib_write_lat: {same keys as ib_write_bw}
//	  nccl:         {enabled, interval, timeout, jitter, leader, mpirun, command,
//	                 gpus_per_node, min_bytes, max_bytes, nvidia_smi, large_message_bytes,
//	                 extra_mpirun_args, env, node_env, min_bus_bandwidth_gbytes}
//	  ping:         {enabled, interval, timeout, jitter, count}
//	  incast:       {the keys of ib_write_bw, senders}
//
// Parse reports every problem at once, each as file:line: field: message, and rejects
// unknown keys so that a typo cannot silently fall back to a default.
//
// Probe programs (command, mpirun) are started with an argv, never through a shell:
// they must be absolute paths, and arguments go in extra_args one per list entry, where
// quotes, pipes and $VARIABLES have no special meaning. The flags a runner sets itself
// (device, GID index, port, duration, size, queue pairs; mpirun's hosts and rank
// counts) are refused in the extra arguments, because both ends of a test must agree on
// them and the plan is where they come from; so are mpirun's ways to run something else
// (--app, a launch agent, a debugger) and a bare word (perftest's server, mpirun's
// program). The arguments are read as the programs read them (argv.go): with their own
// option tables, getopt_long's unambiguous prefixes (--tclas is --tclass) included.
//
// # Defaults
//
// Defaults fill in whatever a plan leaves out (a key that is absent or has no value).
// A value written in the file is never replaced, even when it equals the zero value
// (jitter: 0s, firmware_consistent: false). They are filled in after every value was
// checked on its own and before the checks between values, so that, for example, a
// timeout written without an interval is checked against the default interval.
//
//	expectations.link_layer              Ethernet
//	expectations.roce_mode               v2 (Ethernet only; NCCL and perftest use RoCE v2)
//	expectations.roce_dscp               26 (Ethernet only; the usual RoCE marking, AF31)
//	expectations.cnp_dscp                48 (Ethernet only; MLNX_OFED's roce_np/cnp_dscp)
//	expectations.min_bandwidth_fraction  0.9 (NVIDIA ngc_multinode_perf's pass mark; a
//	                                     healthy RoCE link reaches 96–98% of line rate)
//	expectations.firmware_consistent     true
//	probes.enabled                       false (probes load the fabric; opt in)
//	probes.state_dir                     /var/lib/roce_exporter
//	probes.max_port_utilization          0.1
//	probes.nic_test_interval             1h (every node tested on every rail once per
//	                                     interval; the pair probes' default interval; a
//	                                     round that holds no retest and witness test warns)
//	probes.max_fabric_share              1 (share of nodes under pair test at once; below 1
//	                                     the interval is split into rounds, see fleet.go)
//	probes.fresh_rounds                  3 (results older than this many intervals plus the
//	                                     timeout are dropped and not judged; at most a
//	                                     year, MaxFreshFor)
//	probes.ib_write_bw                   enabled, interval 1h, timeout 90s, jitter 10% of
//	                                     interval, command /usr/bin/ib_write_bw, duration
//	                                     10s, message_size 1048576, queue_pairs 4,
//	                                     port_range 18515-18530, gid_index auto
//	probes.ib_write_lat                  disabled, interval 1h, timeout 60s, jitter 10%,
//	                                     command /usr/bin/ib_write_lat, no duration
//	                                     (iteration mode, so percentiles are reported),
//	                                     message_size 2, queue_pairs 1,
//	                                     port_range 18531-18546, gid_index auto
//	probes.nccl                          disabled, interval 6h, timeout 15m, jitter 10%,
//	                                     mpirun /usr/bin/mpirun, min_bytes 8, max_bytes 8G
//	                                     or the largest power of two the smallest GPU holds
//	                                     by nccl-tests' rule (nvidia_smi /usr/bin/nvidia-smi),
//	                                     large_message_bytes 256M (the judged bus bandwidth
//	                                     is the best at or above it, else the largest size)
//	                                     group_size 2 (groups of nodes rotating every interval,
//	                                     each led by a member; leader adds a whole-cluster run)
//	                                     (command and gpus_per_node have no default)
//	probes.ping                          enabled, interval 1m, timeout 10s, jitter 10%, count 5
//	probes.incast                        disabled (it congests a switch port on purpose),
//	                                     interval 24h, timeout 60s, jitter 10%, senders 2,
//	                                     command /usr/bin/ib_write_bw, duration 10s,
//	                                     message_size 1048576, queue_pairs 4,
//	                                     port_range 18547-18578 (senders × rails on the
//	                                     receiver), gid_index auto; needs
//	                                     expectations.pfc_priority and senders+1 nodes;
//	                                     a round holds at least one group, so a
//	                                     max_fabric_share below senders+1 nodes warns
//
// message_size is 1 MiB rather than perftest's 65536 because 64 KiB messages on few
// queue pairs cannot fill a 400G port, so a healthy link would look slow.
//
// Requirements that matter only for a probe that runs (port_range large enough for the
// widest node, NCCL command and gpus_per_node, IPv4 management addresses for
// mpirun's -H) apply when both probes.enabled and the probe's own enabled are true, so a
// plan without probes never fails on them.
//
// # Limits
//
// A plan is a regular file of at most MaxPlanBytes (4 MiB). YAML aliases may add at most
// 250,000 values to those written out, which stops an alias bomb within a second. A
// failed plan reports its first 100 errors in file order and counts the rest.
package config
