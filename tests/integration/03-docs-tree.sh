#!/usr/bin/env bash
# docs/architecture.md's "Where the code is" and the tree agree: every
# source file of the programs (*.c, *.h, *.mk, *.sh in gatewayd/,
# gatewayd/proxy/, dnsd/, lib/, nft-rules/, provision/, containment-check/
# and tools/) is named in its section, and every file or folder the
# section names exists.  A file is named by its path, or by its name
# under its folder's heading ("### gatewayd/proxy/").
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh

out=$(python3 - <<'PY'
import fnmatch, os, re
text = open("docs/architecture.md", encoding="utf-8").read()
sec = text[text.index("## Where the code is"):]
dirs = ["gatewayd", "gatewayd/proxy", "dnsd", "lib", "nft-rules",
        "provision", "containment-check", "tools"]
src = re.compile(r"\.(c|h|mk|sh)$")
named, heading = set(), None
for line in sec.splitlines():
    if line.startswith("#"):
        m = re.match(r"### (\S+)/", line)
        heading = m.group(1) if m else None
        continue
    for tok in re.findall(r"`([^` ]+)`", line):
        if heading and src.search(tok) and "/" not in tok:
            named.add(heading + "/" + tok)
        elif "/" in tok and not tok.startswith("/") and not tok.startswith("-"):
            named.add(tok.rstrip("/"))
globs = [t for t in named if "*" in t]
missing = []
for d in dirs:
    for f in sorted(os.listdir(d)):
        path = d + "/" + f
        if not os.path.isfile(path) or not src.search(f):
            continue
        if path in named or any(fnmatch.fnmatch(path, g) and
                "/" not in path[len(os.path.dirname(g)) + 1:] for g in globs):
            continue
        missing.append(path)
gone = [t for t in sorted(named) if "*" not in t and not os.path.exists(t)]
print("MISSING " + " ".join(missing))
print("GONE " + " ".join(gone))
PY
)
missing=$(sed -n 's/^MISSING *//p' <<<"$out")
gone=$(sed -n 's/^GONE *//p' <<<"$out")
expect_eq "every source file of the programs is named in 'Where the code is'" "" "$missing"
expect_eq "every file or folder it names exists" "" "$gone"
tap_done
