#!/usr/bin/env python3
"""refusal6.py PROTO ADDR PORT [IFNAME] -- one IPv6 attempt from inside a
test guest namespace; prints what it met and how long it took:
"connected" / "reply", "timeout", or the errno name (EACCES: ICMPv6
administratively prohibited; EHOSTUNREACH: no neighbour answered).

tcp: a connect.  udp: a connected socket sends one datagram and waits
for an answer; an ICMPv6 error for it is reported at once on the socket,
which makes udp the exact measure of how soon a refusal arrives (a TCP
connect in a veth namespace may see the first error while its own socket
is still locked, and then only at the next SYN, a second later).
IFNAME scopes a link-local ADDR.  Every wait is bounded (5 s)."""
import errno
import socket
import sys
import time

proto, addr, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
scope = socket.if_nametoindex(sys.argv[4]) if len(sys.argv) > 4 else 0
kind = socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM
s = socket.socket(socket.AF_INET6, kind)
s.settimeout(5)
t0 = time.monotonic()
try:
    s.connect((addr, port, 0, scope))
    if proto == "udp":
        s.send(b"x")
        s.recv(100)
        r = "reply"
    else:
        r = "connected"
except socket.timeout:
    r = "timeout"
except OSError as e:
    r = errno.errorcode.get(e.errno, str(e.errno))
print(r, "%.2f" % (time.monotonic() - t0))
