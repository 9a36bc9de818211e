#!/bin/bash
# Records real `lldpcli -f json0 show neighbors details` output from
# Debian's lldpd in network namespaces: what lldpd decodes from a switch
# port's IEEE 802.1 and 802.3 TLVs. Run as root: ./record-json0-details.sh OUTDIR
#
#   h1 <- s1: frames built by send-lldp-frame.py as a switch NOS sends them
#             (MFS 9216, PVID 100, VLANs 100 and 200, MAC/PHY 400GBASE-DR4)
#   h2 <- s2: the same switch, port at MFS 1518 in VLAN 10 only, 100GBASE-CR4
#   h4 <- s4: the same switch, port at MFS 9100 with a port VLAN ID (300)
#             but no VLAN name TLV, and no MAC/PHY TLV
#   h3 <- s3: lldpd itself on the switch side, as on Linux switch NOSes
#             that run it (SONiC, Cumulus): a MAC/PHY TLV from the port's
#             ethtool settings, no MFS (lldpd never sets its own), and no
#             VLAN (this kernel has no VLAN devices or VLAN-aware bridges)
set -eu
out=${1:?output directory}
here=$(cd "$(dirname "$0")" && pwd)
tag=rec$$
dir=$(mktemp -d /tmp/lldp-record-XXXXXX); chmod 755 "$dir"
sw=roce-$tag-sw; host=roce-$tag-host
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true
  for n in $sw $host; do ip netns del $n 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT
for n in $sw $host; do ip netns add $n; done
for i in 1 2 3 4; do
  ip link add s$i netns $sw type veth peer name h$i netns $host
  ip -n $sw link set s$i up; ip -n $host link set h$i up
done
printf 'configure lldp tx-interval 1\n' >"$dir/host.conf"
printf 'configure system hostname leaf-4\nconfigure lldp tx-interval 1\n' >"$dir/sw.conf"
ip netns exec $host lldpd -d -u "$dir/host.sock" -O "$dir/host.conf" -I h1,h2,h3,h4 >"$dir/host.log" 2>&1 & pids+=($!)
ip netns exec $sw lldpd -d -u "$dir/sw.sock" -O "$dir/sw.conf" -I s3 >"$dir/sw.log" 2>&1 & pids+=($!)
ip netns exec $sw python3 "$here/send-lldp-frame.py" s1 leaf-3 Ethernet12 9216 100 100,200 137 12 & pids+=($!)
ip netns exec $sw python3 "$here/send-lldp-frame.py" s2 leaf-3 Ethernet13 1518 10 10 98 12 & pids+=($!)
ip netns exec $sw python3 "$here/send-lldp-frame.py" s4 leaf-3 Ethernet14 9100 300 "" 0 12 & pids+=($!)
sleep 5
cli() { lldpcli -u "$dir/host.sock" "$@"; }
cli -f json0 show neighbors details ports h1,h2,h3,h4 >"$out/json0-details-dot1-dot3.json"
cli -f json0 show neighbors ports h1 >"$out/json0-no-details-dot1-dot3.json"
lldpd -v >"$out/.lldpd-version" 2>&1 || true
