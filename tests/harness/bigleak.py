"""bigleak.py -- the body proxy-server.py serves at /bigleak, and what the
guest must see of it.

body(n, seed, value): n pseudo-random bytes (the same for the same seed)
with `value` written in at random gaps: often back to back or a few bytes
apart, so that some straddle every way a stream can be cut into reads,
records and chunks; with near misses (value minus its last byte, then
another byte) in between.  The guest's copy is body.replace(value,
placeholder).
"""
import random


def body(n, seed, value):
    rnd = random.Random(seed)
    out = bytearray()
    miss = value[:-1] + bytes([value[-1] ^ 0x55])
    while len(out) < n:
        gap = rnd.randrange(0, 40) if rnd.random() < 0.5 else rnd.randrange(1, 20000)
        out += rnd.randbytes(gap)
        out += miss if rnd.random() < 0.2 else value
    return bytes(out[:n])


def chunk_sizes(seed):
    rnd = random.Random(seed + 1)
    while True:
        yield rnd.randrange(1, 40000)


if __name__ == "__main__":
    # bigleak.py N SEED VALUE PLACEHOLDER -> the guest's copy on stdout
    import sys
    n, seed = int(sys.argv[1]), int(sys.argv[2])
    b = body(n, seed, sys.argv[3].encode())
    sys.stdout.buffer.write(b.replace(sys.argv[3].encode(), sys.argv[4].encode()))
