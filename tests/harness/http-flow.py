#!/usr/bin/env python3
"""http-flow.py -- one long-lived plain-HTTP connection through an explicit
proxy, used step by step (runs inside a test guest namespace only).

  http-flow.py PROXY PORT URL RESULT GO-FILE...

Connects to PROXY:PORT, sends "GET URL HTTP/1.1" (an absolute URI: the
proxy reads the request and forwards it) and writes "before:STATUS BODY"
to RESULT.  Then for each GO-FILE in turn, once it exists, sends the same
request on the same connection and writes "afterK:STATUS BODY" ("closed"
at the end of the stream, "error NAME" when the connection is gone).
Every wait on the network is bounded (5 s); the go-files are the test's
to create.
"""
import os
import socket
import sys
import time


def exchange(f, s, url, host):
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (url, host)).encode())
    line = f.readline()
    if not line:
        return "closed"
    n, chunked = 0, False
    while True:
        h = f.readline()
        if not h:
            return "closed"
        if h in (b"\r\n", b"\n"):
            break
        k, _, v = h.decode("latin-1").partition(":")
        if k.strip().lower() == "content-length":
            n = int(v)
        if k.strip().lower() == "transfer-encoding":
            chunked = "chunked" in v.lower()
    body = b""
    while chunked:
        size = int(f.readline().split(b";")[0], 16)
        body += f.read(size)
        f.readline()
        if size == 0:
            break
    if not chunked and n:
        body = f.read(n)
    return "%s %s" % (line.split()[1].decode(),
                      body.decode("latin-1").strip())


def main():
    addr, port, url, res = sys.argv[1], int(sys.argv[2]), sys.argv[3], \
        sys.argv[4]
    gos = sys.argv[5:]
    host = url.split("/")[2]
    out = open(res, "w", buffering=1)
    s = socket.create_connection((addr, port), timeout=5)
    f = s.makefile("rb")
    out.write("before:%s\n" % exchange(f, s, url, host))
    for i, go in enumerate(gos):
        while not os.path.exists(go):
            time.sleep(0.05)
        try:
            out.write("after%d:%s\n" % (i, exchange(f, s, url, host)))
        except Exception as e:
            out.write("after%d:error %s\n" % (i, type(e).__name__))
            break


if __name__ == "__main__":
    main()
