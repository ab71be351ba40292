#!/usr/bin/env python3
"""memscan.py PID HEXBYTES -- does the process's memory hold this number?

Reads every readable mapping of PID through /proc/PID/mem (root only) and
prints "found" if the bytes appear in either order (big-endian as in a
key file, or little-endian as in a bignum's limbs), else "absent".  Used
to prove where a key lives."""
import re
import sys

pid, needle = sys.argv[1], bytes.fromhex(sys.argv[2])
needles = (needle, needle[::-1])
found = False
with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
    for line in maps:
        m = re.match(r"([0-9a-f]+)-([0-9a-f]+) (\S+)", line)
        lo, hi, perms = int(m[1], 16), int(m[2], 16), m[3]
        if perms[0] != "r" or "[vvar" in line or "[vsyscall" in line:
            continue
        try:
            mem.seek(lo)
            chunk = mem.read(hi - lo)
            if any(n in chunk for n in needles):
                found = True
                break
        except OSError:
            continue
print("found" if found else "absent")
