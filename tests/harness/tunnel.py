#!/usr/bin/env python3
"""tunnel.py -- one CONNECT tunnel through the proxy, kept open, used on
demand (runs inside a test guest namespace only).

  tunnel.py PROXY_ADDR PORT TARGET HOST STATUS [--for S] [--tls CAFILE]

Connects to the proxy, writes "connected" to STATUS as soon as the TCP
handshake is done, asks CONNECT TARGET and appends "200" or "refused"
to STATUS.  Then, for each file STATUS.go-N (N = 1, 2, ...) that
appears, sends one GET /small for HOST through the same tunnel and appends
"ok N" (a whole 200 came back) or "closed N" (the tunnel is gone).
Stops after "closed", when STATUS.stop appears, or after --for seconds
(default 120).  With --tls, the requests go inside TLS to HOST, trusting
CAFILE (the proxy's CA, when it intercepts).  Every wait is bounded.
"""
import os
import socket
import ssl
import sys
import time


def note(path, line):
    with open(path, "a") as f:
        f.write(line + "\n")


def response(s, deadline):
    buf = b""
    while time.time() < deadline:
        s.settimeout(max(0.1, deadline - time.time()))
        try:
            d = s.recv(65536)
        except (socket.timeout, OSError):
            return b""
        if not d:
            return b""
        buf += d
        h = buf.find(b"\r\n\r\n")
        if h < 0:
            continue
        head = buf[:h].lower().split(b"\r\n")
        for line in head:
            if line.startswith(b"content-length:"):
                if len(buf) >= h + 4 + int(line.split(b":")[1]):
                    return buf
                break
            # chunked: the whole body, so that none of it is left to be
            # read as the start of the next response
            if line.startswith(b"transfer-encoding:") and b"chunked" in line:
                if buf.endswith(b"\r\n0\r\n\r\n") or buf[h + 4:].startswith(b"0\r\n\r\n"):
                    return buf
                break
        else:
            return buf
    return b""


def main():
    addr, port, target, host, status = sys.argv[1:6]
    opts = dict(zip(sys.argv[6::2], sys.argv[7::2]))
    life = float(opts.get("--for", 120))
    end = time.time() + life
    s = socket.create_connection((addr, int(port)), timeout=30)
    note(status, "connected")
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" %
               (target, target)).encode())
    r = response(s, time.time() + 60)
    note(status, "200" if r.startswith(b"HTTP/1.1 200") else "refused")
    if "--tls" in opts and r.startswith(b"HTTP/1.1 200"):
        ctx = ssl.create_default_context(cafile=opts["--tls"])
        s = ctx.wrap_socket(s, server_hostname=host)
    n = 1
    while time.time() < end and not os.path.exists(status + ".stop"):
        if not os.path.exists("%s.go-%d" % (status, n)):
            time.sleep(0.05)
            continue
        try:
            s.sendall(("GET /small HTTP/1.1\r\nHost: %s\r\n\r\n" % host).encode())
            r = response(s, time.time() + 20)
        except OSError:
            r = b""
        note(status, ("ok %d" if r.startswith(b"HTTP/1.") and b" 200 " in
                      r.split(b"\r\n")[0] else "closed %d") % n)
        if not r:
            return
        n += 1
    s.close()


if __name__ == "__main__":
    main()
