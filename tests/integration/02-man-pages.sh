#!/usr/bin/env bash
# The man pages render cleanly at 80 columns: man --warnings prints
# nothing, tables are tagged paragraphs (no tbl), and every word with an
# underscore in the Markdown source (CAP_NET_RAW, no_new_privs, state_dir)
# is still there, not eaten as emphasis.  Every page the package installs:
# those tools/md2man.sh makes from docs/*.SECTION.md and the troff ones.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
T=$(mktemp -d /tmp/moat-man.XXXXXX)
trap 'rm -rf "$T"' EXIT

command -v lowdown >/dev/null && command -v man >/dev/null ||
	{ not_ok "lowdown and man are installed (make deps)"; tap_done; exit 1; }
expect_ok "md2man.sh makes every page" sh tools/md2man.sh "$T/man" docs/*.[1-8].md
n=$(ls docs/*.[1-8].md | wc -l)
expect_eq "one page per docs/*.SECTION.md" "$n" "$(ls "$T/man" | wc -l)"

for page in "$T"/man/*.[1-8] docs/*.[1-8]; do
	name=${page##*/}
	MANWIDTH=80 MAN_KEEP_FORMATTING= man --warnings -l "$page" \
		>"$T/$name.txt" 2>"$T/$name.err"
	expect_eq "$name: man --warnings -l prints no warning" "" "$(cat "$T/$name.err")"
	# Tables squeeze their columns at 80; md2man.sh writes none (tbl).
	expect_fail "$name: no tbl table" grep -q '^\.TS' "$page"
	src=docs/$name.md
	case $name in moat-proxy.8) src=docs/proxy.8.md ;; esac
	[ -f "$src" ] || continue
	# A word hyphenated at a line's end is joined again before looking.
	lost=$(python3 -c 'import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
text = re.sub(r"\s+", " ", re.sub(r"\u2010\n\s*", "", text))
words = re.findall(r"[A-Za-z0-9.]*[A-Za-z0-9]_[A-Za-z0-9_]*[A-Za-z0-9]",
                   open(sys.argv[2], encoding="utf-8").read())
print(" ".join(sorted({w for w in words if w not in text})))' "$T/$name.txt" "$src")
	expect_eq "$name: no underscore eaten" "" "$lost"
done

# Read as rendered (man -l, as a user reads it): no Markdown table row
# left raw (a blank line inside a table used to end it, and the rest
# printed as "| trunk | string | ... |"), and options only where a reader
# looks for them: a "-x"/"--long" item under a section whose name says
# OPTIONS (gatewayd(8) listed --help, --version and --teardown under
# ENVIRONMENT).
for txt in "$T"/*.txt; do
	name=${txt##*/}; name=${name%.txt}
	expect_eq "$name: no raw table row in the rendered page" "" \
		"$(grep -nE '^[[:space:]]*\|[^|]*\|' "$txt" | head -5)"
	misplaced=$(python3 -c 'import re, sys
sec = ""
for l in open(sys.argv[1], encoding="utf-8", errors="replace"):
    l = l.rstrip("\n")
    if re.match(r"[A-Z][A-Z0-9 ()-]*$", l):
        sec = l
    elif re.match(r" {7}(\u2022|\u00b7|o) +--?[A-Za-z]", l) and \
            not re.search(r"OPTIONS|SYNOPSIS", sec):
        print(sec + ": " + l.strip())' "$txt" | head -5)
	expect_eq "$name: every option item is under OPTIONS" "" "$misplaced"
done

# Every key of the configuration schema (lib/config_schema.c's key
# tables) is a tagged paragraph of moat.conf(5), bare or under its
# group's prefix ("ipv6.network"; a group may be a subsection of its own
# name instead), and every sandbox key is one in the
# sandboxes section: the sandbox "ipv6" key used to be lost.
keys=$(python3 - lib/config_schema.c <<'PY'
import re, sys
src = open(sys.argv[1]).read()
for m in re.finditer(r'static const struct key (\w+)_keys\[\] = \{(.*?)\n\};', src, re.S):
    for k in re.findall(r'\{ "([a-z0-9_]+)", K_', m.group(2)):
        print(m.group(1), k)
PY
)
expect_ok "the schema's key tables are found" test "$(wc -l <<<"$keys")" -gt 80
MC=$T/moat.conf.5.txt
missing=$(while read -r table key; do
	grep -qE "^( {7}([a-z0-9_]+\.)*$key(\.[a-z0-9_.]+)?( \(.*)?| {3}([a-z0-9_]+\.)*$key)\$" "$MC" ||
		echo "$table.$key"
done <<<"$keys")
expect_eq "moat.conf(5): every schema key has its tagged paragraph" "" "$missing"
sbsec=$(awk '/^SANDBOXES/ { on = 1; next } /^[A-Z][A-Z ]+$/ { on = 0 } on' "$MC")
missing=$(while read -r table key; do
	[ "$table" = sandbox ] || continue
	grep -qE "^ {7}$key( \(.*)?\$" <<<"$sbsec" || echo "$key"
done <<<"$keys")
expect_eq "moat.conf(5): every sandbox key is in SANDBOXES" "" "$missing"
expect_match "moat.conf(5): a table row is a tagged paragraph" \
	'^       state_dir \(string, default "/var/lib/moat"\)$' "$(cat "$T/moat.conf.5.txt")"
expect_match "gatewayd(8): each SYNOPSIS form on its own line" \
	'^       gatewayd ctl \[-s SOCKET\] status' "$(cat "$T/gatewayd.8.txt")"
tap_done
