#!/usr/bin/env bash
# examples/prometheus-alerts.yml: valid for Prometheus (promtool check
# rules), each alert fires on the series that should raise it and stays
# quiet on a healthy box (promtool test rules with
# tests/promtool/moat-alerts.test.yml), and every metric it names is one
# gatewayd serves.  No namespace, no daemon: promtool only.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh

P=$(bash tests/harness/promtool.sh build/guest-cache/prometheus) ||
	{ not_ok "promtool (Debian's prometheus package, cached)" "needs apt access once"; tap_done; exit 1; }
ok "promtool: $P"
out=$("$P" check rules examples/prometheus-alerts.yml 2>&1)
expect_match "promtool check rules: the example is valid" "SUCCESS: [0-9]+ rules found" "$out"
out=$("$P" test rules tests/promtool/moat-alerts.test.yml 2>&1)
expect_match "promtool test rules: each alert fires when it should, none on a healthy box" "SUCCESS" "$out"
[ "$TAP_FAILED" -gt 0 ] && printf '%s\n' "$out" | head -30 | sed 's/^/# /'

for a in MoatPolicyDrift MoatCanaryBreach MoatCanaryStale MoatGuestNotContained \
	MoatGuestVerdictStale MoatHASplitBrain MoatChildRestartLoop; do
	expect_ok "the example has $a" grep -q "alert: $a\$" examples/prometheus-alerts.yml
	expect_ok "the rules test checks $a" grep -q "alertname: $a\$" tests/promtool/moat-alerts.test.yml
done

# Every metric an alert names is printed by gatewayd's sources.  The
# canary's two are added with the canary (gateway.canary); until then
# the rules test above is what checks their alerts.
missing=$(grep -o 'moat_[a-z_]*' examples/prometheus-alerts.yml | sort -u | while read -r m; do
	case $m in moat_canary_verdict|moat_canary_last_run_seconds) continue ;; esac
	grep -rqF --include='*.c' "$m" gatewayd || echo "$m"
done)
expect_eq "every metric the alerts name is one gatewayd serves" "" "$missing"
tap_done
