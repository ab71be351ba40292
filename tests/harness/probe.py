#!/usr/bin/env python3
"""probe.py PROTO ADDR PORT [SOURCE] -- one connection from the current
network namespace; prints "connected", "reply" (UDP), "timeout", or the
errno name (EHOSTUNREACH for ICMP admin-prohibited)."""
import errno, socket, sys
proto, addr, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
kind = socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM
s = socket.socket(socket.AF_INET, kind)
s.settimeout(2)
try:
    if len(sys.argv) > 4:
        s.bind((sys.argv[4], 0))
    s.connect((addr, port))
    if proto == "tcp":
        print("connected")
    else:
        # A datagram or its answer can be late on a loaded machine (the
        # echo server forks per datagram): ask again, up to 20 s.  A
        # refusal still comes back at once, as an error from recv.
        for attempt in range(10):
            s.send(b"ping\n")
            try:
                s.recv(100)
                break
            except socket.timeout:
                if attempt == 9:
                    raise
        print("reply")
except socket.timeout:
    print("timeout")
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e.errno)))
