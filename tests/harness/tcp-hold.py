#!/usr/bin/env python3
"""tcp-hold.py -- open many TCP connections to one server and hold them.

  tcp-hold.py ADDR PORT N --first BYTES --trickle BYTE --status FILE
              [--for S]

Runs inside a test guest namespace only.  Opens N connections, sends
--first (backslash escapes allowed) on each, then one --trickle byte a
second on each still open, so an idle timer that restarts on every byte
never fires.  A connection the server closes within --early seconds
(default 2) of its own connect counts as refused, a later close as cut;
cut times are from each connection's connect.  Once
no connection has closed for 1.5 s (or 10 s have passed) it writes
"held K" to FILE; at the end (all closed, or --for seconds) it appends
"refused R cut C open O first-cut T last-cut T".
"""
import argparse
import select
import socket
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("addr")
    ap.add_argument("port", type=int)
    ap.add_argument("n", type=int)
    ap.add_argument("--first", default="")
    ap.add_argument("--trickle", default="a")
    ap.add_argument("--status", required=True)
    ap.add_argument("--for", dest="duration", type=float, default=40)
    ap.add_argument("--early", type=float, default=2)
    a = ap.parse_args()
    first = a.first.encode().decode("unicode_escape").encode("latin-1")
    start = time.time()
    born, open_, closed = {}, set(), {}

    def reap(wait):
        """Record the closes that have arrived; True if any did."""
        if not open_:
            return False
        r, _, _ = select.select(list(open_), [], [], wait)
        for s in r:
            try:
                d = s.recv(4096)
            except OSError:
                d = b""
            if not d:
                closed[s] = time.time() - born[s]
                open_.discard(s)
        return bool(r)

    for _ in range(a.n):
        try:
            s = socket.create_connection((a.addr, a.port), timeout=5)
            born[s] = time.time()
            s.sendall(first)
            s.setblocking(False)
            open_.add(s)
        except OSError:
            pass
        # Closes are timed as they come, also while the rest are still
        # being opened: on a loaded machine opening all N can take longer
        # than --early, and a refusal must not be read as a late cut.
        reap(0)
    last_change, reported, last_trickle = time.time(), False, time.time()
    while open_ and time.time() - start < a.duration:
        if reap(0.2):
            last_change = time.time()
        now = time.time()
        if not reported and (now - last_change > 1.5 or now - start > 10):
            with open(a.status, "w") as f:
                f.write("held %d\n" % len(open_))
            reported = True
        if now - last_trickle >= 1:
            last_trickle = now
            for s in list(open_):
                try:
                    s.send(a.trickle.encode())
                except OSError:
                    pass
    if not reported:
        with open(a.status, "w") as f:
            f.write("held %d\n" % len(open_))
    cuts = sorted(t for t in closed.values() if t >= a.early)
    refused = sum(1 for t in closed.values() if t < a.early)
    with open(a.status, "a") as f:
        f.write("refused %d cut %d open %d first-cut %.1f last-cut %.1f\n" % (
            refused, len(cuts), len(open_), cuts[0] if cuts else -1,
            cuts[-1] if cuts else -1))


if __name__ == "__main__":
    main()
