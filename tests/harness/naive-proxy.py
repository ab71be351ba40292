#!/usr/bin/env python3
# naive-proxy.py ADDR PORT -- a deliberately broken stand-in for moat-proxy,
# for containment-check's mutation tests only: it dials whatever it is
# asked (CONNECT, absolute URI, or the Host of a redirected request), and
# splices redirected TLS to the connection's original destination, as a
# proxy without an admission check would.  What it refuses itself carries
# X-Moat-Refused, as moat-proxy's own replies do.  Never installed.
import socket, struct, sys, threading

SO_ORIGINAL_DST = 80

def dial(host, port):
    host = host.strip("[]")
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect((host, port))
    return s

def hostport(hp, default):
    if hp.startswith("["):
        h, _, rest = hp[1:].partition("]")
        return h, int(rest[1:]) if rest.startswith(":") else default
    h, _, p = hp.partition(":")
    return h, int(p) if p else default

def pump(a, b):
    try:
        while True:
            d = a.recv(16384)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    finally:
        try:
            b.shutdown(socket.SHUT_WR)
        except OSError:
            pass

def splice_original(c):
    """Redirected TLS: straight on to where the guest was going."""
    raw = c.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
    port = struct.unpack("!H", raw[2:4])[0]
    u = dial(socket.inet_ntoa(raw[4:8]), port)
    t = threading.Thread(target=pump, args=(u, c), daemon=True)
    t.start()
    pump(c, u)
    t.join(5)
    u.close()

def serve(c):
    try:
        if c.recv(1, socket.MSG_PEEK) == b"\x16":
            splice_original(c)
            return
        head = b""
        while b"\r\n\r\n" not in head:
            d = c.recv(4096)
            if not d:
                return
            head += d
        line = head.split(b"\r\n")[0].decode()
        meth, target, _ = line.split(" ", 2)
        if meth == "CONNECT":
            u = dial(*hostport(target, 443))
            c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            u.close()
            return
        if target.startswith("http://"):
            hp, _, path = target[7:].partition("/")
            head = head.replace(target.encode(), b"/" + path.encode(), 1)
        else:
            hp = [l.split(b":", 1)[1].strip().decode() for l in head.split(b"\r\n")
                  if l.lower().startswith(b"host:")][0]
        u = dial(*hostport(hp, 80))
        u.sendall(head)
        while True:
            d = u.recv(4096)
            if not d:
                break
            c.sendall(d)
    except Exception as e:
        print("naive-proxy: %r" % e, file=sys.stderr, flush=True)
        try:
            c.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n"
                      b"X-Moat-Refused: dial failed\r\n\r\n")
        except Exception:
            pass
    finally:
        c.close()

l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((sys.argv[1], int(sys.argv[2])))
l.listen(64)
while True:
    c, _ = l.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
