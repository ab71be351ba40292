#!/usr/bin/env bash
# An active/standby pair under real keepalived and conntrackd (Debian's),
# set up as docs/ha.md says with examples/keepalived.conf,
# examples/conntrackd.conf and the notify and check scripts
# (tests/harness/ha-pair.sh draws the namespaces).
#
# With A master, an open guest keeps a long plain download (port 5001)
# and one through the proxy (port 80, intercepted) going, asks DNS every
# 100 ms and opens a new connection every 100 ms, and tries every 100 ms
# what must stay refused: the LAN host and the boxes' own service on
# each of their addresses.  Then A's gatewayd is killed (-9), and later
# A loses all its links (its power cord): each time B becomes master, the
# plain download continues without a reset (conntrackd replicated it,
# with its masquerade mapping), the proxied one ends (its socket was on
# A), DNS and new connections come back from B, and not one probe of the
# refused ones got through, nor did any packet reach the LAN.  A comes
# back each time and takes over again by priority, and nothing opens
# during that switch either.  containment-check passes from the guest
# before and after the failover.  Last, split brain: the peer link cut,
# both are master, nothing opens, and both say so in ctl status.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh
. tests/harness/dns-lib.sh
. tests/harness/ha-pair.sh

for c in keepalived conntrackd; do
	command -v $c >/dev/null || { not_ok "$c is installed (make deps)"; tap_done; exit 1; }
done
pair_up || { not_ok "the pair's namespaces"; exit 1; }
pair_start
expect_ok "A is master, B backup" pair_is_role A master
expect_ok "B is backup" pair_is_role B backup
expect_ok "A holds the gateway address" pair_has_vip A
expect_ok "and the uplink's" in_ns "$NS_A" ip -4 addr show dev up0 to $UP_VIP/32
resolves() { in_ns "$G" dig @$GW_ADDR +time=2 +tries=1 +short pypi.org A 2>/dev/null |
	grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$'; }
expect_ok "the guest resolves through A" wait_for 10 resolves

containment() {	# containment WHEN -- containment-check from the guest passes
	local out rc
	out=$(in_ns "$G" timeout 90 build/containment-check --json --expect open --no-host-checks \
		--internet $INET_HTTP:80 --target $LAN_HOST --target 192.168.77.1 \
		--target 192.168.77.3 --resolver 203.0.113.53 \
		--treat-as-public 203.0.113.0/24 2>&1); rc=$?
	echo "# containment-check $1: $(printf '%s' "$out" | python3 -c 'import json,sys
r = json.load(sys.stdin)
print("breaches", r["breaches"], "failed controls", r["failed_controls"], "probes", r["probes"])
for x in r["results"]:
    if x["outcome"] in ("BREACH", "FAILED"): print("#  ", x)' 2>&1)"
	expect_eq "containment-check from the guest passes $1" 0 "$rc"
}
containment "with A master"

# failover NAME CMD... -- the watch runs, CMD makes A fail, B takes over.
W=$TOPO_TMP/watch
failover() {
	local name=$1 out=$W-$1.json t0 ms; shift
	pair_watch 18 "$out" --stream proxied=$STREAM_ADDR:80
	expect_ok "$name: the guest's downloads and DNS run before" test -s "$out.ready"
	sleep 2
	t0=$(date +%s%N)
	"$@"
	expect_ok "$name: B becomes master" wait_for 15 pair_is_role B master
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	ok "$name: B is master ${ms} ms after"
	expect_ok "$name: B holds the gateway address" pair_has_vip B
	has_flow() { [ "$(flow_on B)" -ge 1 ]; }
	expect_ok "$name: B's conntrack has the download, at the shared uplink address" \
		wait_for 5 has_flow
	wait "$WATCH_PID"
	echo "# $name: $(cat "$out")"
	check_watch "$name" "$out"
	expect_ok "$name: DNS answers from B" resolves
}
# flow_on X -- established entries in X's conntrack for a download (port
# 5001) at the shared uplink address, in either direction: an entry a box
# picked up mid-stream (a reply arriving first) has them turned round.
flow_on() {
	in_ns "${PAIR_NS[$1]}" conntrack -L -p tcp 2>/dev/null |
		grep " ESTABLISHED .*port=5001 " | grep -c "=$UP_VIP "
}
check_watch() {	# check_watch NAME OUT -- what the guest saw
	local name=$1 out=$2 g
	expect_eq "$name: the plain download continued, no reset, bytes to the end" running \
		"$(pair_watch_get "$out" 'r["stream fwd"]["outcome"] if r["stream fwd"].get("idle_at_end", 9) < 2 else "idle %.1fs at the end" % r["stream fwd"].get("idle_at_end", 0)')"
	g=$(pair_watch_get "$out" '"%.1f" % r["stream fwd"]["max_gap"]')
	expect_ok "$name: its longest stall ${g}s (under 14 s: TCP backs off, 6 s then 12 s)" python3 -c "assert $g < 14"
	expect_match "$name: the download through the proxy ended (its socket was on A)" \
		'^(reset|eof|stalled|idle)' "$(pair_watch_get "$out" 'r["stream proxied"]["outcome"] if r["stream proxied"].get("idle_at_end", 0) < 5 else "idle %.1fs at the end" % r["stream proxied"]["idle_at_end"]')"
	g=$(pair_watch_get "$out" '"%.1f" % r["dns"]["max_gap"]')
	expect_ok "$name: DNS back within ${g}s (under 8 s)" python3 -c "assert $g < 8"
	g=$(pair_watch_get "$out" '"%.1f" % r["connect"]["max_gap"]')
	expect_ok "$name: new connections back within ${g}s (under 8 s)" python3 -c "assert $g < 8"
	refused "$name" "$out"
}
refused() {	# refused NAME OUT -- not one refused probe got through
	expect_eq "$1: not one of the refused probes connected (LAN host, the boxes)" 0 \
		"$(pair_watch_get "$2" 'sum(v["ok"] for k, v in r.items() if k.startswith("forbid"))')"
	expect_ok "$1: and they were probed every 100 ms" test \
		"$(pair_watch_get "$2" 'min(v["ok"] + v["failed"] for k, v in r.items() if k.startswith("forbid"))')" -ge 40
	expect_eq "$1: no packet from the guests reached the LAN" 0 "$(pair_lan_count)"
}
# switchback NAME CMD... -- CMD brings A back; it takes over by priority.
switchback() {
	local name=$1 out=$W-$1-back.json; shift
	pair_watch 16 "$out"
	"$@"
	expect_ok "$name: A comes back as master" wait_for 30 pair_is_role A master
	expect_ok "$name: and B goes back to backup" wait_for 15 pair_is_role B backup
	# The next failover needs B's copy of what A forwards now, however
	# soon it comes: still there past conntrackd's PurgeTimeout (5 s),
	# after which its -t would have flushed B's table.
	sleep 7
	expect_ok "$name: B still holds the download A forwards now, 7 s on" test \
		"$(flow_on B)" -ge 1
	wait "$WATCH_PID"
	echo "# $name, switching back: $(cat "$out")"
	refused "$name, switching back" "$out"
	expect_ok "$name: the guest resolves through A again" wait_for 10 resolves
}

kill_gatewayd() { kill -9 "${PID[A]}"; }
failover "kill -9 A's gatewayd" kill_gatewayd
containment "with B master"
switchback "kill -9 A's gatewayd" pair_box_start A

failover "A's links down" pair_links A down
switchback "A's links down" pair_links A up

# --- split brain -------------------------------------------------------
# The peer link is cut: neither box hears the other, both are master and
# hold the shared addresses.  The policy stands on both (nothing the
# guest may not reach gets through), and each box's ctl status says that
# another master answers for the shared uplink address (gatewayd's ARP
# probe of it on the uplink).  The link back, B is backup again and the
# state clears.
split() { pair_ctl "$1" status 2>/dev/null | grep -q '^split-brain another master '; }
anysplit() { pair_ctl "$1" status 2>/dev/null | grep -q '^split-brain '; }
pair_watch 14 "$W-split.json"
expect_fail "no split brain shown before, not even unconfirmed" anysplit A
before=$(wc -l <"$TOPO_TMP/A-audit.log")
ip -n "$NS_B" link set peer0 down
expect_ok "split brain: B becomes master too" wait_for 15 pair_is_role B master
expect_ok "split brain: A stays master" pair_is_role A master
expect_ok "split brain: A's ctl status shows it" wait_for 5 split A
expect_ok "split brain: and B's" wait_for 5 split B
echo "# $(pair_ctl A status | grep '^split-brain')"
expect_match "split brain: in --json" '"split_brain":true' "$(pair_ctl B status --json)"
prom_split() { grep -q '^moat_ha_split_brain 1$' "$TOPO_TMP/A.prom" 2>/dev/null; }
expect_ok "split brain: in the metrics" wait_for 5 prom_split
expect_match "split brain: in A's audit log" '"event":"ha-split-brain"' "$(cat "$TOPO_TMP/A-audit.log")"
expect_eq "split brain: audited once on A, for the episode" 1 \
	"$(tail -n +$((before + 1)) "$TOPO_TMP/A-audit.log" | grep -c '"event":"ha-split-brain"')"
wait "$WATCH_PID"
echo "# split brain: $(cat "$W-split.json")"
refused "split brain" "$W-split.json"
ip -n "$NS_B" link set peer0 up
expect_ok "split brain over: B is backup again" wait_for 15 pair_is_role B backup
not_split() { ! anysplit A; }
expect_ok "and A's status clears" wait_for 8 not_split
tap_done
