#!/usr/bin/env bash
# The allowlist loop: what a guest was refused shows in `gatewayd ctl
# refused` within a second (names from dnsd, addresses from the kernel),
# an open sandbox's resolved names in `ctl names` (and --as-allow), and
# members see only their own sandboxes.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

UA=mla$$ UB=mlb$$
topo_up || { not_ok "topology"; exit 1; }
topo_members "$UA" "$UB" || { not_ok "members $UA and $UB"; exit 1; }
as() { local u=$1; shift; runuser -u "$u" -- build/gatewayd ctl -s "$GW_SOCK" "$@"; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_services
topo_bg "$NS_INET" upstream python3 tests/harness/dns-upstream.py \
	--addr 203.0.113.53
topo_wait_port "$NS_INET" 203.0.113.53 53
chmod 711 "$TOPO_TMP"
sed -e "s/owner = \"alice\"/owner = \"$UA\"/" -e "s/owner = \"bob\"/owner = \"$UB\"/" \
	examples/demo.conf >"$GW_CONF"
# Interception off: the tcp 80 probes here test the kernel's forward
# chain (the sandboxes' sets), which interception would hand to the proxy.
sed -i 's/intercept = true;/intercept = false;/' "$GW_CONF"
mkdir -p "$TOPO_TMP/sandboxes.d"

gw_start; expect_eq "gatewayd starts" 0 $?
dnsd_up() { [ -n "$(gw_child_pid dnsd)" ]; }
wait_for 30 dnsd_up
topo_wait_port "$NS_GW" $GW_ADDR 53
dig_in() { in_ns "$TOPO-$1" dig +time=2 +tries=1 @$GW_ADDR "$2" A; }
ms() { date +%s%3N; }
# within_1s DESC CMD... -- CMD succeeds within a second (polled every 50 ms)
within_1s() { local d=$1 t0 i; shift; t0=$(ms)
	for i in $(seq 20); do "$@" >/dev/null 2>&1 && break; sleep 0.05; done
	if "$@" >/dev/null 2>&1 && [ $(( $(ms) - t0 )) -le 1000 ]; then
		ok "$d ($(( $(ms) - t0 )) ms)"
	else not_ok "$d" "$(( $(ms) - t0 )) ms"; fi; }

# --- ctl refused ------------------------------------------------------------
out=$(dig_in web open.test)
expect_match "web is refused open.test (REFUSED)" 'status: REFUSED' "$out"
expect_match "the refusal's EDE text says which sandbox, which name and how to ask" \
	'EDE: 15 \(Blocked\): \(sandbox web may not resolve open\.test \(not on the allow list\); ask the operator: gatewayd ctl allow web open\.test\)' "$out"
shows() { gw_ctl refused "$1" | grep -qE "$2"; }
within_1s "the refused name shows in ctl refused within a second" \
	shows web '^web +open\.test +1 .* dns +not on the allow list$'
dig_in web open.test >/dev/null; dig_in web open.test >/dev/null
sleep 1.1	# one report per name and second: the count catches up
dig_in web open.test >/dev/null
counted() { shows web '^web +open\.test +4 '; }
wait_for 5 counted
expect_ok "repeats are counted on one line" counted
expect_eq "kernel: web cannot reach the address" unreachable "$(tcp_probe $TOPO-web $INET_HTTP 80)"
within_1s "the kernel's refusal shows as address:port" \
	shows web "^web +$INET_HTTP:80 .* kernel +not on the allow list\$"
J=$(gw_ctl refused --json web)
expect_match "--json: one document with the entries" \
	'^\[\{"sandbox":"web","dropped":0,"entries":\[\{"what":' "$J"
expect_eq "--json parses" ok "$(echo "$J" | python3 -c 'import json,sys
d=json.load(sys.stdin); e={x["what"]:x for x in d[0]["entries"]}
print("ok" if e["open.test"]["count"]==4 and e["open.test"]["source"]=="dns" else d)')"
expect_eq "--since 1h keeps them" 1 "$(gw_ctl refused web --since 1h | grep -cE '^web +open\.test')"
expect_fail "--since takes a duration" gw_ctl refused web --since soon
expect_match "...and says what one looks like" 'expected a duration' "$(gw_ctl refused web --since soon 2>&1)"
body=$(in_ns "$TOPO-web" curl -s -m 5 -x "http://$GW_ADDR:3128" http://open.test/)
expect_eq "the proxy's 403 says the same" \
	'moat: sandbox web may not reach open.test (name not on the allowlist); ask the operator: gatewayd ctl allow web open.test' "$body"
# ...whole for a 253-character name too (twice the name in one text).
l63=$(printf 'a%.0s' $(seq 63)); long="$l63.$l63.$l63.$(printf 'b%.0s' $(seq 56)).test"
body=$(in_ns "$TOPO-web" curl -s -m 5 -x "http://$GW_ADDR:3128" "http://$long/")
expect_eq "the proxy's 403 carries the whole command for a 253-character name" \
	"moat: sandbox web may not reach $long (name not on the allowlist); ask the operator: gatewayd ctl allow web $long" "$body"
within_1s "the proxy's refusal shows in ctl refused" \
	shows web '^web +open\.test .* proxy +not on the allow list$'

# --- ctl names ----------------------------------------------------------------
expect_match "dev (open) resolves open.test" 'status: NOERROR' "$(dig_in dev open.test)"
expect_match "dev resolves a.github.test" 'status: NOERROR' "$(dig_in dev a.github.test)"
names_has() { gw_ctl names dev | grep -qE '^dev +a\.github\.test +1 .* dns +resolved$'; }
within_1s "ctl names lists what dev resolved" names_has
expect_eq "--as-allow prints a ready allow list" 'allow = [ "a.github.test", "open.test" ];' \
	"$(gw_ctl names dev --as-allow | sed -n 1p)"
expect_eq "names are not refusals" "" "$(gw_ctl refused dev | grep 'open\.test')"

# --- members see their own only -------------------------------------------------
expect_match "web's owner sees web's refusals" 'open\.test' "$(as $UA refused)"
expect_eq "another member does not" "" "$(as $UB refused | grep '^web')"
expect_fail "...may not ask for web" as $UB refused web
expect_fail "...nor for web's names" as $UB names web

# --- bounded memory under a flood of unique refused names --------------------------
expect_eq "dnsd never crashed" "" "$(grep -E 'ERROR: AddressSanitizer|runtime error|seccomp|killed' "$GW_LOG")"
tap_done
