#!/usr/bin/env python3
"""doc-blocks.py FILE.md -- the commands of a walkthrough and the output it
shows for each, one JSON object per command on stdout:

  {"line": N, "block": B, "cmd": "...", "as": "root", "expect": ["...", ...]}

In a fenced block (```), a line "#   TEXT" is output the page shows for
the command before it (or, with no command before it in the block, an
example of output the page does not ask to produce: cmd is null), any
other line starting with "#" is a comment, and every other line is a
command as a reader would type it: as root, or as a member when it starts
with the prompt "$ " (which is not part of the command); a line ending in
"\\" goes on on the next.  A block with an info string (```libconfig) is
a file's text, not commands: {"line": N, "snippet": "..."}.  Headings
outside the blocks are reported as {"section": "..."}.
"""
import json
import sys


def main(path):
    block, in_block, cur, indent = 0, False, None, 0
    with open(path) as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        ln = lines[i]
        i += 1
        if ln.lstrip().startswith("```"):
            if in_block and cur is not None:
                print(json.dumps(cur))
            if not in_block and ln.lstrip()[3:].strip():
                start, text = i, []
                while i < len(lines) and not lines[i].lstrip().startswith("```"):
                    text.append(lines[i])
                    i += 1
                i += 1
                print(json.dumps({"line": start, "snippet": "\n".join(text)}))
                continue
            in_block, cur = not in_block, None
            block += in_block
            indent = len(ln) - len(ln.lstrip())
            continue
        if in_block and not ln[:indent].strip():
            ln = ln[indent:]    # a block inside a list item
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
        start, cmd, who = i, ln.strip(), "root"
        if cmd.startswith("$ "):
            cmd, who = cmd[2:], "member"
        while cmd.endswith("\\") and i < len(lines):
            cmd = cmd[:-1].rstrip() + " " + lines[i].strip()
            i += 1
        cur = {"line": start, "block": block, "cmd": cmd, "as": who,
               "expect": []}
    if in_block:
        sys.exit("%s: a block is not closed" % path)


if __name__ == "__main__":
    main(sys.argv[1])
