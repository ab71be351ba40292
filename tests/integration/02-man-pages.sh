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
expect_match "moat.conf(5): a table row is a tagged paragraph" \
	'^       state_dir \(string, default "/var/lib/moat"\)$' "$(cat "$T/moat.conf.5.txt")"
expect_match "gatewayd(8): each SYNOPSIS form on its own line" \
	'^       gatewayd ctl \[-s SOCKET\] status' "$(cat "$T/gatewayd.8.txt")"
tap_done
