#!/usr/bin/env bash
# run.sh -- the tests that boot real Debian guests (make check-vm), each
# timed; exits non-zero if any fails.
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "check-vm: run as root" >&2; exit 1; }
rc=0
for t in tests/image/[0-9]*.sh; do
	t0=$(date +%s)
	echo "== $t"
	bash "$t" || rc=1
	echo "== $t: $(( $(date +%s) - t0 )) s"
done
exit $rc
