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

# The namespace tests spend most of their time waiting (timeouts running
# out, servers answering), so MOAT_TEST_JOBS of them (default 3) run at
# once, each in its own namespaces under its own run prefix.  Those that
# boot QEMU guests (they source guest-lib.sh) keep a core busy under TCG:
# one of them runs at a time, started first as they take longest (a
# test that boots QEMU another way says so with a line "# run: guest").  A test
# whose file says "# run: alone" measures timing or rate limits: it runs
# when nothing else does, at the end.  Results print in file order, each
# with its time in seconds.
JOBS=${MOAT_TEST_JOBS:-3}
run_one() {	# run_one TEST -- output to $log/NAME.out, status to .st, time to .s
	local t=$1 b out t0 st
	b=$(basename "$t"); out=$log/$b.out; t0=$(date +%s)
	timeout --kill-after=10 900 bash "$t" >"$out" 2>&1; st=$?
	echo $(( $(date +%s) - t0 )) >"$log/$b.s"
	echo $st >"$log/$b.st"
}
report_one() {	# report_one TEST
	local b out st
	b=$(basename "$1"); out=$log/$b.out; st=$(cat "$log/$b.st")
	echo "# ran $1 ($(cat "$log/$b.s") s)"
	grep -E '^(not )?ok |^#   ' "$out" | sed 's/^/  /'
	[ "$st" -ne 0 ] && tail -15 "$out" | sed 's/^/  | /'
	count "$b" "$st" "$out"
}
done_yet() { [ -e "$log/$(basename "$1").st" ]; }
integration() {
	local t all=() guests=() others=() alone=() guest= r=0
	# moat's system users, once, before tests that each make sure of them
	# run side by side.
	bash gatewayd/install-users.sh
	for t in tests/integration/*.sh; do
		[ -e "$t" ] || continue
		if grep -q '^# run: alone' "$t"; then alone+=("$t"); continue; fi
		all+=("$t")
		if grep -q 'guest-lib\.sh\|doc-run\.sh\|^# run: guest' "$t"; then guests+=("$t"); else others+=("$t"); fi
	done
	while [ ${#guests[@]} -gt 0 ] || [ ${#others[@]} -gt 0 ]; do
		while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
		if [ ${#guests[@]} -gt 0 ] && { [ -z "$guest" ] || done_yet "$guest"; }; then
			guest=${guests[0]}; guests=("${guests[@]:1}"); run_one "$guest" &
		elif [ ${#others[@]} -gt 0 ]; then
			t=${others[0]}; others=("${others[@]:1}"); run_one "$t" &
		else
			wait -n	# only guest tests are left: wait for the one running
		fi
		# Print, in file order, every test that has finished.
		while [ $r -lt ${#all[@]} ] && done_yet "${all[$r]}"; do
			report_one "${all[$r]}"; r=$((r + 1))
		done
	done
	wait
	while [ $r -lt ${#all[@]} ]; do report_one "${all[$r]}"; r=$((r + 1)); done
	for t in "${alone[@]}"; do run_one "$t"; report_one "$t"; done
}

if [ $unit_only -eq 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "not ok - integration tests need root (network namespaces)"; failed=$((failed + 1))
	else
		integration
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
