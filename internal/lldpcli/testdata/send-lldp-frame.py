#!/usr/bin/env python3
"""Sends LLDP frames on an interface as a switch port would: the mandatory
TLVs plus IEEE 802.1 (port VLAN ID, VLAN name) and IEEE 802.3 (MAC/PHY
configuration/status, maximum frame size) organisationally specific TLVs,
which lldpd on Linux does not send itself (it never sets its own MFS).
Used by record-json0-details.sh; run as root in the switch's namespace:

    send-lldp-frame.py IFACE SYSNAME PORTID MFS PVID VLAN[,VLAN...] MAU COUNT

MAU is the IANA MAU type number (137 = 400GBASE-DR4, 0 = no MAC/PHY TLV);
MFS 0 leaves out the maximum frame size TLV, PVID 0 the port VLAN ID TLV."""
import socket, struct, sys, time

def tlv(t, value):
    return struct.pack("!H", (t << 9) | len(value)) + value

def org(oui, subtype, value):
    return tlv(127, oui + bytes([subtype]) + value)

DOT1, DOT3 = b"\x00\x80\xc2", b"\x00\x12\x0f"

def main():
    iface, sysname, portid, mfs, pvid, vlans, mau, count = sys.argv[1:9]
    mfs, pvid, mau, count = int(mfs), int(pvid), int(mau), int(count)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    mac = s.getsockname()[4]
    pdu = tlv(1, b"\x04" + mac)                      # chassis ID: MAC
    pdu += tlv(2, b"\x05" + portid.encode())         # port ID: interface name
    pdu += tlv(3, struct.pack("!H", 120))            # TTL
    pdu += tlv(4, ("%s %s" % (sysname, portid)).encode())
    pdu += tlv(5, sysname.encode())
    pdu += tlv(7, struct.pack("!HH", 0x14, 0x14))    # capabilities: bridge, router
    if pvid:
        pdu += org(DOT1, 1, struct.pack("!H", pvid))
    for v in filter(None, vlans.split(",")):
        name = ("vlan%s" % v).encode()
        pdu += org(DOT1, 3, struct.pack("!HB", int(v), len(name)) + name)
    if mau:
        # autoneg supported and enabled, advertising 1000BASE-T full duplex
        pdu += org(DOT3, 1, struct.pack("!BHH", 0x03, 0x0001, mau))
    if mfs:
        pdu += org(DOT3, 4, struct.pack("!H", mfs))
    pdu += tlv(0, b"")
    frame = b"\x01\x80\xc2\x00\x00\x0e" + mac + b"\x88\xcc" + pdu
    for _ in range(count):
        s.send(frame)
        time.sleep(0.5)

main()
