#!/usr/bin/env bash
# Every bench starts and measures (part a: DNS, and the coverage check):
# each bench/*.sh runs in its smoke mode (BENCH_SMOKE=1: one round,
# seconds-long loads, its first moat row and its first peer row, nothing
# written) and its output must hold those rows with a number that is not
# zero.  A bench that no longer starts (a config it writes that dnsd
# rejects, a peer missing from tests/deps.sh) is caught here, not at
# measuring time.  Parts b and c take the other benches, so that
# tests/run.sh runs the three beside other tests.  Each bench makes and
# removes its own namespaces (tests/harness/topology.sh).
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. bench/smoke-lib.sh

# Every bench is in one of the parts: a new bench needs its smoke run.
for b in $(smoke_benches); do
	if grep -q "^smoke_run $b " tests/integration/09-bench-smoke-*.sh; then
		ok "bench/$b.sh has a smoke run"
	else
		not_ok "bench/$b.sh has a smoke run" "add smoke_run $b to a tests/integration/09-bench-smoke-*.sh"
	fi
done

# dnsd against dnsmasq; the default config, then with gateway.ipv6 (V6=1),
# the two forms of the moat.conf it writes.
smoke_run dnsd-bench 120
smoke_row "dnsd-bench: a dnsd row with its cache-hit q/s" "^\| dnsd \| $NZ \|"
smoke_row "dnsd-bench: a dnsmasq row with its cache-hit q/s" "^\| dnsmasq \| $NZ \|"
smoke_row "dnsd-bench: dnsmasq against dnsd in the same round" "^\| dnsmasq \| $NZ \("
smoke_run dnsd-bench 120 V6=1
smoke_row "dnsd-bench V6=1: a dnsd row with its cache-hit q/s" "^\| dnsd \| $NZ \|"
smoke_row "dnsd-bench V6=1: a dnsmasq row with its cache-hit q/s" "^\| dnsmasq \| $NZ \|"

smoke_run dns-rules 60
smoke_row "dns-rules: the rules a query and its answer meet" "^\| \*\*total\*\* \| \*\*$NZ\*\* \|"

smoke_run load-bench 180
smoke_row "load-bench: the proxy's requests under load" "^proxy: .* active_req=$NZ .*req_s=$NZ "
smoke_row "load-bench: dnsd's q/s from many sandboxes" "^dns: .* qps=$NZ lost="

smoke_run refused-flood 120
smoke_row "refused-flood: the flood was answered" "^sent $NZ unique names .*, $NZ answered"
smoke_row "refused-flood: the parent's view holds refusals" "^ctl refused web: $NZ entries"
tap_done
