#!/bin/sh
# md2man.sh OUTDIR IN.md... -- man pages from docs/*.SECTION.md with lowdown.
#
# The Markdown in docs/ is the single source.  Each page opens with
# "# NAME(SECTION)", optionally followed by " — what it is".  That line
# becomes the man header (.TH) and names the output file OUTDIR/NAME.SECTION;
# the other headings move up one level (## -> .SH, ### -> .SS), lines in
# ``` fences left alone.  A page without a "## NAME" section gets one from
# the title line, and the NAME line is written "name \- what" so that
# whatis/apropos can index it.  Prints each file written.
set -eu
out=$1; shift

# tables -- Markdown tables become tagged paragraphs ("term" then ": text",
# a definition list): a table's columns are squeezed to a few characters
# each at 80 columns, a tagged paragraph keeps the text's full width.  The
# first cell is the tag; the middle cells follow it in parentheses, each
# after its column's heading ("default `64`"), except a column headed
# "type"; the last cell is the paragraph.  Cells split at | outside `code`.
tables() {
	awk '
	function cells(line, out,   n, i, c, code, cur) {
		sub(/^[ \t]*\|/, "", line); sub(/\|[ \t]*$/, "", line)
		n = 0; cur = ""; code = 0
		for (i = 1; i <= length(line); i++) {
			c = substr(line, i, 1)
			if (c == "`") code = !code
			if (c == "|" && !code) { out[++n] = trim(cur); cur = ""; continue }
			cur = cur c
		}
		out[++n] = trim(cur)
		return n
	}
	function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
	function row(line,   c, n, i, tag, mid) {
		n = cells(line, c)
		tag = c[1]; mid = ""
		for (i = 2; i < n; i++) {
			if (c[i] == "") continue
			mid = mid (mid == "" ? "" : ", ") \
			    (tolower(head[i]) == "type" || c[i] == "required" ? "" : head[i] " ") c[i]
		}
		if (mid != "") tag = tag " (" mid ")"
		print tag; print ": " (n > 1 ? c[n] : ""); print ""
	}
	/^(```|~~~)/ { fence = !fence }
	!fence && state == 0 && /^[ \t]*\|/ { hn = cells($0, head); state = 1; next }
	state == 1 && /^[ \t]*\|[-:| \t]+$/ { state = 2; print ""; next }
	state == 2 && /^[ \t]*\|/ { row($0); next }
	state != 0 { state = 0 }
	{ print }'
}
mkdir -p "$out"
# Reproducible: dpkg-buildpackage sets SOURCE_DATE_EPOCH from the changelog.
date=$(date -u -d "@${SOURCE_DATE_EPOCH:-$(date +%s)}" +%Y-%m-%d)
for in in "$@"; do
	h1=$(sed -n '1s/^# *//p' "$in")
	name=$(printf '%s' "$h1" | sed -n 's/^\([^( ]*\)(\([0-9]\)).*/\1/p')
	name=$(printf "%s" "$name" | tr "[:upper:]" "[:lower:]")
	sect=$(printf '%s' "$h1" | sed -n 's/^\([^( ]*\)(\([0-9]\)).*/\2/p')
	what=$(printf '%s' "$h1" | sed -n 's/^[^ ]* *[—-]\{1,2\} *//p')
	if [ -z "$name" ] || [ -z "$sect" ]; then
		echo "md2man: $in:1: expected \"# NAME(SECTION)\" as the first line" >&2
		exit 1
	fi
	title=$(printf '%s' "$name" | tr '[:lower:]' '[:upper:]')
	{
		if ! grep -qi '^## *name *$' "$in" && [ -n "$what" ]; then
			printf '# NAME\n\n%s — %s\n\n' "$name" "$what"
		fi
		awk 'NR == 1 { next }
		     /^(```|~~~)/ { fence = !fence }
		     !fence && /^##/ { sub(/^#/, "") }
		     { print }' "$in" | tables
	} | lowdown -s -Tman --parse-no-intraemph -M "title=$title" \
	    -M "section=$sect" -M "source=moat" -M "date=$date" |
	awk '# lowdown puts a heading on the line after .SH/.SS: join them.
	     pend != "" { h = $0; if (pend == ".SH" && h !~ /\\/) h = toupper(h);
	                  print pend " " h; sec = h; pend = ""; next }
	     $0 == ".SH" || $0 == ".SS" { pend = $0; next }
	     sec == "NAME" && !done && /—/ { sub(/ *— */, " \\- "); done = 1 }
	     { print }' >"$out/$name.$sect.tmp"
	mv "$out/$name.$sect.tmp" "$out/$name.$sect"
	echo "$out/$name.$sect"
done
