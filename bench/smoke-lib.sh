# smoke-lib.sh -- sourced by tests/integration/09-bench-smoke-*.sh: run a
# bench in its smoke mode (BENCH_SMOKE=1: one round, seconds-long loads,
# its first moat row and first peer row, nothing written) and check what
# it printed.  A bench here is a bench/*.sh that starts with "#!"; the
# sourced helpers (this file, gen-conf.sh) do not.
#
#   smoke_run NAME SECONDS [VAR=VALUE...] [-- ARGS...]
#	runs bench/NAME.sh, its output in $SMOKE_OUT; one check: it exited 0
#	within SECONDS
#   smoke_row DESCRIPTION REGEX
#	one check: a line of $SMOKE_OUT matches REGEX (extended)
# A row is proved by a number that is not zero where a bench measured
# something, never by the exit status alone: NZ below matches one.

# A number with a digit other than 0 in it (12, 0.4, 3.0), as a field.
NZ='[0-9]*\.?[0-9]*[1-9][0-9]*\.?[0-9]*'
SMOKE_DIR=$(mktemp -d /tmp/moat-bench-smoke.XXXXXX)
trap 'rm -rf "$SMOKE_DIR"' EXIT

smoke_run() {
	local name=$1 secs=$2 envs=() st t0; shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
	[ "${1:-}" = -- ] && shift
	local what="${envs[*]} bench/$name.sh $*"
	what=${what# }; what=${what% }
	SMOKE_OUT=$SMOKE_DIR/$name.$EPOCHREALTIME.out
	t0=$EPOCHSECONDS
	timeout --kill-after=10 "$secs" env BENCH_SMOKE=1 "${envs[@]}" \
		bash "bench/$name.sh" "$@" >"$SMOKE_OUT" 2>&1; st=$?
	echo "# $what: exit $st in $((EPOCHSECONDS - t0)) s"
	if [ $st -eq 0 ]; then
		ok "$what runs in smoke mode"
	else
		not_ok "$what runs in smoke mode" \
			"exit $st$([ $st = 124 ] && echo " (over $secs s)"); last lines: $(tail -8 "$SMOKE_OUT" | tr '\n' '|')"
	fi
}

smoke_row() {
	if grep -Eq -- "$2" "$SMOKE_OUT"; then
		ok "$1"
	else
		not_ok "$1" "no /$2/ in: $(tail -12 "$SMOKE_OUT" | tr '\n' '|')"
	fi
}

# smoke_benches -- every bench, by name (no folder, no .sh), one a line
smoke_benches() {
	local f
	for f in bench/*.sh; do
		head -c2 "$f" | grep -q '^#!' && basename "$f" .sh
	done
}
