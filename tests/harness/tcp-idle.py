#!/usr/bin/env python3
"""tcp-idle.py -- open N TCP connections, hold them idle, close them.

  tcp-idle.py FLAG ADDR:PORT [ADDR:PORT ...]

Runs inside a test guest namespace only.  Opens one connection to each
ADDR:PORT given, prints "up N" once all are open, holds them while the
file FLAG exists (60 s at most), then closes them all and exits.
"""
import os
import socket
import sys
import time

flag, peers = sys.argv[1], sys.argv[2:]
conns = []
for p in peers:
    addr, port = p.rsplit(":", 1)
    conns.append(socket.create_connection((addr, int(port)), timeout=5))
print("up %d" % len(conns), flush=True)
end = time.monotonic() + 60
while os.path.exists(flag) and time.monotonic() < end:
    time.sleep(0.05)
for c in conns:
    c.close()
