#!/usr/bin/env python3
"""arp-responder.py IFNAME ADDR BOXMAC FAST SLOW DELAY_MS SECONDS -- two
claimants of ADDR on IFNAME answering the probes BOXMAC sends (RFC 5227,
from 0.0.0.0), for SECONDS: FAST, a forger, answers every broadcast probe
at once and never a probe sent to it alone; SLOW, a real holder of the
address, answers both kinds DELAY_MS later.  Raw frames, no library; run
inside a test namespace only."""
import select
import socket
import struct
import sys
import time

ifname, addr, box, fast, slow = sys.argv[1:6]
delay, seconds = int(sys.argv[6]) / 1000.0, float(sys.argv[7])
mac = lambda m: bytes(int(x, 16) for x in m.split(":"))
box, fast, slow, addr = mac(box), mac(fast), mac(slow), socket.inet_aton(addr)
zero, bcast = socket.inet_aton("0.0.0.0"), b"\xff" * 6

def reply(sha):
	return box + sha + struct.pack("!H", 0x0806) + \
	    struct.pack("!HHBBH", 1, 0x0800, 6, 4, 2) + sha + addr + box + zero

s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0806))
s.bind((ifname, 0))
due = []	# times the slow one answers
end = time.monotonic() + seconds
while time.monotonic() < end:
	now = time.monotonic()
	for t in [t for t in due if t <= now]:
		s.send(reply(slow))
		due.remove(t)
	wait = min([end] + due) - now
	if not select.select([s], [], [], max(wait, 0))[0]:
		continue
	f = s.recv(128)
	if len(f) < 42:
		continue
	op, sha, spa, tpa = struct.unpack("!H", f[20:22])[0], f[22:28], f[28:32], f[38:42]
	if op != 1 or sha != box or spa != zero or tpa != addr:
		continue
	if f[0:6] == bcast:
		s.send(reply(fast))
	if f[0:6] in (bcast, slow):
		due.append(time.monotonic() + delay)
