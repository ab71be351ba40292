#!/usr/bin/env python3
"""public-resolver.py -- stand-ins for the public resolvers (9.9.9.9, ...)
in a test's internet namespace, so that a guest's bypass probes meet
something real instead of silence.

  public-resolver.py --cert CRT --key KEY [--lifetime S] ADDR...

On every ADDR: DNS over UDP and TCP 53, DNS over TLS on 853, and on 443 an
HTTPS responder that answers RFC 8484 GET /dns-query?dns=... (and POST)
with a DNS message, anything else with a short text page.  The answers
come from cc-dns.py's table logic with an empty zone: NOERROR for the
root, NXDOMAIN for other names.  Stops by itself after --lifetime seconds
(300).  Run only inside a namespace of the test.
"""
import base64
import importlib.util
import os
import socket
import ssl
import struct
import sys
import threading
import time

_spec = importlib.util.spec_from_file_location(
    "cc_dns", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           "cc-dns.py"))
cc_dns = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cc_dns)


def answer(msg):
    try:
        return cc_dns.answer(msg, {}, set())
    except (ValueError, IndexError, struct.error):
        return None


def read_exact(conn, n):
    data = b""
    while len(data) < n:
        part = conn.recv(n - len(data))
        if not part:
            return None
        data += part
    return data


def serve_stream_dns(conn):
    """One length-prefixed DNS exchange (TCP 53 and DoT)."""
    with conn:
        try:
            conn.settimeout(3)
            head = read_exact(conn, 2)
            msg = head and read_exact(conn, struct.unpack("!H", head)[0])
            out = msg and answer(msg)
            if out:
                conn.sendall(struct.pack("!H", len(out)) + out)
        except (OSError, ValueError):
            pass


def http_reply(conn, status, ctype, body):
    conn.sendall(b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
                 b"Content-Length: %d\r\nConnection: close\r\n\r\n" %
                 (status, b"OK" if status == 200 else b"Bad Request",
                  ctype, len(body)) + body)


def serve_https(conn, addr):
    with conn:
        try:
            conn.settimeout(3)
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 8192:
                part = conn.recv(4096)
                if not part:
                    return
                head += part
            head, _, rest = head.partition(b"\r\n\r\n")
            line = head.split(b"\r\n")[0].split(b" ")
            msg = None
            if len(line) == 3 and line[1].startswith(b"/dns-query?dns="):
                q = line[1].split(b"=", 1)[1].split(b"&")[0]
                msg = base64.urlsafe_b64decode(q + b"=" * (-len(q) % 4))
            elif len(line) == 3 and line[0] == b"POST":
                clen = [int(h.split(b":", 1)[1]) for h in head.split(b"\r\n")
                        if h.lower().startswith(b"content-length:")]
                msg = rest + (read_exact(conn, clen[0] - len(rest)) or b"") \
                    if clen else rest
            out = answer(msg) if msg else None
            if out:
                http_reply(conn, 200, b"application/dns-message", out)
            elif msg is not None:
                http_reply(conn, 400, b"text/plain", b"bad DNS message\n")
            else:
                http_reply(conn, 200, b"text/plain",
                           b"public resolver stand-in %s\n" % addr.encode())
        except (OSError, ValueError, ssl.SSLError):
            pass


def serve_udp(sock):
    while True:
        msg, peer = sock.recvfrom(4096)
        out = answer(msg)
        if out:
            sock.sendto(out, peer)


def accept_loop(sock, tls, handler, *args):
    while True:
        conn, _ = sock.accept()
        threading.Thread(target=wrap_then, args=(conn, tls, handler) + args,
                         daemon=True).start()


def wrap_then(conn, tls, handler, *args):
    if tls is not None:
        try:
            conn.settimeout(3)
            conn = tls.wrap_socket(conn, server_side=True)
        except (OSError, ssl.SSLError):
            conn.close()
            return
    handler(conn, *args)


def listen(addr, port, kind):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, kind)
    if kind == socket.SOCK_STREAM:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    if kind == socket.SOCK_STREAM:
        s.listen(64)
    return s


def main(argv):
    cert = key = None
    life, addrs, i = 300, [], 0
    while i < len(argv):
        if argv[i] in ("--cert", "--key", "--lifetime"):
            v = argv[i + 1]
            if argv[i] == "--cert":
                cert = v
            elif argv[i] == "--key":
                key = v
            else:
                life = int(v)
            i += 2
        else:
            addrs.append(argv[i])
            i += 1
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    threads = []
    for a in addrs:
        threads += [
            (serve_udp, (listen(a, 53, socket.SOCK_DGRAM),)),
            (accept_loop, (listen(a, 53, socket.SOCK_STREAM), None,
                           serve_stream_dns)),
            (accept_loop, (listen(a, 853, socket.SOCK_STREAM), tls,
                           serve_stream_dns)),
            (accept_loop, (listen(a, 443, socket.SOCK_STREAM), tls,
                           serve_https, a)),
        ]
    for fn, args in threads:
        threading.Thread(target=fn, args=args, daemon=True).start()
    time.sleep(life)


if __name__ == "__main__":
    main(sys.argv[1:])
