#!/usr/bin/env python3
"""https-static.py -- serve a directory over HTTPS, for tests that need a
package index under its real host names (resolved by the test DNS to an
address inside the test's "internet" namespace).

  https-static.py ADDR PORT DIR CERT KEY [--lifetime S]

Runs inside a test namespace only.  Stops by itself after --lifetime
seconds (default 300).
"""
import argparse
import functools
import http.server
import ssl
import threading


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("addr")
    ap.add_argument("port", type=int)
    ap.add_argument("dir")
    ap.add_argument("cert")
    ap.add_argument("key")
    ap.add_argument("--lifetime", type=float, default=300)
    a = ap.parse_args()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler,
                                directory=a.dir)
    srv = http.server.ThreadingHTTPServer((a.addr, a.port), handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Timer(a.lifetime, srv.shutdown).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
