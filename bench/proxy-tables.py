#!/usr/bin/env python3
"""proxy-tables.py -- bench/proxy-bench.sh's tables, one an area, from its
raw rounds (lines "path rps p50_ms p99_ms requests MiB/s cpu_ms
cpu_us_per_request round load1") and its system-call counts (lines "path
total name=count ...").  Each cell is the median over the rounds, with the
range where it moves; a ratio is taken within a round, then the median of
those.

    proxy-tables.py ROUNDS_FILE [SYSCALLS_FILE]
"""
import os
import statistics
import sys

# The download's size (proxy-bench.sh's DL, in MiB): 100 but in smoke mode.
DL_MIB = os.environ.get("DL_MIB", "100")

rows = {}       # (round, path) -> fields
paths = []
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 10:
        continue
    rec = dict(zip(("path", "rps", "p50", "p99", "n", "dl", "cpu", "spr",
                    "round", "load"), f))
    rows[(rec["round"], rec["path"])] = rec
    if rec["path"] not in paths:
        paths.append(rec["path"])
rounds = sorted({r for r, _ in rows}, key=int)
calls = {}
if len(sys.argv) > 2:
    try:
        for line in open(sys.argv[2]):
            f = line.split()
            calls[f[0]] = (f[1], " ".join(f[2:]))
    except OSError:
        pass


def num(v):
    try:
        return float(v)
    except ValueError:
        return None


def vals(path, key):
    out = []
    for r in rounds:
        v = rows.get((r, path), {}).get(key)
        if v is not None and num(v) is not None:
            out.append(num(v))
    return out


def ratio(path, base, key, diff=False):
    out = []
    for r in rounds:
        a, b = rows.get((r, path)), rows.get((r, base))
        if not a or not b or num(a[key]) is None or num(b[key]) is None:
            continue
        if diff:
            out.append(num(a[key]) - num(b[key]))
        elif num(b[key]) > 0:
            out.append(num(a[key]) / num(b[key]))
    return out


def mr(v, fmt="%.2f", rng=True):
    if not v:
        return "—"
    s = fmt % statistics.median(v)
    if rng and len(v) > 1:
        s += " (" + fmt % min(v) + "–" + fmt % max(v) + ")"
    return s


def table(title, want, base, peer, cols):
    have = [p for p in want if p in paths]
    if have in ([], [base]):
        return
    print("\n" + title + "\n")
    print("| path | " + " | ".join(c[0] for c in cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for p in have:
        print("| %s | " % p + " | ".join(c[1](p, base, peer) for c in cols) + " |")


def col_med(key, fmt, rng=True):
    return lambda p, b, q: mr(vals(p, key), fmt, rng)


def col_ratio(key, to_peer=False):
    def f(p, b, q):
        ref = q if to_peer else b
        if p in (ref, b) or ref is None:
            return "—"
        return mr(ratio(p, ref, key))
    return f


def col_added(p, b, q):
    return "—" if p == b else mr(ratio(p, b, "p50", diff=True), "%.3f")


def col_cpu(p, b, q):
    if p.endswith("direct") or "tinyproxy" in p:
        return "—"  # no proxy; tinyproxy's threads are gone when read
    # 0: the count was not read that round (a thread went away meanwhile)
    return mr([v for v in vals(p, "spr") if v > 0], "%.1f")


def col_calls(p, b, q):
    c = calls.get(p)
    return "%s (%s)" % c if c else "—"


loads = vals(paths[0], "load") if paths else []
print("1-minute load average over the rounds: %s; %d rounds" % (
    mr([num(r["load"]) for r in rows.values()], "%.1f"), len(rounds)))

small_cols = [
    ("req/s", col_med("rps", "%.0f")),
    ("p50 ms", col_med("p50", "%.3f", False)),
    ("p99 ms", col_med("p99", "%.3f", False)),
    ("p50 added to direct, ms", col_added),
    ("req/s of direct", col_ratio("rps")),
    ("req/s of peer", col_ratio("rps", True)),
    ("proxy CPU µs/request", col_cpu),
    ("system calls/request", col_calls),
]
table("Small requests in a CONNECT tunnel (peer: tinyproxy)",
      ["direct", "spliced", "spliced-b", "sockmap", "tinyproxy", "relay"],
      "direct", "tinyproxy", small_cols)


def col_cpu_of(bound):
    def f(p, b, q):
        if p in (b, bound) or bound not in paths or p.endswith("direct"):
            return "—"
        return mr([v for v in ratio(p, bound, "spr") if v > 0])
    return f


table("Small requests, intercepted (peer: HAProxy; bound: tls-relay)",
      ["direct", "intercepted", "intercepted-b", "tls-relay", "haproxy", "nginx",
       "mitmproxy"],
      "direct", "haproxy",
      small_cols + [("proxy CPU of tls-relay's", col_cpu_of("tls-relay"))])
dl_cols = [
    ("MiB/s", col_med("dl", "%.0f")),
    ("of direct", col_ratio("dl")),
    ("proxy CPU ms per %s MiB" % DL_MIB, lambda p, b, q: "—" if p.endswith("direct")
     else mr(vals(p, "cpu"), "%.0f", False)),
]
table("%s MiB download" % DL_MIB,
      ["direct", "spliced", "spliced-b", "sockmap", "tinyproxy", "relay", "intercepted",
       "intercepted-b", "tls-relay", "haproxy", "nginx", "mitmproxy"], "direct",
      None, dl_cols + [("MiB/s of HAProxy's", lambda p, b, q: "—"
                        if not p.startswith("intercepted") else mr(ratio(p, "haproxy", "dl")))])
table("Plain HTTP (absolute-URI GETs, keep-alive)",
      ["plain-direct", "plain-moat", "plain-tinyproxy", "plain-squid"],
      "plain-direct", None,
      [small_cols[0], small_cols[1], small_cols[2], small_cols[3],
       small_cols[4], small_cols[6]] + dl_cols[:2])
