#!/usr/bin/env bash
# run.sh -- run unit test binaries (cmocka, TAP output) and the namespace
# integration tests (tests/integration/*.sh, TAP output), count every
# check, and end with one line: "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
unit_only=0
[ "${1:-}" = "--unit-only" ] && { unit_only=1; shift; }
passed=0; failed=0
log=$(mktemp -d /tmp/moat-tests.XXXXXX)

count() {	# count NAME STATUS OUTFILE
	local p f
	p=$(grep -cE '^ok ' "$3"); f=$(grep -cE '^not ok ' "$3")
	if [ "$2" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1; echo "not ok - $1 exited $2 without reporting a failure"
	fi
	passed=$((passed + p)); failed=$((failed + f))
	printf '# %-40s %3d passed, %d failed\n' "$1" "$p" "$f"
}

for t in "$@"; do
	out=$log/$(basename "$t").out
	CMOCKA_MESSAGE_OUTPUT=TAP timeout 300 "$t" >"$out" 2>&1; st=$?
	grep -E '^(not )?ok ' "$out" | sed 's/^/  /' ; grep -E '^# ' "$out" | grep -v '^# ok' | sed 's/^/  /' | head -40
	count "$(basename "$t")" $st "$out"
done

if [ $unit_only -eq 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "not ok - integration tests need root (network namespaces)"; failed=$((failed + 1))
	else
		for t in tests/integration/*.sh; do
			[ -e "$t" ] || continue
			out=$log/$(basename "$t").out
			echo "# running $t"
			timeout --kill-after=10 900 bash "$t" >"$out" 2>&1; st=$?
			grep -E '^(not )?ok |^#   ' "$out" | sed 's/^/  /'
			[ $st -ne 0 ] && tail -15 "$out" | sed 's/^/  | /'
			count "$(basename "$t")" $st "$out"
		done
		# Namespaces of runs whose process is gone (a run still going,
		# e.g. a second make check, is not a leak).
		left=$(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^moat[0-9]+-' |
			while read -r ns; do p=${ns#moat}; p=${p%%-*}
				kill -0 "$p" 2>/dev/null || echo "$ns"; done)
		if [ -n "$left" ]; then
			echo "not ok - namespaces left behind: $left"; failed=$((failed + 1))
		else
			echo "ok - no namespaces left behind"; passed=$((passed + 1))
		fi
	fi
fi
rm -rf "$log"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
