#!/usr/bin/env python3
"""dns-loop.py -- ask one name again and again, one query at a time, until
a stop file appears (or --count queries); print what came back as one line:
"queries N noerror N refused N nxdomain N servfail N timeout N other N".

  dns-loop.py --server 10.77.0.1 --name a.github.test --stop FILE

Run inside a guest's namespace (tests and benches only): it sends to the
server given and nowhere else.  A timeout is --timeout seconds without an
answer to that query; the loop then goes on with a new ID.
"""
import argparse
import os
import random
import socket
import struct
import sys
import time

RCODES = {0: "noerror", 2: "servfail", 3: "nxdomain", 5: "refused"}


def query(name, qid):
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.rstrip(".").split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\0" + struct.pack(">HH", 1, 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--stop", help="stop once this file exists")
    ap.add_argument("--count", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=2.0)
    ap.add_argument("--out", help="write the line here too")
    ap.add_argument("--interval", type=float, default=0.0,
                    help="seconds to wait after each answer")
    a = ap.parse_args()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((a.server, 53))
    n = {k: 0 for k in ("queries", "noerror", "refused", "nxdomain",
                        "servfail", "timeout", "other")}
    while True:
        if a.count and n["queries"] >= a.count:
            break
        if a.stop and os.path.exists(a.stop):
            break
        qid = random.randrange(65536)
        s.send(query(a.name, qid))
        n["queries"] += 1
        end = time.monotonic() + a.timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                n["timeout"] += 1
                break
            s.settimeout(left)
            try:
                r = s.recv(4096)
            except socket.timeout:
                n["timeout"] += 1
                break
            except OSError:
                n["other"] += 1
                time.sleep(0.01)
                break
            if len(r) < 12 or struct.unpack(">H", r[:2])[0] != qid:
                continue
            n[RCODES.get(r[3] & 0xF, "other")] += 1
            break
        if a.interval > 0:
            time.sleep(a.interval)
    line = " ".join("%s %d" % (k, v) for k, v in n.items())
    print(line)
    if a.out:
        with open(a.out, "w") as f:
            f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
