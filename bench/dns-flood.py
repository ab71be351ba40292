#!/usr/bin/env python3
"""dns-flood.py -- send N queries for N unique names to a resolver, as fast
as the socket takes them, reading and discarding the answers; stop after N
or after --seconds.  For bench/refused-flood.sh, run inside a guest's
namespace against the test gateway only.

    dns-flood.py SERVER N [--seconds S] [--suffix flood.example]
"""
import argparse
import select
import socket
import struct
import time


def query(qid, name):
    head = struct.pack(">HHHHHH", qid & 0xFFFF, 0x0100, 1, 0, 0, 0)
    q = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    return head + q + struct.pack(">HH", 1, 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("server")
    ap.add_argument("n", type=int)
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--suffix", default="flood.example")
    a = ap.parse_args()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((a.server, 53))
    s.setblocking(False)
    sent = answered = 0
    end = time.monotonic() + a.seconds
    t0 = time.monotonic()
    while sent < a.n and time.monotonic() < end:
        try:
            s.send(query(sent, "f%d.%s" % (sent, a.suffix)))
            sent += 1
        except BlockingIOError:
            select.select([s], [s], [], 0.01)
        while True:
            try:
                s.recv(2048)
                answered += 1
            except BlockingIOError:
                break
    # the last answers
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        r, _, _ = select.select([s], [], [], 0.2)
        if not r:
            break
        try:
            while True:
                s.recv(2048)
                answered += 1
        except BlockingIOError:
            pass
    dt = time.monotonic() - t0
    print("sent %d unique names in %.1f s (%.0f/s), %d answered" %
          (sent, dt, sent / dt if dt else 0, answered))


if __name__ == "__main__":
    main()
