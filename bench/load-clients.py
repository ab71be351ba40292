#!/usr/bin/env python3
"""load-clients.py -- many proxied connections from many sandboxes, from one
process (bench/load-bench.sh runs it).  For each network namespace given it
enters the namespace (setns), opens its sockets there and comes back, so
100 sandboxes cost one process.

  load-clients.py PROXY_PIDS PROXY_ADDR PORT IDLE_TARGET ACTIVE_URL
                  IDLE_PER_NS ACTIVE_PER_NS SECONDS NS...

Idle: IDLE_PER_NS CONNECT tunnels to IDLE_TARGET (host:port, plain HTTP)
per namespace, each answered 200, then one GET /small through it (so the
tunnel has carried bytes and is spliced), then left silent.  Active: ACTIVE_PER_NS keep-alive
connections per namespace sending absolute-URI GETs for ACTIVE_URL back to
back for SECONDS.  The proxy's RSS (summed over PROXY_PIDS, comma-separated: a pool
of workers) is read from /proc at the start, with
every idle tunnel open, and during the active load.  Prints one line of
key=value results.  Every wait is bounded; the whole run stops by itself
(SIGALRM) after SECONDS + 240 s at most.
"""
import ctypes
import os
import selectors
import signal
import socket
import sys
import time

CLONE_NEWNET = 0x40000000
libc = ctypes.CDLL(None, use_errno=True)


def rss_kb(pids):
    total = 0
    for pid in pids:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total


def fds(pids):
    """Descriptors each process holds: how the pool split the load."""
    return "/".join(str(len(os.listdir("/proc/%d/fd" % p))) for p in pids)


def enter(ns):
    fd = os.open("/run/netns/" + ns if "/" not in ns else ns, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns " + ns)
    finally:
        os.close(fd)


def open_batch(addr, n):
    """n non-blocking connects to the proxy from the current namespace."""
    out = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.connect_ex(addr)
        out.append(s)
    return out


def wait_answers(sel, socks, first, deadline, then=None):
    """Send each socket its first bytes once connected and wait for a 200;
    with then, send that through the tunnel and wait for its whole 200
    (the tunnel has carried bytes both ways and is spliced, then idle).
    Returns (ok, refused) counts."""
    state = {}
    second = set()
    for s in socks:
        sel.register(s, selectors.EVENT_WRITE)
        state[s] = b""
    ok = bad = 0
    while state and time.time() < deadline:
        for key, ev in sel.select(timeout=1):
            s = key.fileobj
            if ev & selectors.EVENT_WRITE:
                try:
                    s.send(first)
                    sel.modify(s, selectors.EVENT_READ)
                except OSError:
                    sel.unregister(s)
                    del state[s]
                    bad += 1
                continue
            try:
                d = s.recv(4096)
            except OSError:
                d = b""
            state[s] += d
            if not d or b"\r\n\r\n" in state[s] and \
                    (s not in second or response_complete(state[s])):
                good = state[s].startswith(b"HTTP/1.1 200") or \
                    state[s].startswith(b"HTTP/1.0 200")
                if good and d and then is not None and s not in second:
                    second.add(s)
                    state[s] = b""
                    s.send(then)
                    continue
                sel.unregister(s)
                ok += good
                bad += not good
                del state[s]
    for s in state:
        sel.unregister(s)
    return ok, bad + len(state)


def response_complete(buf):
    """Length of the first whole response in buf, or 0."""
    h = buf.find(b"\r\n\r\n")
    if h < 0:
        return 0
    head = buf[:h].lower()
    body = h + 4
    for line in head.split(b"\r\n"):
        if line.startswith(b"content-length:"):
            n = int(line.split(b":")[1])
            return body + n if len(buf) >= body + n else 0
    if b"chunked" in head:
        e = buf.find(b"\r\n0\r\n\r\n", body - 2)
        return e + 7 if e >= 0 else 0
    return 0


def main():
    (pid, paddr, port, target, url, nidle, nact, secs) = sys.argv[1:9]
    nses = sys.argv[9:]
    pid, port = [int(p) for p in pid.split(",")], int(port)
    nidle, nact, secs = int(nidle), int(nact), float(secs)
    signal.alarm(int(secs) + 240)
    addr = (paddr, port)
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    sel = selectors.DefaultSelector()
    r0 = rss_kb(pid)

    # Idle tunnels, a namespace at a time (a bounded burst of SYNs).
    connect = ("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" %
               (target, target)).encode()
    get = ("GET /small HTTP/1.1\r\nHost: %s\r\n\r\n" % target).encode()
    idle, iok, ibad = [], 0, 0
    t0 = time.time()
    for ns in nses:
        enter(ns)
        socks = open_batch(addr, nidle)
        libc.setns(home, CLONE_NEWNET)
        ok, bad = wait_answers(sel, socks, connect, time.time() + 60, get)
        iok += ok
        ibad += bad
        idle += socks
    t_idle = time.time() - t0
    time.sleep(2)
    r1 = rss_kb(pid)
    f1 = fds(pid)

    # Active keep-alive connections.
    host = url.split("/")[2]
    req = ("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (url, host)).encode()
    act = []
    for ns in nses:
        enter(ns)
        act += open_batch(addr, nact)
        libc.setns(home, CLONE_NEWNET)
    buf = {}
    for s in act:
        sel.register(s, selectors.EVENT_WRITE)
        buf[s] = b""
    done = errs = 0
    lat = []
    sent_at = {}
    end = time.time() + secs
    r2, f2 = 0, ""
    mid = time.time() + secs / 2
    while time.time() < end and buf:
        if r2 == 0 and time.time() >= mid:
            r2 = rss_kb(pid)
            f2 = fds(pid)
        for key, ev in sel.select(timeout=1):
            s = key.fileobj
            try:
                if ev & selectors.EVENT_WRITE:
                    s.send(req)
                    sent_at[s] = time.time()
                    sel.modify(s, selectors.EVENT_READ)
                    continue
                d = s.recv(65536)
            except OSError:
                d = b""
            if not d:
                errs += 1
                sel.unregister(s)
                del buf[s]
                continue
            buf[s] += d
            n = response_complete(buf[s])
            if n:
                if buf[s].startswith(b"HTTP/1.1 200"):
                    done += 1
                    lat.append(time.time() - sent_at[s])
                else:
                    errs += 1
                buf[s] = buf[s][n:]
                s.send(req)
                sent_at[s] = time.time()
    r2 = r2 or rss_kb(pid)
    f2 = f2 or fds(pid)
    lat.sort()
    p50 = lat[len(lat) // 2] * 1000 if lat else 0
    p99 = lat[int(len(lat) * 0.99)] * 1000 if lat else 0
    # Idle tunnels still open after the load (none was dropped)?
    alive = 0
    for s in idle:
        try:
            d = s.recv(1, socket.MSG_DONTWAIT | socket.MSG_PEEK)
            alive += 0 if d == b"" else 1
        except BlockingIOError:
            alive += 1
        except OSError:
            pass
    print("idle_ok=%d idle_refused=%d idle_open_s=%.1f idle_alive_after=%d "
          "active=%d active_req=%d active_err=%d req_s=%.0f p50_ms=%.2f "
          "p99_ms=%.2f rss0_kb=%d rss_idle_kb=%d rss_active_kb=%d "
          "fds_idle=%s fds_active=%s" %
          (iok, ibad, t_idle, alive, len(act), done, errs, done / secs,
           p50, p99, r0, r1, r2, f1, f2))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
