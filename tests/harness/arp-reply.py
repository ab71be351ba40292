#!/usr/bin/env python3
"""arp-reply.py IFNAME SPA COUNT SHA/THA... -- as a forger on the segment
would: for each SHA/THA pair in order, COUNT ARP replies at once on
IFNAME from sender SHA (also the frame's source) claiming SPA, addressed
to THA (also the frame's destination), target address 0.0.0.0 as in an
answer to an RFC 5227 probe.  All from one process, within milliseconds
of each other.  Raw frames, no library; run inside a test namespace
only."""
import socket
import struct
import sys

ifname, spa, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
mac = lambda m: bytes(int(x, 16) for x in m.split(":"))
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((ifname, 0))
for pair in sys.argv[4:]:
	sha, tha = pair.split("/")
	eth = mac(tha) + mac(sha) + struct.pack("!H", 0x0806)
	arp = struct.pack("!HHBBH", 1, 0x0800, 6, 4, 2) + mac(sha) + \
	    socket.inet_aton(spa) + mac(tha) + socket.inet_aton("0.0.0.0")
	for _ in range(count):
		s.send(eth + arp)
