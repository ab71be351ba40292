#!/usr/bin/env python3
"""refusal4.py PROTO ADDR PORT -- one IPv4 attempt from inside a test
guest namespace; prints what it met and how long it took: "connected" /
"reply", "timeout", or the errno name, and for udp the ICMP error behind
it as "icmp TYPE/CODE from ADDR" (3/13: communication administratively
prohibited).  The kernel reports an ICMP refusal and an address nobody
resolved alike, as EHOSTUNREACH: the time and the ICMP code tell them
apart.

tcp: a connect.  udp: a connected socket with IP_RECVERR sends one
datagram and waits for an answer; the ICMP error for it is reported at
once on the socket and read back from its error queue.  Every wait is
bounded (5 s)."""
import errno
import socket
import struct
import sys
import time

IP_RECVERR = 11
proto, addr, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
kind = socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM
s = socket.socket(socket.AF_INET, kind)
s.settimeout(5)
if proto == "udp":
    s.setsockopt(socket.IPPROTO_IP, IP_RECVERR, 1)
t0 = time.monotonic()
icmp = ""
try:
    s.connect((addr, port))
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
t = time.monotonic() - t0
if proto == "udp" and r not in ("reply", "timeout"):
    try:
        _, anc, _, _ = s.recvmsg(100, 512, socket.MSG_ERRQUEUE)
        for level, typ, data in anc:
            if level == socket.IPPROTO_IP and typ == IP_RECVERR:
                # struct sock_extended_err, then the offender's sockaddr_in
                _, origin, itype, code = struct.unpack_from("=IBBB", data)
                off = socket.inet_ntoa(data[16 + 4:16 + 8])
                icmp = " icmp %d/%d from %s" % (itype, code, off)
    except OSError:
        pass
print(r + icmp, "%.2f" % t)
