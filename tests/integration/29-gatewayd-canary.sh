#!/usr/bin/env bash
# The canary: gatewayd's own sandbox, a namespace on the bridge behind an
# isolated port, from which containment-check (as moat-scan, never in the
# gateway's own namespace) scans the policy in force.  On a healthy
# gateway it reports contained: metrics, ctl status, audit.  With
# verify.repair off, an accept rule put by hand into inet moat's forward
# chain for the canary's traffic to the LAN is found by its next scan
# (a short interval here) and shown in the metrics within a minute, with
# an ALERT log line naming the probe.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology comes up"; tap_done; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_services
topo_bg "$NS_INET" cc-dns-inet python3 tests/harness/cc-dns.py \
	203.0.113.53 allowed.test=$INET_HTTP
topo_wait_port "$NS_INET" 203.0.113.53 53
cp examples/demo.conf "$GW_CONF"
PROM=$TOPO_TMP/moat.prom
sed -i -e "s|^  treat_as_public|  verify: { interval = 0; repair = false; };\n  metrics: { textfile = \"$PROM\"; interval = 1; };\n  canary: { address = \"10.77.0.250\"; allow = [ \"allowed.test\" ]; interval = 20; };\n&|" "$GW_CONF"
# The kernel here gives tables the flag owner, which refuses every other
# program's change; as on a kernel without it, nft can make the hole.
export MOAT_TEST_NO_TABLE_OWNER=1
gw_start; expect_eq "gatewayd starts with gateway.canary" 0 $?

audit() { grep -h "\"event\":\"$1\"" "$GW_AUDIT"; }
n_canary() { audit canary | wc -l; }
metric() { grep -E "^$1( |\{)" "$PROM"; }
cjson() { gw_ctl status --json | python3 -c "import json,sys
print(json.load(sys.stdin)['canary']['$1'])"; }

expect_match "the canary's port is on the bridge" "master moat0" "$(ip -n "$NS_GW" link show mt-canary)"
expect_match "... isolated" "isolated on" "$(ip -d -n "$NS_GW" link show mt-canary)"
expect_fail "... and the canary's address is not in the gateway's namespace" \
	grep -q 10.77.0.250 <<<"$(ip -n "$NS_GW" addr)"
expect_match "nft-rules knows it as a sandbox" 'canary' \
	"$(in_ns "$NS_GW" nft list table inet moat | grep -m1 canary)"

# The first scan, a few seconds after start.
wait_for 90 test "$(n_canary)" -ge 1
expect_match "a healthy gateway: contained, audited" \
	'"event":"canary","verdict":"contained","seconds":"[0-9.]+","found":"timer"' "$(audit canary)"
expect_match "... ctl status" '^canary +contained, [0-9]+s ago' "$(gw_ctl status)"
kwdrift=$(gw_ctl status --json | python3 -c "import json,sys
print(json.load(sys.stdin)['kernel_watch']['drift'])")
expect_eq "gatewayd's own plumbing of the canary (port, address, routes) is no drift" "[]" "$kwdrift"
expect_eq "... none audited" "" "$(audit policy-drift)"
expect_eq "... JSON verdict" contained "$(cjson verdict)"
wait_for 3 grep -q '^moat_canary_verdict 1' "$PROM"
expect_eq "... moat_canary_verdict 1" "moat_canary_verdict 1" "$(metric moat_canary_verdict)"
expect_match "... moat_canary_last_run_seconds set" '^moat_canary_last_run_seconds [1-9][0-9]+$' \
	"$(metric moat_canary_last_run_seconds)"
expect_match "... a duration" '^moat_canary_duration_seconds [0-9.]+$' "$(metric moat_canary_duration_seconds)"
dash=$(python3 -c '
import json, re, sys
d = json.load(open("examples/grafana-moat.json"))
names = set()
for p in d["panels"]:
    for t in p["targets"]:
        names |= set(re.findall(r"moat_canary_[a-z_]+", t["expr"]))
have = set(re.findall(r"^# TYPE (moat_[a-z_]+)", open(sys.argv[1]).read(), re.M))
print(len(names), " ".join(sorted(names - have)))' "$PROM")
expect_match "the example Grafana dashboard has canary panels" '^[1-9]' "$dash"
expect_match "... and every canary metric it queries is served" '^[0-9]+ $' "$dash"

# Its own scans' refusals are folded in ctl refused, and listed by name.
out=$(gw_ctl refused)
expect_match "ctl refused: the canary's refusals in one folded line" \
	"^canary +\(folded\) +[0-9]+ \(the canary's own scans" "$out"
expect_eq "... one line only" 1 "$(grep -c '^canary ' <<<"$out")"
out=$(gw_ctl refused canary)
expect_match "ctl refused canary lists them" "^canary +[0-9a-f.:]+" "$out"
expect_fail "... unfolded" grep -q folded <<<"$out"

# The hole: an accept rule put first in inet moat's forward chain for the
# canary's traffic to the LAN.  verify.repair is off, so it stays.
expect_eq "the LAN host is refused to a guest first" unreachable "$(tcp_probe "$TOPO-web" $LAN_HOST 80)"
# Who scans, and where: sampled while the next scans run.
( while :; do
	for p in $(pgrep -f 'containment-check --expect allowlist'); do
		ps -o uid=,netns= -p "$p" | awk '{print $1, $2}'
	done
	sleep 0.2
done ) >"$TOPO_TMP/scans" 2>/dev/null &
SAMPLER=$!
TOPO_PIDS+=("$SAMPLER")
t0=$(date +%s)
expect_ok "nft insert rule inet moat forward ip saddr 10.77.0.250 ip daddr 192.168.77.0/24 accept" \
	in_ns "$NS_GW" nft insert rule inet moat forward ip saddr 10.77.0.250 ip daddr 192.168.77.0/24 accept
bad() { grep -q '^moat_canary_verdict 0' "$PROM"; }
wait_for 60 bad
expect_eq "within a minute: moat_canary_verdict 0" "moat_canary_verdict 0" "$(metric moat_canary_verdict)"
echo "# found after $(( $(date +%s) - t0 )) s"
expect_match "... the breaching probe is the LAN host" \
	'"event":"canary","verdict":"not-contained","seconds":"[0-9.]+","breaches":"[1-9][0-9]*","probe":"BREACH [^"]*192\.168\.77\.2' \
	"$(audit canary | tail -1)"
expect_match "... an ALERT log line naming it" 'ALERT canary: NOT CONTAINED: .*192\.168\.77\.2' "$(cat "$GW_LOG")"
expect_match "... ctl status" '^canary +NOT CONTAINED, .*192\.168\.77\.2' "$(gw_ctl status)"
expect_match "... moat_canary_breaches" '^moat_canary_breaches [1-9]' "$(metric moat_canary_breaches)"
kill "$SAMPLER" 2>/dev/null
gw_ns=$(ip netns exec "$NS_GW" stat -L -c %i /proc/self/ns/net)
expect_match "the scanner ran as moat-scan" "^$(id -u moat-scan) " "$(sort -u "$TOPO_TMP/scans")"
expect_fail "... never as root" grep -q '^0 ' "$TOPO_TMP/scans"
expect_fail "... never in the gateway's namespace ($gw_ns)" grep -qw "$gw_ns" "$TOPO_TMP/scans"

# A reload puts the policy back (whole): a commit, so the canary scans
# again without waiting for its interval, and finds it contained.
h=$(in_ns "$NS_GW" nft -a list chain inet moat forward | grep -F 'ip saddr 10.77.0.250' | sed -n 's/.*# handle \([0-9]*\)$/\1/p')
in_ns "$NS_GW" nft delete rule inet moat forward handle "${h:-0}"
sed -i 's/interval = 20; }/interval = 600; }/' "$GW_CONF"
gw_ctl reload >/dev/null
good() { grep -q '^moat_canary_verdict 1' "$PROM"; }
wait_for 60 good
expect_eq "the hole closed, a reload (interval now 600 s): contained again" "moat_canary_verdict 1" "$(metric moat_canary_verdict)"
expect_match "... the scan was after the commit" '"verdict":"contained","seconds":"[0-9.]+","found":"commit"' "$(audit canary | tail -1)"
tap_done
