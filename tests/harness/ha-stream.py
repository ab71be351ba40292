#!/usr/bin/env python3
"""ha-stream.py ADDR PORT SECONDS -- a long download for ha-watch.py.

Runs inside the test's internet namespace only.  Each client that sends
a request gets an HTTP/1.0 200 head, then 1400 bytes every 10 ms for
SECONDS (bounded), then the server closes.
"""
import socket
import sys
import threading
import time


def serve(c, secs):
    try:
        c.settimeout(5)
        buf = b""
        while b"\r\n\r\n" not in buf and len(buf) < 8192:
            d = c.recv(4096)
            if not d:
                return
            buf += d
        c.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n")
        end = time.monotonic() + secs
        chunk = b"x" * 1400
        c.settimeout(30)
        while time.monotonic() < end:
            c.sendall(chunk)
            time.sleep(0.01)
    except OSError:
        pass
    finally:
        c.close()


def main():
    addr, port, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(16)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c, secs), daemon=True).start()


if __name__ == "__main__":
    main()
