#!/usr/bin/env python3
"""ha-watch.py -- what a guest sees while a gateway pair fails over.

  ha-watch.py --for S --out FILE [--ready FILE]
              [--stream NAME=ADDR:PORT]... [--dns SERVER] [--connect ADDR:PORT]
              [--forbid ADDR:PORT]...

Runs inside a test guest namespace only, for S seconds, and writes one
JSON object to FILE at the end:
  stream NAME: a long download (an HTTP/1.0 GET, then reading): its
      outcome ("running" at the end, "eof", "reset", "stalled" after 20 s
      without a byte), bytes, the longest gap between two reads, and
      for one still running, the time since its last byte (idle_at_end);
  dns: a query for pypi.org A every 100 ms (0.3 s time-out): answered,
      failed, and the longest time between two answers;
  connect: a new TCP connection every 100 ms (0.3 s time-out), the same;
  forbid ADDR:PORT: a connection attempt every 100 ms (0.1 s time-out)
      to what must stay refused: how many connected (must be 0).
--ready is written once every stream has its first bytes and DNS (if
asked) has answered once.
"""
import argparse
import json
import random
import socket
import struct
import threading
import time

T0 = time.monotonic()
STOP = threading.Event()
res = {}
lock = threading.Lock()


def now():
    return time.monotonic() - T0


def stream(name, addr, port, first):
    r = {"outcome": "running", "bytes": 0, "max_gap": 0.0, "start": now()}
    res["stream " + name] = r
    try:
        s = socket.create_connection((addr, port), timeout=5)
        s.sendall(b"GET / HTTP/1.0\r\nHost: %s\r\n\r\n" % addr.encode())
        s.settimeout(0.5)
        last = None
        while not STOP.is_set():
            try:
                d = s.recv(65536)
            except socket.timeout:
                if last is not None and now() - last > 20:
                    r["outcome"] = "stalled"
                    break
                continue
            t = now()
            if not d:
                r["outcome"] = "eof"
                break
            if last is None:
                first.set()
            else:
                r["max_gap"] = max(r["max_gap"], t - last)
            last = t
            r["bytes"] += len(d)
        if last is not None and r["outcome"] == "running":
            r["max_gap"] = max(r["max_gap"], now() - last)
            r["idle_at_end"] = now() - last
        s.close()
    except ConnectionResetError:
        r["outcome"] = "reset"
    except OSError as e:
        r["outcome"] = "error " + e.__class__.__name__
    r["end"] = now()
    first.set()


def dns_query(server):
    qid = random.randrange(65536)
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    q += b"".join(bytes([len(p)]) + p for p in (b"pypi", b"org")) + b"\0"
    q += struct.pack(">HH", 1, 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(0.3)
    try:
        s.sendto(q, (server, 53))
        end = time.monotonic() + 0.3
        while time.monotonic() < end:
            d = s.recv(512)
            if len(d) >= 12 and struct.unpack(">H", d[:2])[0] == qid:
                return (d[3] & 0xF) == 0 and struct.unpack(">H", d[6:8])[0] > 0
    except OSError:
        return False
    finally:
        s.close()
    return False


def tcp_ok(addr, port, timeout):
    try:
        socket.create_connection((addr, port), timeout=timeout).close()
        return True
    except OSError:
        return False


def repeat(key, fn, ready=None):
    r = {"ok": 0, "failed": 0, "max_gap": 0.0}
    res[key] = r
    last = None
    while not STOP.is_set():
        t = now()
        if fn():
            r["ok"] += 1
            if last is not None:
                r["max_gap"] = max(r["max_gap"], t - last)
            last = t
            if ready is not None:
                ready.set()
        else:
            r["failed"] += 1
        time.sleep(max(0, 0.1 - (now() - t)))
    if last is not None:
        r["max_gap"] = max(r["max_gap"], now() - last)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--for", dest="secs", type=float, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--ready")
    ap.add_argument("--stream", action="append", default=[])
    ap.add_argument("--dns")
    ap.add_argument("--connect")
    ap.add_argument("--forbid", action="append", default=[])
    a = ap.parse_args()
    th, waits = [], []
    for spec in a.stream:
        name, hp = spec.split("=", 1)
        h, p = hp.rsplit(":", 1)
        ev = threading.Event()
        waits.append(ev)
        th.append(threading.Thread(target=stream, args=(name, h, int(p), ev)))
    if a.dns:
        ev = threading.Event()
        waits.append(ev)
        th.append(threading.Thread(target=repeat, args=(
            "dns", lambda: dns_query(a.dns), ev)))
    if a.connect:
        h, p = a.connect.rsplit(":", 1)
        th.append(threading.Thread(target=repeat, args=(
            "connect", lambda h=h, p=int(p): tcp_ok(h, p, 0.3))))
    for spec in a.forbid:
        h, p = spec.rsplit(":", 1)
        th.append(threading.Thread(target=repeat, args=(
            "forbid " + spec, lambda h=h, p=int(p): tcp_ok(h, p, 0.1))))
    for t in th:
        t.daemon = True
        t.start()
    if a.ready:
        for ev in waits:
            ev.wait(a.secs)
        with open(a.ready, "w") as f:
            f.write("%.3f\n" % time.time())
    STOP.wait(max(0, a.secs - now()))
    STOP.set()
    for t in th:
        t.join(3)
    with open(a.out + ".tmp", "w") as f:
        json.dump(res, f, sort_keys=True)
    import os
    os.rename(a.out + ".tmp", a.out)


if __name__ == "__main__":
    main()
