#!/usr/bin/env python3
"""dns-upstream.py -- a small authoritative-ish DNS server for dnsd's tests.

Runs inside the test's "internet" namespace only (e.g. 203.0.113.53).
Serves a fixed zone of test names over UDP and TCP and appends one line
"QNAME QTYPE PROTO" per query to --log, so tests can count upstream
queries (cache hits do not reach it).

  dns-upstream.py --addr 203.0.113.53 --log FILE [--base 10]

--base changes the last octet of the "plain" answers so that a test can
tell two upstreams apart.  --answer-all ADDR answers an A query for any
name outside the zone with ADDR instead of NXDOMAIN (names a guest makes
up, such as hostile ones).
"""
import argparse
import socket
import socketserver
import struct
import sys
import threading

A, NS, CNAME, SOA, TXT, AAAA, HTTPS = 1, 2, 5, 6, 16, 28, 65


def name_wire(name):
    out = b""
    for label in name.rstrip(".").split("."):
        if label:
            out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def rr(name, rtype, ttl, rdata):
    return name_wire(name) + struct.pack("!HHIH", rtype, 1, ttl,
                                         len(rdata)) + rdata


def ipv4(s):
    return socket.inet_aton(s)


def ipv6(s):
    return socket.inet_pton(socket.AF_INET6, s)


def zone(base):
    pub = "203.0.113.%d" % base
    z = {
        ("pypi.org", A): [("pypi.org", A, 300, ipv4(pub))],
        ("files.pythonhosted.org", A): [
            ("files.pythonhosted.org", A, 300, ipv4(pub))],
        ("github.test", A): [("github.test", A, 300, ipv4("203.0.113.12"))],
        ("a.github.test", A): [("a.github.test", A, 300, ipv4(pub))],
        ("deep.x.github.test", A): [
            ("deep.x.github.test", A, 300, ipv4("203.0.113.11"))],
        ("denied.test", A): [("denied.test", A, 300, ipv4("203.0.113.20"))],
        ("open.test", A): [("open.test", A, 300, ipv4(pub))],
        # A CNAME chain that leaves the allowed zone.
        ("www.github.test", A): [
            ("www.github.test", CNAME, 300, name_wire("c1.cdn.test")),
            ("c1.cdn.test", CNAME, 300, name_wire("c2.cdn.test")),
            ("c2.cdn.test", A, 120, ipv4("203.0.113.30")),
            ("c2.cdn.test", A, 120, ipv4("203.0.113.31")),
            # Not on the chain: must never reach a guest.
            ("evil.test", A, 300, ipv4("203.0.113.99")),
        ],
        ("rebind.test", A): [("rebind.test", A, 300, ipv4("192.168.77.2"))],
        ("rebind.github.test", A): [
            ("rebind.github.test", A, 300, ipv4("192.168.77.2"))],
        ("mixed.test", A): [
            ("mixed.test", A, 300, ipv4("192.168.77.2")),
            ("mixed.test", A, 300, ipv4("203.0.113.40")),
            ("mixed.test", A, 300, ipv4("127.0.0.1")),
        ],
        ("loop.test", A): [("loop.test", A, 300, ipv4("127.0.0.1"))],
        ("meta.test", A): [("meta.test", A, 300, ipv4("169.254.169.254"))],
        ("short.test", A): [("short.test", A, 2, ipv4(pub))],
        ("short.github.test", A): [
            ("short.github.test", A, 2, ipv4("203.0.113.13"))],
        ("long.github.test", A): [
            ("long.github.test", A, 86400, ipv4("203.0.113.14"))],
        # The same address as long.github.test, with a short TTL.
        ("again.github.test", A): [
            ("again.github.test", A, 2, ipv4("203.0.113.14"))],
        ("txt.test", TXT): [("txt.test", TXT, 300, b"\x05hello")],
        # HTTPS with a private and a public ipv4hint (key 4).
        ("https.test", HTTPS): [("https.test", HTTPS, 300,
            struct.pack("!H", 1) + b"\0" +
            struct.pack("!HH", 1, 3) + b"\x02h2" +
            struct.pack("!HH", 4, 8) + ipv4("192.168.77.2") +
            ipv4("203.0.113.10"))],
    }
    # The proxy's hosts (tests/harness/proxy-lib.sh), so that one upstream
    # serves the whole demo.
    z[("api.bound.test", A)] = [("api.bound.test", A, 300, ipv4("203.0.113.20"))]
    z[("other.test", A)] = [("other.test", A, 300, ipv4("203.0.113.21"))]
    z[("lan.test", A)] = [("lan.test", A, 300, ipv4("192.168.77.2"))]
    # AAAA-only names, for guests with IPv6 (30-dnsd-aaaa): public, a
    # unique-local one, both, one no allow list names, and NAT64 ones.
    for n, addrs in (("v6only.github.test", ["2001:db8:cafe::10"]),
                     ("priv6.github.test", ["fd00:99::2"]),
                     ("mixed6.github.test", ["fd00:99::2",
                                             "2001:db8:cafe::12"]),
                     ("denied6.test", ["2001:db8:cafe::11"]),
                     ("ssh6.test", ["2001:db8:cafe::13"]),
                     # NAT64 (64:ff9b::/96) of 10.9.9.9, 169.254.169.254,
                     # the gateway's 10.77.0.1 and public 203.0.113.20.
                     ("nat64.github.test", ["64:ff9b::a09:909",
                                            "64:ff9b::a9fe:a9fe",
                                            "64:ff9b::a4d:1",
                                            "64:ff9b::cb00:7114"])):
        z[(n, AAAA)] = [(n, AAAA, 300, ipv6(a)) for a in addrs]
    # A big answer: more than 512 bytes, so UDP clients without EDNS
    # must be told to retry over TCP.
    z[("big.test", A)] = [("big.test", A, 300, ipv4("203.0.113.%d" % i))
                          for i in range(100, 140)]
    z[("tc.test", A)] = [("tc.test", A, 300, ipv4("203.0.113.50"))]
    return z


SOA_RR = ("test", SOA, 300, name_wire("ns.test") + name_wire("root.test") +
          struct.pack("!IIIII", 1, 3600, 600, 86400, 60))


class Server:
    def __init__(self, base, log, answer_all=None):
        self.zone = zone(base)
        self.answer_all = answer_all
        self.log = open(log, "a", buffering=1) if log else None
        self.lock = threading.Lock()

    def parse(self, data):
        if len(data) < 12:
            return None
        qid, flags, qd = struct.unpack("!HHH", data[:6])
        if qd != 1:
            return None
        i, labels = 12, []
        while i < len(data) and data[i] != 0:
            n = data[i]
            labels.append(data[i + 1:i + 1 + n].decode("ascii", "replace"))
            i += 1 + n
        qtype, qclass = struct.unpack("!HH", data[i + 1:i + 5])
        return qid, flags, ".".join(labels).lower(), qtype, data[12:i + 5]

    def answer(self, data, proto):
        q = self.parse(data)
        if q is None:
            return None
        qid, flags, name, qtype, question = q
        if self.log:
            with self.lock:
                self.log.write("%s %d %s\n" % (name, qtype, proto))
        rd = flags & 0x0100
        recs = self.zone.get((name, qtype))
        if recs is None and self.answer_all and qtype == A:
            recs = [(name, A, 300, ipv4(self.answer_all))]
        rcode, tc, auth = 0, 0, []
        if recs is None:
            known = any(k[0] == name for k in self.zone)
            rcode = 0 if known else 3
            recs, auth = [], [SOA_RR]
        if name == "tc.test" and proto == "udp":
            recs, tc = [], 0x0200
        body = b"".join(rr(*r) for r in recs)
        body += b"".join(rr(*r) for r in auth)
        hdr = struct.pack("!HHHHHH", qid, 0x8000 | 0x0400 | rd | 0x80 |
                          tc | rcode, 1, len(recs), len(auth), 0)
        return hdr + question + body


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--addr", required=True)
    ap.add_argument("--port", type=int, default=53)
    ap.add_argument("--log")
    ap.add_argument("--base", type=int, default=10)
    ap.add_argument("--answer-all")
    a = ap.parse_args()
    srv = Server(a.base, a.log, a.answer_all)

    class UDP(socketserver.BaseRequestHandler):
        def handle(self):
            data, sock = self.request
            out = srv.answer(data, "udp")
            if out:
                sock.sendto(out, self.client_address)

    class TCP(socketserver.StreamRequestHandler):
        def handle(self):
            while True:
                hdr = self.rfile.read(2)
                if len(hdr) < 2:
                    return
                data = self.rfile.read(struct.unpack("!H", hdr)[0])
                out = srv.answer(data, "tcp")
                if out:
                    self.wfile.write(struct.pack("!H", len(out)) + out)

    socketserver.ThreadingTCPServer.allow_reuse_address = True
    u = socketserver.ThreadingUDPServer((a.addr, a.port), UDP)
    t = socketserver.ThreadingTCPServer((a.addr, a.port), TCP)
    threading.Thread(target=t.serve_forever, daemon=True).start()
    print("dns-upstream on %s:%d" % (a.addr, a.port), flush=True)
    u.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
