#!/bin/bash
# Records real lldpcli output from Debian's lldpd in network namespaces.
# Run as root: ./record.sh OUTDIR
set -eu
out=${1:?output directory}
tag=rec$$
dir=$(mktemp -d /tmp/lldp-record-XXXXXX); chmod 755 "$dir"
sw=roce-$tag-sw; hostile=roce-$tag-hostile; host=roce-$tag-host
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true
  for n in $sw $hostile $host; do ip netns del $n 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT
for n in $sw $hostile $host; do ip netns add $n; done
pair() { ip link add "$2" netns "$1" type veth peer name "$3" netns $host
  ip -n "$1" link set "$2" up; ip -n $host link set "$3" up; }
pair $hostile x0 h0
for i in 1 2 3 4 5 6; do pair $sw s$i h$i; done
lldpd_in() { ip netns exec "$1" lldpd -d -u "$dir/$2.sock" -O "$dir/$2.conf" -I "$3" >"$dir/$2.log" 2>&1 & pids+=($!); }
printf 'configure lldp tx-interval 1\n' >"$dir/host.conf"
printf 'configure system hostname leaf-3\nconfigure lldp tx-interval 1\n' >"$dir/sw.conf"
printf 'configure lldp tx-interval 1\n' >"$dir/hostile.conf"
lldpd_in $sw sw s1,s2,s3,s4,s5,s6
lldpd_in $hostile hostile x0
lldpd_in $host host h0,h1,h2,h3,h4,h5,h6
sleep 1
cli() { local s=$1; shift; lldpcli -u "$dir/$s.sock" "$@"; }
# The hostile chassis: a system name that closes lldpd's -f json key and
# writes a neighbour of its own (lldpd up to 1.0.21 does not escape keys).
cli hostile configure system hostname 'spoofed-sw": {"id": {"type": "mac", "value": "02:00:00:00:00:99"}}}, "port": {"id": {"type": "local", "value": "Ethernet99"}}}}, {"zz": {"chassis": {"x'
cli hostile configure ports x0 lldp portidsubtype local Ethernet1 description 'hostile Ethernet1'
cli sw configure ports s1 lldp portidsubtype local Ethernet12 description 'leaf-3 Ethernet12 to gpu-07 rail 0'
cli sw configure ports s2 lldp portidsubtype local Ethernet13 description "$(printf 'first line\nsecond line')"
cli sw configure ports s3 lldp portidsubtype local Ethernet14 description "$(printf 'L%.0s' $(seq 300))"
cli sw configure ports s4 lldp portidsubtype local Ethernet15 description "$(printf '\xff%.0s' $(seq 90))"
cli sw configure ports s5 lldp portidsubtype local Ethernet16 description "$(printf 'unit\x1fseparator')"
sleep 4
cli host -f json0 show neighbors >"$out/json0-hostile-neighbors.json"
cli host -f json show neighbors >"$out/json-hostile-neighbors.json"
cli host -f json0 show neighbors ports h1 >"$out/json0-one-neighbor.json"
cli host -f json0 show neighbors ports h1,h6 >"$out/json0-two-neighbors.json"
cli host -f json0 show neighbors ports nonexist >"$out/json0-no-neighbor.json"
lldpd -v >"$out/.lldpd-version" 2>&1 || true
