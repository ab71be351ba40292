#!/usr/bin/env python3
"""spoof-flood.py -- UDP datagrams, each from a different forged source.

  spoof-flood.py DST N [BASE [GO-FILE]]

Runs inside a test guest namespace only (raw socket, IP_HDRINCL).  Packet
i claims source BASE.(i/250).(i%250+1) (BASE default 10.99), so every
packet has its own source address; DST is where they are routed.  With
GO-FILE it waits (up to 60 s) for that file to exist before sending, so
that several guests can start together.
"""
import socket
import struct
import sys
import os
import time


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff)
    s += s >> 16
    return ~s & 0xffff


def main():
    dst, n = sys.argv[1], int(sys.argv[2])
    base = sys.argv[3] if len(sys.argv) > 3 else "10.99"
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_HDRINCL, 1)
    d = socket.inet_aton(dst)
    if len(sys.argv) > 4:
        end = time.time() + 60
        while not os.path.exists(sys.argv[4]) and time.time() < end:
            time.sleep(0.01)
    for i in range(n):
        src = socket.inet_aton("%s.%d.%d" % (base, i // 250, i % 250 + 1))
        udp = struct.pack("!HHHH", 40000, 5999, 9, 0) + b"x"
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i & 0xffff,
                         0, 64, socket.IPPROTO_UDP, 0, src, d)
        ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
        s.sendto(ip + udp, (dst, 0))


if __name__ == "__main__":
    main()
