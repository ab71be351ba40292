#!/usr/bin/env python3
"""arp-reply.py IFNAME SHA SPA THA [COUNT] -- send COUNT (default 1) ARP
replies at once on IFNAME, as a forger on the segment would: sender SHA
(also the frame's source) claims SPA, addressed to THA (also the frame's
destination), target address 0.0.0.0 as in an answer to an RFC 5227
probe.  Raw frames, no library; run inside a test namespace only."""
import socket
import struct
import sys

ifname, sha, spa, tha = sys.argv[1:5]
count = int(sys.argv[5]) if len(sys.argv) > 5 else 1
mac = lambda m: bytes(int(x, 16) for x in m.split(":"))
eth = mac(tha) + mac(sha) + struct.pack("!H", 0x0806)
arp = struct.pack("!HHBBH", 1, 0x0800, 6, 4, 2) + mac(sha) + \
    socket.inet_aton(spa) + mac(tha) + socket.inet_aton("0.0.0.0")
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((ifname, 0))
for _ in range(count):
	s.send(eth + arp)
