#!/usr/bin/env python3
"""echo-flow.py -- one long-lived TCP flow to an echo server, used step by
step (runs inside a test guest namespace only).

  echo-flow.py ADDR PORT RESULT [--connect TARGET] GO-FILE...

Connects to ADDR:PORT (with --connect, a proxy: asks CONNECT TARGET
first and records its status), sends "one" and writes "before:[STATUS ]
ANSWER" to RESULT.  Then for each GO-FILE in turn, once it exists, sends
"stepK" and writes "afterK:ANSWER" ("closed" at the end of the stream,
"error NAME" when the flow is gone).  Every wait on the network is
bounded (5 s); the go-files are the test's to create.
"""
import os
import socket
import sys
import time


def main():
    args = sys.argv[1:]
    addr, port, res = args[0], int(args[1]), args[2]
    target, gos = None, args[3:]
    if gos[:1] == ["--connect"]:
        target, gos = gos[1], gos[2:]
    out = open(res, "w", buffering=1)
    s = socket.create_connection((addr, port), timeout=5)
    status = ""
    if target:
        s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" %
                   (target, target)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            d = s.recv(1)
            if not d:
                break
            head += d
        status = head.split(b" ")[1].decode() + " " if b" " in head else "- "
    s.sendall(b"one\n")
    out.write("before:%s%s\n" % (status, s.recv(100).decode().strip()))
    for i, go in enumerate(gos):
        while not os.path.exists(go):
            time.sleep(0.05)
        try:
            s.settimeout(5)
            s.sendall(b"step%d\n" % i)
            d = s.recv(100)
            out.write("after%d:%s\n" % (i, d.decode().strip() or "closed"))
        except Exception as e:
            out.write("after%d:error %s\n" % (i, type(e).__name__))
            break


if __name__ == "__main__":
    main()
