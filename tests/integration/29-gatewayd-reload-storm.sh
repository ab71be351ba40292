#!/usr/bin/env bash
# A commit never makes a guest's query fail: 50 reloads back to back that
# alternately widen web's allow list (open.test added) and narrow it
# again, while web asks for a.github.test and pypi.org, which both lists
# allow, one query after another.  Every answer is NOERROR (no SERVFAIL, no
# timeout), the name the narrowing takes away is refused afterwards, and
# no child is restarted (dnsd,
# the nflog reader and the proxy workers take each commit in place).
# Not timed: the numbers are bench/reload-storm.sh's.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

RELOADS=${RELOADS:-50}
topo_up || { not_ok "topology"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_services
topo_bg "$NS_INET" upstream python3 tests/harness/dns-upstream.py \
	--addr 203.0.113.53 --log "$TOPO_TMP/upstream.queries"
topo_wait_port "$NS_INET" 203.0.113.53 53
chmod 711 "$TOPO_TMP"
cp examples/demo.conf "$GW_CONF"
# No per-sandbox DNS rate: a drop over it would look like a timeout.
sed -i 's|dns:   { upstream = \[ "203.0.113.53" \]; };|dns:   { upstream = [ "203.0.113.53" ]; rate = 0; };|' "$GW_CONF"
# pypi.org has ports of its own: every answer of it waits for the parent
# (no memory of the set in dnsd), so some are in flight at each commit.
sed -i 's|allow = \[ "pypi.org", "\*.github.test" \]|allow = [ "pypi.org:tcp/443", "*.github.test" ]|' "$GW_CONF"
NARROW='allow = [ "pypi.org:tcp/443", "*.github.test" ]'
WIDE='allow = [ "pypi.org:tcp/443", "*.github.test", "open.test" ]'
grep -qF "$NARROW" "$GW_CONF" || { not_ok "web's list is set"; exit 1; }

gw_start; expect_eq "gatewayd starts" 0 $?
# The two files a reload alternates between (gw_start gave $GW_CONF its
# state folder).
cp "$GW_CONF" "$TOPO_TMP/narrow.conf"
python3 -c 'import sys; p, a, b = sys.argv[1:]
t = open(p).read(); assert a in t; open(p, "w").write(t.replace(a, b))' \
	"$TOPO_TMP/narrow.conf" "$NARROW" "$WIDE"
mv "$TOPO_TMP/narrow.conf" "$TOPO_TMP/wide.conf"
cp "$GW_CONF" "$TOPO_TMP/narrow.conf"
dnsd_up() { [ -n "$(gw_child_pid dnsd)" ]; }
wait_for 30 dnsd_up
topo_wait_port "$NS_GW" $GW_ADDR 53
dig_web() { in_ns "$TOPO-web" dig +time=2 +tries=1 @$GW_ADDR "$1" A; }
expect_match "web resolves a.github.test" 'status: NOERROR' "$(dig_web a.github.test)"
pids() { gw_ctl status --json | python3 -c 'import json,sys
print(" ".join("%s=%s" % (c["name"], c["pid"]) for c in json.load(sys.stdin)["children"]))'; }
before=$(pids)
expect_match "dnsd, nflog and proxy run" 'dnsd=[0-9]+.*' "$before"

STOP=$TOPO_TMP/stop
for name in a.github.test pypi.org open.test; do
	in_ns "$TOPO-web" python3 tests/harness/dns-loop.py --server $GW_ADDR \
		--name $name --stop "$STOP" --out "$TOPO_TMP/loop.$name" \
		--interval 0.001 >/dev/null &
	TOPO_PIDS+=($!)
done
failed=0
for i in $(seq "$RELOADS"); do
	if [ $((i % 2)) -eq 1 ]; then cp "$TOPO_TMP/wide.conf" "$GW_CONF"
	else cp "$TOPO_TMP/narrow.conf" "$GW_CONF"; fi
	gw_ctl reload >/dev/null || failed=$((failed + 1))
done
: >"$STOP"
expect_eq "every reload was taken" 0 "$failed"
for name in a.github.test pypi.org open.test; do
	wait_for 10 test -s "$TOPO_TMP/loop.$name"
done
n() { sed -n "s/.*\\b$1 \\([0-9]*\\).*/\\1/p" <<<"$r"; }
for name in a.github.test pypi.org; do
	r=$(cat "$TOPO_TMP/loop.$name")
	echo "# $name during $RELOADS reloads: $r"
	q=$(n queries)
	if [ "${q:-0}" -ge "$RELOADS" ]; then ok "web kept asking for $name ($q queries)"
	else not_ok "web kept asking for $name" "$r"; fi
	expect_eq "$name: no SERVFAIL (both lists allow it)" 0 "$(n servfail)"
	expect_eq "$name: no query timed out" 0 "$(n timeout)"
	expect_eq "$name: every answer was NOERROR" "$q" "$(n noerror)"
done
# open.test is allowed by every other list: NOERROR or REFUSED, never
# a failure.
r=$(cat "$TOPO_TMP/loop.open.test")
echo "# open.test during $RELOADS reloads: $r"
expect_eq "open.test (taken away and given back): no SERVFAIL" 0 "$(n servfail)"
expect_eq "open.test: no query timed out" 0 "$(n timeout)"
expect_eq "open.test: only NOERROR and REFUSED" "$(n queries)" \
	"$(( $(n noerror) + $(n refused) ))"

# The storm ended on a narrowing: the name it takes away is refused.
expect_ok "the list in force is the narrow one" grep -qF "$NARROW" "$GW_CONF"
expect_match "open.test is refused afterwards" 'status: REFUSED' "$(dig_web open.test)"
expect_match "a.github.test still resolves" 'status: NOERROR' "$(dig_web a.github.test)"
expect_eq "no child was restarted (same pids)" "$before" "$(pids)"
expect_eq "every other reload narrowed web" $((RELOADS / 2)) \
	"$(grep -c 'allowlist web: narrowed; its set emptied' "$GW_LOG")"
expect_eq "dnsd never answered SERVFAIL for a refused set update" "" \
	"$(grep 'set update refused; SERVFAIL' "$GW_LOG")"
tap_done
