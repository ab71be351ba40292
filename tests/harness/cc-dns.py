#!/usr/bin/env python3
"""cc-dns.py -- a tiny authoritative DNS stub for the containment tests.

Listens on UDP and TCP ADDR:PORT inside a test namespace and answers from
a static table given on the command line; nothing is ever forwarded.

  cc-dns.py ADDR [--port 53] [NAME=IP ...] [--refuse NAME ...]

NAME=IP adds an A (or AAAA) record; --refuse NAME answers REFUSED, as the
gateway's filtering resolver does for a name outside the allowlist; any
other name is NXDOMAIN.  Stops by itself after --lifetime seconds (300).
"""
import ipaddress
import socket
import struct
import sys
import threading
import time


def parse_args(argv):
    addr, port, zone, refuse, life = argv[0], 53, {}, set(), 300
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("--port", "--refuse", "--lifetime"):
            v = argv[i + 1]
            i += 2
            if a == "--port":
                port = int(v)
            elif a == "--lifetime":
                life = int(v)
            else:
                refuse.add(v.lower().rstrip("."))
            continue
        name, ip = a.split("=", 1)
        zone.setdefault(name.lower().rstrip("."), []).append(
            ipaddress.ip_address(ip))
        i += 1
    return addr, port, zone, refuse, life


def qname(msg, off):
    labels = []
    while True:
        n = msg[off]
        off += 1
        if n == 0:
            return ".".join(labels).lower(), off
        if n & 0xC0:
            raise ValueError("compressed question")
        labels.append(msg[off:off + n].decode("ascii", "replace"))
        off += n


def answer(msg, zone, refuse):
    if len(msg) < 12:
        return None
    qid, flags, qd = struct.unpack("!HHH", msg[:6])
    if qd != 1 or flags & 0x8000:
        return None
    name, off = qname(msg, 12)
    qtype, _ = struct.unpack("!HH", msg[off:off + 4])
    question = msg[12:off + 4]
    want = {1: 4, 28: 6}.get(qtype)
    rcode, rrs = 0, []
    if name in refuse:
        rcode = 5
    elif name in zone:
        rrs = [ip for ip in zone[name] if ip.version == want]
    elif name != "":
        rcode = 3
    head = struct.pack("!HHHHHH", qid, 0x8180 | rcode, 1, len(rrs), 0, 0)
    body = b"".join(struct.pack("!HHHIH", 0xC00C, qtype, 1, 60,
                                len(ip.packed)) + ip.packed for ip in rrs)
    return head + question + body


def serve_udp(sock, zone, refuse):
    while True:
        msg, peer = sock.recvfrom(4096)
        try:
            out = answer(msg, zone, refuse)
        except (ValueError, IndexError, struct.error):
            continue
        if out:
            sock.sendto(out, peer)


def serve_tcp_conn(conn, zone, refuse):
    with conn:
        conn.settimeout(3)
        try:
            n = struct.unpack("!H", conn.recv(2))[0]
            msg = b""
            while len(msg) < n:
                part = conn.recv(n - len(msg))
                if not part:
                    return
                msg += part
            out = answer(msg, zone, refuse)
            if out:
                conn.sendall(struct.pack("!H", len(out)) + out)
        except (OSError, ValueError, IndexError, struct.error):
            pass


def serve_tcp(sock, zone, refuse):
    while True:
        conn, _ = sock.accept()
        threading.Thread(target=serve_tcp_conn, args=(conn, zone, refuse),
                         daemon=True).start()


def main():
    addr, port, zone, refuse, life = parse_args(sys.argv[1:])
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    u = socket.socket(fam, socket.SOCK_DGRAM)
    u.bind((addr, port))
    t = socket.socket(fam, socket.SOCK_STREAM)
    t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    t.bind((addr, port))
    t.listen(64)
    threading.Thread(target=serve_udp, args=(u, zone, refuse),
                     daemon=True).start()
    threading.Thread(target=serve_tcp, args=(t, zone, refuse),
                     daemon=True).start()
    time.sleep(life)


if __name__ == "__main__":
    main()
