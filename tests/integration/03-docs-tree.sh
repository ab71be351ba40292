#!/usr/bin/env bash
# docs/architecture.md's "Where the code is" and the tree agree: every
# source file of the programs (*.c, *.h, *.mk, *.sh in gatewayd/ and each
# of its folders, dnsd/, lib/, nft-rules/, provision/, containment-check/
# and tools/) is named in its section, and every file or folder the
# section names exists.  A file is named by its path, or by its name
# under its folder's heading ("### gatewayd/proxy/").
#
# And the docs agree with the tree and with each other, where a
# contradiction can be found by reading: no page says a ctl verb is
# missing that lib/ipc.c's verb table (or its `secret` sub-verbs in
# ctl_usage) has; a guest's first-boot time under TCG is stated in
# docs/benchmarks.md only, the others point there; and no page tells the
# reader to copy containment-check into a guest, which provision put
# there already.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh

out=$(python3 - <<'PY'
import fnmatch, os, re
text = open("docs/architecture.md", encoding="utf-8").read()
sec = text[text.index("## Where the code is"):]
dirs = ["gatewayd", "gatewayd/proxy", "gatewayd/parent", "gatewayd/control",
        "gatewayd/nflog", "gatewayd/signer", "gatewayd/metrics",
        "gatewayd/harepl", "gatewayd/register", "gatewayd/ha_arp",
        "gatewayd/cli", "dnsd", "lib", "nft-rules",
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

agree=$(python3 - <<'PY'
import glob, re
verbs = set(re.findall(r'\[CTL_\w+\] = "([a-z-]+)"', open("lib/ipc.c").read()))
for m in re.finditer(r'"  secret ([a-z|]+)', open("gatewayd/cli/ctl_client.c").read()):
    verbs.update(m.group(1).split("|"))
pages = sorted(glob.glob("docs/*.md")) + ["README.md"]
absent = [
    r"\bno (?:`?(?:gatewayd )?ctl`? )?(?:verb|command|subcommand)s? (?:to|for|that) ([a-z-]+)",
    r"\bno `(?:gatewayd )?(?:ctl )?(?:secret )?([a-z-]+)` (?:verb|command)",
    r"`(?:gatewayd )?ctl (?:secret )?([a-z-]+)` (?:does not exist|is not (?:yet )?(?:implemented|available))",
]
dur = r"\b\d+(?:\.\d+)?\s*(?:minutes?|min|seconds?|s)\b"
out = []
for p in pages:
    text = open(p, encoding="utf-8").read()
    flat = re.sub(r"\s+", " ", text)
    for rx in absent:
        for m in re.finditer(rx, flat):
            if m.group(1) in verbs:
                out.append("%s: says '%s' is missing; the verb table has it: %s"
                           % (p, m.group(1), m.group(0)))
    if p != "docs/benchmarks.md":
        for sent in re.split(r"(?<=[.;])\s", flat):
            if "TCG" in sent and re.search(r"first[ -]boot|verdict", sent) and \
                    re.search(dur, sent):
                out.append("%s: states the TCG first-boot time (benchmarks.md's): %s"
                           % (p, sent[:160]))
    for i, l in enumerate(text.splitlines(), 1):
        if re.search(r"\bscp\b.*containment-check|containment-check.*\bscp\b|"
                     r"copied in with scp", l):
            out.append("%s:%d: copies containment-check into the guest, which "
                       "provision did: %s" % (p, i, l.strip()))
print("VERBS %d %s" % (len(verbs), "attach" in verbs))
print("\n".join(out))
PY
)
expect_match "the ctl verb table is read (secret attach among its verbs)" '^VERBS [1-9][0-9] True$' "$(head -1 <<<"$agree")"
expect_eq "the docs contradict neither the tree nor each other" "" "$(sed 1d <<<"$agree")"
tap_done
