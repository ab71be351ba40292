#!/usr/bin/env python3
"""ra-send.py IFNAME [LIFETIME] -- send one router advertisement (no
options: a default router only, LIFETIME seconds, default 1800) to all
nodes (ff02::1) on IFNAME, as a homelab's router does.  Run inside a test
namespace; the kernel fills in the link-local source and the checksum."""
import socket
import struct
import sys

ifname = sys.argv[1]
lifetime = int(sys.argv[2]) if len(sys.argv) > 2 else 1800
s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, ifname.encode())
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
# type 134, code 0, checksum, cur hop limit, flags, router lifetime,
# reachable time, retrans timer
ra = struct.pack("!BBHBBHII", 134, 0, 0, 64, 0, lifetime, 0, 0)
s.sendto(ra, ("ff02::1", 0, 0, socket.if_nametoindex(ifname)))
