#!/usr/bin/env python3
"""tunnel-load.py -- CONNECT tunnels through the proxy to an echo server,
driven one way per mode (runs inside a test guest namespace only).

  tunnel-load.py GW TARGET echo N BYTES   N tunnels at once, each sends
      BYTES of its own random data and reads them back; prints how many
      came back intact
  tunnel-load.py GW TARGET pingpong N     one tunnel, N round trips of 99
      bytes, one at a time; prints "ok" and the tunnel's head length
  tunnel-load.py GW TARGET halfclose BYTES  sends BYTES, shuts its sending
      side down, reads to the end; prints "intact" or what came back
  tunnel-load.py GW TARGET halfclose-many N AT_ONCE BYTES  N tunnels, AT_ONCE
      open at a time; each sends BYTES while it reads the echo, shuts its
      sending side down once all is sent (the server is still echoing) and
      reads to the end; prints how many came back intact, then one line per
      stream that did not: "short GOT of BYTES", "doubled N at OFFSET" (whole
      but for N bytes given twice in a row) or "wrong at OFFSET"

Every wait on the network is bounded (20 s).
"""
import os
import selectors
import socket
import sys


def tunnel(gw, target):
    s = socket.create_connection((gw, 3128), timeout=20)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    req = b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % ((target.encode(),) * 2)
    s.sendall(req)
    head = b""
    while b"\r\n\r\n" not in head:
        d = s.recv(1)
        if not d:
            sys.exit("refused")
        head += d
    if not head.startswith(b"HTTP/1.1 200"):
        sys.exit("answer %r" % head)
    return s, len(req), len(head)


def echo(gw, target, n, size):
    sel = selectors.DefaultSelector()
    st = {}
    for _ in range(n):
        s = tunnel(gw, target)[0]
        s.setblocking(False)
        st[s] = [os.urandom(size), 0, bytearray()]
        sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
    good = 0
    while st:
        ev = sel.select(timeout=20)
        if not ev:
            break
        for key, m in ev:
            s = key.fileobj
            data, off, got = st[s]
            if m & selectors.EVENT_WRITE and off < len(data):
                st[s][1] += s.send(data[off:off + 65536])
                if st[s][1] == len(data):
                    sel.modify(s, selectors.EVENT_READ)
            if m & selectors.EVENT_READ:
                d = s.recv(262144)
                got += d
                if not d or len(got) >= len(data):
                    good += got == data
                    sel.unregister(s)
                    s.close()
                    del st[s]
    print(good)


def pingpong(gw, target, n):
    s, req, head = tunnel(gw, target)
    for i in range(n):
        msg = b"%099d" % i
        s.sendall(msg)
        got = b""
        while len(got) < len(msg):
            d = s.recv(len(msg) - len(got))
            if not d:
                sys.exit("closed at %d" % i)
            got += d
        if got != msg:
            sys.exit("wrong answer at %d" % i)
    s.close()
    print("ok %d %d" % (req, head))


def halfclose(gw, target, size):
    s = tunnel(gw, target)[0]
    data = os.urandom(size)
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    got = bytearray()
    while True:
        d = s.recv(262144)
        if not d:
            break
        got += d
    print("intact" if got == data else "%d of %d bytes" % (len(got), size))


def halfclose_many(gw, target, n, at_once, size):
    sel = selectors.DefaultSelector()
    st = {}
    started = good = 0
    bad = []

    def start():
        nonlocal started
        s = tunnel(gw, target)[0]
        s.setblocking(False)
        # not 0x16 first: the proxy would take it for a TLS ClientHello
        st[s] = [b"x" + os.urandom(size - 1), 0, bytearray()]
        sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
        started += 1

    def end(s):
        nonlocal good
        data, _, got = st.pop(s)
        sel.unregister(s)
        s.close()
        if got == data:
            good += 1
        elif len(got) < len(data) and data.startswith(got):
            bad.append("short %d of %d" % (len(got), len(data)))
        else:
            k = next((i for i in range(min(len(got), len(data)))
                      if got[i] != data[i]), min(len(got), len(data)))
            d = len(got) - len(data)
            # the stream whole but for a run of bytes given twice, the
            # second time right after the first
            if d > 0 and got[:k] + got[k + d:] == data and \
                    any(got[j:j + d] == got[j + d:j + 2 * d]
                        for j in range(max(0, k - d), k + 1)):
                bad.append("doubled %d at %d" % (d, k))
            else:
                bad.append("wrong at %d (%d of %d)" % (k, len(got), len(data)))

    while started < min(at_once, n):
        start()
    while st:
        ev = sel.select(timeout=20)
        if not ev:
            for s in list(st):
                end(s)
            break
        for key, m in ev:
            s = key.fileobj
            if s not in st:
                continue
            data, off, got = st[s]
            if m & selectors.EVENT_WRITE and off < len(data):
                try:
                    st[s][1] += s.send(data[off:off + 65536])
                except BlockingIOError:
                    pass
                except OSError:
                    end(s)
                    if started < n:
                        start()
                    continue
                if st[s][1] == len(data):
                    s.shutdown(socket.SHUT_WR)
                    sel.modify(s, selectors.EVENT_READ)
            if m & selectors.EVENT_READ:
                try:
                    d = s.recv(262144)
                except BlockingIOError:
                    continue
                except OSError:
                    d = b""
                got += d
                if not d:
                    end(s)
                    if started < n:
                        start()
    print(good)
    for b in bad:
        print(b)


def main():
    gw, target, mode = sys.argv[1:4]
    args = [int(a) for a in sys.argv[4:]]
    {"echo": echo, "pingpong": pingpong, "halfclose": halfclose,
     "halfclose-many": halfclose_many}[mode](
        gw, target, *args)


if __name__ == "__main__":
    main()
