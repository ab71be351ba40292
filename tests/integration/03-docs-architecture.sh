#!/usr/bin/env bash
# docs/architecture.md's tables of processes and messages name every
# process and every message by its exact name in the code, and nothing the
# code does not have: each PROC_* of enum gw_proc_id (gatewayd/parent/gw.h)
# with its roles[] name (gatewayd/parent/proc.c) in the process table, each
# IPC_* of enum ipc_type (lib/ipc.h) in the message table.  No globs: a new
# child or message without its row turns this red.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
out=$(python3 - <<'PY'
import re
doc = open("docs/architecture.md", encoding="utf-8").read()
def table(after):
    """rows of the first Markdown table after the heading line AFTER"""
    i = doc.index(after)
    rows, started = [], False
    for line in doc[i:].splitlines()[1:]:
        if line.startswith("|"):
            started = True
            if not set(line) <= set("|-: "):
                rows.append(line)
        elif started:
            break
    return rows[1:]	# without the header row
procs_rows = table("## The processes")
i = doc.index("| message | from → to | carries |")
msgs_rows = []
for line in doc[i:].splitlines()[2:]:
    if not line.startswith("|"): break
    msgs_rows.append(line)

h = open("gatewayd/parent/gw.h").read()
enum = re.search(r"enum gw_proc_id \{(.*?)\};", h, re.S).group(1)
procs = [p for p in re.findall(r"\b(PROC_[A-Z_]+)\b", enum) if p != "PROC_MAX"]
procs = list(dict.fromkeys(procs))
roles = dict(re.findall(r'\[(PROC_[A-Z_]+)\] = \{ "([^"]+)"',
                        open("gatewayd/parent/proc.c").read()))
ipch = open("lib/ipc.h").read()
tenum = re.search(r"enum ipc_type \{(.*?)\};", ipch, re.S)
tenum = tenum.group(1)
tenum = re.sub(r"/\*.*?\*/", "", tenum, flags=re.S)
types = [t for t in re.findall(r"\b(IPC_[A-Z_]+)\b", tenum) if t != "IPC_TYPE_MAX"]

def row_first_cells(rows):
    return [r.split("|")[1] for r in rows]
pcells = row_first_cells(procs_rows)
for p in procs:
    hit = [c for c in pcells if f"`{p}`" in c]
    print(f"{'ok' if hit else 'not ok'} - process table has a row for `{p}`")
    if hit:
        r = roles.get(p)
        print(f"{'ok' if r and f'role `{r}`' in hit[0] else 'not ok'} - ... naming its roles[] name `{r}`")
mcells = row_first_cells(msgs_rows)
for t in types:
    hit = any(f"`{t}`" in c for c in mcells)
    print(f"{'ok' if hit else 'not ok'} - message table has a row for `{t}`")
# and nothing stale: every name in those columns exists in the code
for n in sorted(set(re.findall(r"`(PROC_[A-Z_]+)`", " ".join(pcells)))):
    print(f"{'ok' if n in procs else 'not ok'} - `{n}` in the process table exists in gw_proc_id")
for n in sorted(set(re.findall(r"`(IPC_[A-Z_]+)`", " ".join(mcells)))):
    print(f"{'ok' if n in types else 'not ok'} - `{n}` in the message table exists in enum ipc_type")
print(f"{'ok' if len(procs) >= 8 and len(types) >= 20 else 'not ok'} - the code's lists were read ({len(procs)} processes, {len(types)} messages)")
PY
)
echo "$out"
grep -q '^not ok' <<<"$out" && TAP_FAILED=1
TAP_COUNT=$(grep -c '^ok\|^not ok' <<<"$out")
tap_done
