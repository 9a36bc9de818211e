#!/bin/bash
# Records real `ip -j rule/route/neigh show` output of a host with two
# rails in one subnet, before and after the multi-NIC fixes. Run as root:
# ./record-ip-json.sh OUTDIR
#
#   host namespace: rail0 10.226.0.11/24, rail1 10.226.0.12/24
#   peer namespace: peer0 10.226.0.21/24, peer1 10.226.0.22/24
#   (veth pairs rail0-peer0 and rail1-peer1, like two NICs cabled to one
#   subnet; the peer stands for another node's two rails)
set -eu
out=${1:?output directory}
cd "$out"
h=roce-h26rec-host; p=roce-h26rec-peer
cleanup() { ip netns del $h 2>/dev/null || true; ip netns del $p 2>/dev/null || true; }
trap cleanup EXIT
ip netns add $h; ip netns add $p
for i in 0 1; do
  ip link add rail$i netns $h type veth peer name peer$i netns $p
  ip -n $h link set rail$i up; ip -n $p link set peer$i up
  ip -n $h addr add 10.226.0.$((11+i))/24 dev rail$i
  ip -n $p addr add 10.226.0.$((21+i))/24 dev peer$i
done
ip -n $h link set lo up; ip -n $p link set lo up
# default sysctls, no policy routing: the ARP flux
ip netns exec $h ping -c1 -W1 -I 10.226.0.11 10.226.0.21 >/dev/null || true
ip netns exec $h ping -c1 -W1 -I 10.226.0.12 10.226.0.22 >/dev/null || true
ip -n $h -j rule show > ip-rule-default.json
ip -n $h -j route show table all > ip-route-default.json
ip -n $h -j neigh show > ip-neigh-arp-flux.json
# the fixes
for ns in $h $p; do ip netns exec $ns sysctl -qw net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2 net.ipv4.conf.all.rp_filter=2; done
ip -n $h neigh flush all; ip -n $p neigh flush all
for i in 0 1; do
  ip -n $h rule add from 10.226.0.$((11+i)) table $((101+i)) priority $((1001+i))
  ip -n $h route add 10.226.0.0/24 dev rail$i src 10.226.0.$((11+i)) table $((101+i))
done
ip netns exec $h ping -c1 -W1 -I 10.226.0.11 10.226.0.21 >/dev/null || true
ip netns exec $h ping -c1 -W1 -I 10.226.0.12 10.226.0.22 >/dev/null || true
ip netns exec $h ping -c1 -W1 -I 10.226.0.11 10.226.0.99 >/dev/null || true
ip -n $h -j rule show > ip-rule-per-rail.json
ip -n $h -j route show table all > ip-route-per-rail.json
ip -n $h -j neigh show > ip-neigh-per-rail.json
