#!/usr/bin/env bash
# run.sh -- the tests that boot real Debian guests (make check-vm), each
# timed; exits non-zero if any fails.
#
# Each test keeps about one core busy under TCG, so on a machine with two
# or more they run side by side (MOAT_VM_JOBS=1 runs them one by one); the
# image they share is built (or found in its cache) first, once.  Output
# prints in file order when each test is done.
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "check-vm: run as root" >&2; exit 1; }
jobs=${MOAT_VM_JOBS:-$(nproc)}
log=$(mktemp -d /tmp/moat-vm-run.XXXXXX)
trap 'rm -rf "$log"' EXIT
t0=$(date +%s)
if ! bash tests/image/build-image.sh >"$log/image.log" 2>&1; then
	echo "not ok - the Debian 12 test image"; tail -20 "$log/image.log"; exit 1
fi
echo "== the test image ready in $(( $(date +%s) - t0 )) s"
run() {	# run TEST -- its output to $log/NAME.out, its status and time
	local b; b=$(basename "$1"); t0=$(date +%s)
	bash "$1" >"$log/$b.out" 2>&1; echo $? >"$log/$b.st"
	echo $(( $(date +%s) - t0 )) >"$log/$b.s"
}
tests=(tests/image/[0-9]*.sh)
for t in "${tests[@]}"; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
	echo "== running $t"
	run "$t" &
done
wait
rc=0
for t in "${tests[@]}"; do
	b=$(basename "$t")
	echo "== $t"
	cat "$log/$b.out"
	[ "$(cat "$log/$b.st")" = 0 ] || rc=1
	echo "== $t: $(cat "$log/$b.s") s"
done
exit $rc
