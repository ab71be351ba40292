#!/usr/bin/env python3
"""doc-blocks.py FILE.md -- the commands of a walkthrough and the output it
shows for each, one JSON object per command on stdout:

  {"line": N, "block": B, "cmd": "...", "expect": ["...", ...]}

In a fenced block (```), a line "#   TEXT" is output the page shows for
the command before it (or, with no command before it in the block, an
example of output the page does not ask to produce: cmd is null), any
other line starting with "#" is a comment, and every other line is a
command as a reader would type it; a line ending in "\\" goes on on the
next.  Headings outside the blocks are reported as {"section": "..."}.
"""
import json
import sys


def main(path):
    block, in_block, cur = 0, False, None
    with open(path) as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        ln = lines[i]
        i += 1
        if ln.startswith("```"):
            if in_block and cur is not None:
                print(json.dumps(cur))
            in_block, cur = not in_block, None
            block += in_block
            continue
        if not in_block:
            if ln.startswith("#"):
                print(json.dumps({"section": ln.lstrip("#").strip()}))
            continue
        if ln.startswith("#   "):
            if cur is None:
                cur = {"line": i, "block": block, "cmd": None, "expect": []}
            cur["expect"].append(ln[4:])
            continue
        if ln.startswith("#") or not ln.strip():
            continue
        if cur is not None:
            print(json.dumps(cur))
        start, cmd = i, ln
        while cmd.endswith("\\") and i < len(lines):
            cmd = cmd[:-1].rstrip() + " " + lines[i].strip()
            i += 1
        cur = {"line": start, "block": block, "cmd": cmd, "expect": []}
    if in_block:
        sys.exit("%s: a block is not closed" % path)


if __name__ == "__main__":
    main(sys.argv[1])
