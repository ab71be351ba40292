#!/usr/bin/env python3
"""proxy-server.py -- HTTPS (or HTTP) test server for the proxy tests.

  proxy-server.py ADDR PORT [--cert CRT --key KEY] [--log FILE]
                  [--leak FILE] [--lifetime S]

Runs inside a test namespace only.  Paths:
  /echo        body = the request head exactly as received (and appended
               to --log), so a test sees what reached the server; a
               chunked request body is read whole before answering
  /repos/...   the same as /echo (any path under /repos, /Repos or //,
               for the request-rule tests)
  /gzecho      the same, gzip-encoded when Accept-Encoding offers gzip
  /gzalways    the same, always gzip-encoded (whatever was offered)
  /leak        chunked body carrying the bytes of --leak FILE, split in
               the middle across two chunks and two writes
  /sse         text/event-stream: 3 events, 0.4 s apart (chunked)
  /ws          websocket-style upgrade: 101, then echoes raw bytes
  /big?n=N     N bytes of 'x' with Content-Length (benchmarks)
  /bigleak?n=N&seed=S[&chunked=1]  N bytes from bigleak.py carrying the
               bytes of --leak FILE many times over, with Content-Length
               or in chunks of random sizes
  /small       "ok\\n" with Content-Length (benchmarks)
  ?echo=reason on an echo path: status "401 bad key <Authorization>", the
               reason phrase echoing the header the server got
  ?echo=name   on an echo path: a header named after the last word of
               Authorization (an API key is a valid header name)
Keep-alive (HTTP/1.1).  Stops by itself after --lifetime seconds.
"""
import argparse
import bigleak
import gzip
import http.server
import socket
import socketserver
import ssl
import sys
import threading
import time


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def head_text(self):
        lines = [self.requestline] + [f"{k}: {v}" for k, v in self.headers.items()]
        return "\r\n".join(lines) + "\r\n"

    def send_body(self, body, ctype="text/plain"):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def read_chunked(self):
        # The whole body before any answer, as a real server would: the
        # proxy then sees every chunk before the response starts.
        body = b""
        while True:
            try:
                size = int(self.rfile.readline().split(b";")[0], 16)
            except ValueError:
                return body
            if size <= 0:
                self.rfile.readline()
                return body
            body += self.rfile.read(size)
            self.rfile.readline()

    def echo_quirk(self, body):
        """A bound server that reflects Authorization where the scrubber
        might not look: the reason phrase, or a header's name."""
        q = self.path.split("?", 1)[1] if "?" in self.path else ""
        auth = self.headers.get("Authorization", "")
        if "echo=reason" in q:
            self.send_response(401, "bad key " + auth)
        elif "echo=name" in q:
            self.send_response(200)
            self.send_header(auth.split()[-1], "1")
        else:
            return False
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return True

    def send_gzip(self, body):
        z = gzip.compress(body)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(z)))
        self.end_headers()
        self.wfile.write(z)

    def send_bigleak(self):
        q = dict(kv.split("=") for kv in self.path.split("?")[1].split("&"))
        seed = int(q["seed"])
        value = open(self.server.leak, "rb").read().strip()
        data = bigleak.body(int(q["n"]), seed, value)
        self.send_response(200)
        if q.get("chunked"):
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            off, sizes = 0, bigleak.chunk_sizes(seed)
            while off < len(data):
                k = next(sizes)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data[off:off + k]), data[off:off + k]))
                off += k
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            for off in range(0, len(data), 65536):
                self.wfile.write(data[off:off + 65536])
        return None

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def do_GET(self):
        path = self.path.split("?")[0]
        body = b""
        if self.headers.get("Content-Length"):
            body = self.rfile.read(int(self.headers["Content-Length"]))
        elif self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = self.read_chunked()
        if path in ("/echo", "/gzecho", "/gzalways") or \
                path.startswith(("/repos/", "/Repos/", "//")):
            text = self.head_text() + "\r\n" + body.decode("latin-1")
            if self.server.log:
                with open(self.server.log, "a") as f:
                    f.write(text + "----\n")
            if self.echo_quirk(text.encode()):
                return None
            if path == "/gzalways" or (path == "/gzecho" and "gzip" in
                                       self.headers.get("Accept-Encoding", "")):
                return self.send_gzip(text.encode())
            return self.send_body(text.encode())
        if path == "/small":
            return self.send_body(b"ok\n")
        if path == "/big":
            n = int(self.path.split("n=")[1])
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            block = b"x" * 65536
            while n > 0:
                k = min(n, len(block))
                self.wfile.write(block[:k])
                n -= k
            return None
        if path == "/bigleak":
            return self.send_bigleak()
        if path == "/leak":
            value = open(self.server.leak, "rb").read().strip()
            half = len(value) // 2
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("X-Echo-Key", value.decode())
            self.end_headers()
            self.chunk(b"key=" + value[:half])
            time.sleep(0.2)
            self.chunk(value[half:] + b";end\n")
            self.wfile.write(b"0\r\n\r\n")
            return None
        if path == "/sse":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(3):
                self.chunk(b"data: event %d t=%.3f\n\n" % (i, time.time()))
                time.sleep(0.4)
            self.wfile.write(b"0\r\n\r\n")
            return None
        if path == "/ws":
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.send_header("Sec-WebSocket-Accept", "test")
            self.end_headers()
            self.wfile.flush()
            while True:
                data = self.connection.recv(4096)
                if not data:
                    break
                self.connection.sendall(data)
            self.close_connection = True
            return None
        self.send_error(404)
        return None

    do_POST = do_GET
    do_DELETE = do_GET


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("addr")
    ap.add_argument("port", type=int)
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--log")
    ap.add_argument("--leak")
    ap.add_argument("--lifetime", type=int, default=600)
    a = ap.parse_args()
    if ":" in a.addr:
        Server.address_family = socket.AF_INET6
    srv = Server((a.addr, a.port), Handler)
    srv.log, srv.leak = a.log, a.leak
    if a.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.cert, a.key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Timer(a.lifetime, lambda: sys.exit(0)).start()
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    time.sleep(a.lifetime)


if __name__ == "__main__":
    main()
