# tap.sh -- tiny TAP reporting for integration tests (sourced).
# Every check prints "ok - what" or "not ok - what"; tests/run.sh counts them.

TAP_FAILED=0
TAP_COUNT=0

ok() {		# ok DESCRIPTION -- record a pass
	TAP_COUNT=$((TAP_COUNT + 1)); echo "ok - $*"
}
not_ok() {	# not_ok DESCRIPTION [DETAIL] -- record a failure
	TAP_COUNT=$((TAP_COUNT + 1)); TAP_FAILED=$((TAP_FAILED + 1))
	echo "not ok - $1"; [ -n "${2:-}" ] && printf '#   %s\n' "$2" | head -20
	return 0
}
expect_ok() {	# expect_ok DESCRIPTION cmd... -- passes if cmd exits 0
	local d=$1; shift; local out
	if out=$("$@" 2>&1); then ok "$d"; else not_ok "$d" "$out"; fi
}
expect_fail() {	# expect_fail DESCRIPTION cmd... -- passes if cmd exits non-zero
	local d=$1; shift; local out
	if out=$("$@" 2>&1); then not_ok "$d" "unexpectedly succeeded: $out"; else ok "$d"; fi
}
expect_eq() {	# expect_eq DESCRIPTION WANT GOT
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "want [$2] got [$3]"; fi
}
expect_match() { # expect_match DESCRIPTION REGEX TEXT
	if printf '%s' "$3" | grep -Eq -- "$2"; then ok "$1"; else not_ok "$1" "no /$2/ in: $3"; fi
}
# wait_for SECONDS cmd... -- poll cmd (a command or shell function) every
# 0.1 s until it succeeds (return 0) or SECONDS have passed (return 1).
# Tests wait on conditions, never on fixed sleeps: the machine may be loaded.
wait_for() {
	local end=$((EPOCHSECONDS + $1)); shift
	until "$@"; do
		[ "$EPOCHSECONDS" -lt "$end" ] || return 1
		sleep 0.1
	done
}
tap_done() {	# exit status of the test script
	[ "$TAP_COUNT" -gt 0 ] || { echo "not ok - test ran no checks"; exit 1; }
	[ "$TAP_FAILED" -eq 0 ]
}
