#!/usr/bin/env python3
"""conn-hog.py -- a hostile client that keeps a listener's slots taken.

  conn-hog.py ADDR PORT N --src A[,B...] --for S --status FILE

Runs inside a test namespace only.  Keeps N silent TCP connections open
to ADDR:PORT, from the source addresses given in turn (each must be an
address of the namespace), and opens a new one as soon as the server
closes one, for S seconds.  Writes "up K" to FILE once the first N have
been tried, then at the end "opened O closed C open K", where C counts
the connections the server closed.
"""
import argparse
import socket
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("addr")
    ap.add_argument("port", type=int)
    ap.add_argument("n", type=int)
    ap.add_argument("--src", required=True)
    ap.add_argument("--for", dest="duration", type=float, default=20)
    ap.add_argument("--status", required=True)
    a = ap.parse_args()
    srcs = a.src.split(",")
    end = time.time() + a.duration
    conns, opened, closed, told = [], 0, 0, False
    while time.time() < end:
        while len(conns) < a.n and time.time() < end:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((srcs[opened % len(srcs)], 0))
            opened += 1
            s.settimeout(0.2)
            try:
                s.connect((a.addr, a.port))
            except OSError:
                s.close()
                closed += 1
                continue
            s.setblocking(False)
            conns.append(s)
        if not told:
            with open(a.status, "w") as f:
                f.write("up %d\n" % len(conns))
            told = True
        time.sleep(0.005)
        alive = []
        for s in conns:
            try:
                if s.recv(4096) == b"":
                    s.close()
                    closed += 1
                    continue
            except BlockingIOError:
                pass
            except OSError:
                s.close()
                closed += 1
                continue
            alive.append(s)
        conns = alive
    with open(a.status, "a") as f:
        f.write("opened %d closed %d open %d\n" % (opened, closed, len(conns)))


if __name__ == "__main__":
    main()
