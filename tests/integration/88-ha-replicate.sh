#!/usr/bin/env bash
# Replication between the two boxes of a pair (gateway.ha.peer): each
# allowlist set element a DNS answer opens on the master reaches the
# backup's sets over TLS with pinned keys, so that after a failover the
# guest reaches the address again without a new DNS query.  The backup
# admits each element as it admits dnsd's: a peer's private-range
# element is refused, and a connection with a key other than the pinned
# one is refused and logged.  No keepalived: roles are given by hand
# (`gatewayd ctl ha`) and the gateway address is moved by hand.
#
#   guest ns "web": br0 10.77.0.10 -- ga --> box A mt-web (moat0)
#                                  -- gb --> box B mt-web (moat0)
#   A up0 203.0.113.1 <-> inet eth0     B up0 198.51.100.1 <-> inet eth1
#   A peer0 192.168.200.1 <-- replication, TLS --> B peer0 192.168.200.2
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh
. tests/harness/dns-lib.sh

. tests/harness/ha-repl.sh

repl_up

# --- the keys in moat.conf ------------------------------------------------
expect_match "-nv prints the replication keys" \
	"ha: \{ enabled = true; listen = \"192.168.200.1:7444\"; peer = \"192.168.200.2:7444\"; peer_key = \"$(pin b)\";" \
	"$(in_ns "$NS_A" build/gatewayd -nv -c "$TOPO_TMP/A/moat.conf" 2>&1)"
sed 's|peer_key = "sha256:[0-9a-f]*";||' "$TOPO_TMP/A/moat.conf" >"$TOPO_TMP/bad.conf"
expect_match "listen and peer without peer_key: an error naming file:line" \
	"bad.conf:[0-9]+: gateway.ha: expected listen, peer, peer_key, cert and key together" \
	"$(in_ns "$NS_A" build/gatewayd -n -c "$TOPO_TMP/bad.conf" 2>&1)"
sed 's|peer_key = "sha256:[0-9a-f]*";|peer_key = "sha256:12ab";|' "$TOPO_TMP/A/moat.conf" >"$TOPO_TMP/bad.conf"
expect_match "a short peer_key: an error naming file:line" \
	"bad.conf:[0-9]+: .*peer_key: expected \"sha256:\" and 64 hex digits" \
	"$(in_ns "$NS_A" build/gatewayd -n -c "$TOPO_TMP/bad.conf" 2>&1)"
sed 's|listen = "192.168.200.1:7444"|listen = "10.77.0.1:7444"|' "$TOPO_TMP/A/moat.conf" >"$TOPO_TMP/bad.conf"
expect_match "listen on the sandbox side: refused" \
	"bad.conf:[0-9]+: gateway.ha: listen: expected an address on the management network" \
	"$(in_ns "$NS_A" build/gatewayd -n -c "$TOPO_TMP/bad.conf" 2>&1)"

# --- two boxes, A master ---------------------------------------------------
box_start A "$NS_A"; expect_eq "box A's gatewayd starts" 0 $?
box_start B "$NS_B"; expect_eq "box B's gatewayd starts" 0 $?
ctl A ha master >/dev/null; ctl B ha backup >/dev/null
ip -n "$NS_A" addr add $GW_ADDR/24 dev moat0
expect_fail "B's allow_web is empty at first" has_elem "$NS_B" 203.0.113.10
topo_bg "$NS_B" monB python3 -u -c 'import ctypes, subprocess, time
p = subprocess.Popen(["stdbuf", "-oL", "nft", "monitor", "elements"], stdout=subprocess.PIPE, text=True,
    preexec_fn=lambda: ctypes.CDLL(None).prctl(1, 15))
for l in p.stdout:
    print(time.time_ns(), l.strip(), flush=True)'
# Ready once it reports an element of the test's own, in a table of its own.
in_ns "$NS_B" nft -f - <<'NFT'
table inet moattest { set probe { type ipv4_addr; }; }
NFT
mon_ready() {
	in_ns "$NS_B" nft flush set inet moattest probe
	in_ns "$NS_B" nft add element inet moattest probe '{ 192.0.2.77 }'
	grep -q 192.0.2.77 "$TOPO_TMP/monB.log"
}
expect_ok "B's element monitor runs" wait_for 10 mon_ready
in_ns "$NS_B" nft delete table inet moattest
q0=$(grep -c 'pypi.org' "$DNS_UPLOG" 2>/dev/null)
t0=$(date +%s%N)
ans=$(in_ns "$G" dig @$GW_ADDR +time=2 +tries=2 +short pypi.org A)
a0=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_eq "the guest resolves pypi.org through A" 203.0.113.10 "$ans"
expect_ok "A opened it" has_elem "$NS_A" 203.0.113.10
# The lag: from the guest's query to the element in B's kernel, as B's
# `nft monitor` reports it (each line stamped when read), next to the
# time the guest waited for its answer.
stamp_of() {	# stamp_of ADDR -- when B's monitor saw ADDR added, ns
	awk -v a="$1" 'index($0, a) && /add element/ {print $1; exit}' "$TOPO_TMP/monB.log"
}
expect_ok "the element lands on B" wait_for 5 has_elem "$NS_B" 203.0.113.10
lag=$(( ($(stamp_of 203.0.113.10) - t0) / 1000000 ))
expect_ok "within 2 s (the first, with the TLS connection made)" test "$lag" -le 2000
echo "# lag: query sent -> answer $a0 ms, -> element in B's kernel $lag ms (first, connecting)"
t1=$(date +%s%N)
ans=$(in_ns "$G" dig @$GW_ADDR +time=2 +tries=2 +short short.github.test A)
a1=$(( ($(date +%s%N) - t1) / 1000000 ))
expect_ok "a second name lands on B" wait_for 5 has_elem "$NS_B" 203.0.113.13
lag=$(( ($(stamp_of 203.0.113.13) - t1) / 1000000 ))
expect_ok "within 2 s" test "$lag" -le 2000
echo "# lag: query sent -> answer $a1 ms, -> element in B's kernel $lag ms (connected)"
expect_match "with its promise: a timeout on B too" "203.0.113.10 timeout" \
	"$(in_ns "$NS_B" nft list set inet moat allow_web)"
expect_eq "the guest reaches it through A" connected "$(tcp_probe "$G" $INET_HTTP 2222)"
expect_match "A counts what it sent" "^ha peer +192.168.200.2:7444: [1-9][0-9]* elements sent, 0 dropped" \
	"$(ctl A status | grep '^ha peer')"
expect_match "B counts what it took" "[1-9][0-9]* received, 0 refused, 0 unknown keys" \
	"$(ctl B status | grep '^ha peer')"
expect_match "--json too" '"ha_replication":\{"peer":"192.168.200.1:7444",' "$(ctl B status --json)"

# --- registrations: what A (master) applied, B applies too ------------------
H1HEX=$(pin h1 | cut -d: -f2)
host_req() {	# host_req BOX REQUEST... -- h1 asks box A or B
	local a=192.168.200.1 k=a
	[ "$1" = B ] && { a=192.168.200.2; k=b; }
	shift
	in_ns "$NS_A" build/gatewayd register --box $a:7443 --ca "$PKI/$k.crt" \
		--cert "$PKI/h1.crt" --key "$PKI/h1.key" "$@" 2>&1
}
dropin() { [ -f "$TOPO_TMP/$1/sandboxes.d/$2.conf" ]; }
has_sb() { ctl "$1" sandboxes 2>/dev/null | grep -q "^$2 "; }
out=$(host_req A register s1 10.77.0.70 52:54:00:aa:00:01 allowlist allow=pypi.org); rc=$?
expect_eq "h1 registers s1 with A (master)" 0 $rc; [ $rc = 0 ] || echo "# $out"
expect_ok "A has it" has_sb A s1
expect_ok "B has it too, its own drop-in" wait_for 5 dropin B s1
expect_ok "and applied" wait_for 5 has_sb B s1
expect_match "B audits it as h1's registration" '"event":"registration","host":"h1".*"sandbox":"s1"' \
	"$(cat "$TOPO_TMP/B-audit.log")"
ans=$(peer_line a "reg $H1HEX register s8 10.77.0.20 52:54:00:aa:00:08 none")
expect_match "a forwarded registration outside h1's pool is refused by B's own check" "^error .*pool" "$ans"
expect_fail "and not written" dropin B s8
ans=$(peer_line a "reg $(pin wrong | cut -d: -f2) register s9 10.77.0.71 52:54:00:aa:00:09 none")
expect_eq "one with a key no host has is refused" "error unknown host key" "$ans"
expect_fail "and not written" dropin B s9

# --- failover: B master, the guest's cached answer works -----------------
ctl A ha backup >/dev/null; ctl B ha master >/dev/null
ip -n "$NS_A" addr del $GW_ADDR/24 dev moat0
ip -n "$NS_B" addr add $GW_ADDR/24 dev moat0
ip -n "$G" neigh flush all
expect_eq "after failover the guest reaches 203.0.113.10 through B" connected \
	"$(tcp_probe "$G" $INET_HTTP 2222)"
expect_eq "without a new DNS query" "$q0" "$(( $(grep -c 'pypi.org' "$DNS_UPLOG") - 1 ))"
expect_eq "through B indeed (the guest's router is B's bridge)" \
	"$(ip -n "$NS_B" -br link show moat0 | awk '{print $3}')" \
	"$(ip -n "$G" neigh show $GW_ADDR | awk '{print $5}')"

# --- the backup sends nothing -----------------------------------------------
# A, backup now, answers a query (the address moved back to it for a
# moment, its role unchanged): it opens the name for itself, sends nothing.
ip -n "$NS_B" addr del $GW_ADDR/24 dev moat0
ip -n "$NS_A" addr add $GW_ADDR/24 dev moat0
ip -n "$G" neigh flush all
sent_a=$(ctl A status | sed -n 's/.*: \([0-9]*\) elements sent.*/\1/p')
in_ns "$G" dig @$GW_ADDR +time=2 +tries=1 +short deep.x.github.test A >/dev/null
expect_ok "A (backup) opened deep.x.github.test for itself" has_elem "$NS_A" 203.0.113.11
sleep 1
expect_fail "but a backup sends nothing to B" has_elem "$NS_B" 203.0.113.11
expect_eq "and counts nothing sent" "$sent_a" "$(ctl A status | sed -n 's/.*: \([0-9]*\) elements sent.*/\1/p')"
ip -n "$NS_A" addr del $GW_ADDR/24 dev moat0
ip -n "$NS_B" addr add $GW_ADDR/24 dev moat0
ip -n "$G" neigh flush all

out=$(host_req B remove s1); rc=$?
expect_eq "h1 removes s1 through B, the master now" 0 $rc
expect_ok "A removes it too" wait_for 5 bash -c "! test -f '$TOPO_TMP/A/sandboxes.d/s1.conf'"
expect_ok "and A no longer has it" wait_for 5 bash -c "! build/gatewayd ctl -s '${SOCK[A]}' sandboxes | grep -q '^s1 '"

# --- a connection with a key B does not pin --------------------------------
ans=$(peer_line wrong "elem web 60000 plain - 203.0.113.21")
expect_eq "a key other than peer_key gets no answer" "" "$(grep -v '^error unknown peer key' <<<"$ans")"
expect_fail "and opens nothing" has_elem "$NS_B" 203.0.113.21
expect_match "B logs the refused key" "ha replication: connection with an unknown key refused: sha256:$(pin wrong | cut -d: -f2)" \
	"$(cat "$TOPO_TMP/B-gatewayd.log")"
expect_match "and audits it" '"event":"ha-peer-refused"' "$(cat "$TOPO_TMP/B-audit.log")"
expect_match "ctl status counts it" "1 unknown keys" "$(ctl B status | grep '^ha peer')"

# --- a peer (the right key) sending a private range -------------------------
ans=$(peer_line a "elem web 60000 plain - 192.168.77.2,10.77.0.1")
expect_eq "a private-range element from the peer is refused" "error not admitted" "$ans"
expect_fail "192.168.77.2 is not in B's set" has_elem "$NS_B" 192.168.77.2
expect_fail "nor the gateway's own address" has_elem "$NS_B" 10.77.0.1
expect_match "audited" '"event":"ha-element-refused".*"address":"192.168.77.2"' \
	"$(cat "$TOPO_TMP/B-audit.log")"
ans=$(peer_line a "elem locked 60000 plain - 203.0.113.22")
expect_match "an element for a sandbox with egress none is refused" "^error " "$ans"
ans=$(peer_line a "elem web 60000 - tcp/22 203.0.113.23")
expect_match "a port no entry of the sandbox names is refused" "^error " "$ans"
ans=$(peer_line a "elem web 60000 plain - 203.0.113.24")
expect_eq "a public element from the peer is taken" "ok" "$ans"
expect_ok "and is in B's set" has_elem "$NS_B" 203.0.113.24
ans=$(peer_line a "elem web x plain - 203.0.113.25")
expect_match "a malformed line is answered with an error" "^error timeout" "$ans"

# --- the peer down: the master goes on; the element follows later ----------
kill -STOP "${PID[A]}"
in_ns "$G" dig @$GW_ADDR +time=2 +tries=1 +short long.github.test A >/dev/null
expect_ok "B (master) opens while A is stopped" has_elem "$NS_B" 203.0.113.14
kill -CONT "${PID[A]}"
expect_ok "and A has it once it runs again" wait_for 10 has_elem "$NS_A" 203.0.113.14

# --- budgets: the master's egress totals follow it ---------------------------
# web has 64K a day.  Through B (master) it sends 100K: B refuses its new
# flows.  A hears B's total and refuses them as well, before it is master
# again: a failover does not hand the guest a fresh budget.
spent() { in_ns "$1" nft list set inet moat budget_spent 2>/dev/null | grep -q 10.77.0.10; }
expect_fail "A has not refused web's flows yet" spent "$NS_A"
head -c 100000 /dev/zero | in_ns "$G" timeout 5 socat -u - TCP:$INET_HTTP:2223 2>/dev/null
expect_ok "B counts the 100K and refuses web's new flows" wait_for 5 spent "$NS_B"
expect_match "the guest's new connection through B is refused" '^(unreachable|timeout)$' \
	"$(tcp_probe "$G" $INET_HTTP 2222)"
expect_ok "A has B's total within a few seconds, and refuses too" wait_for 5 spent "$NS_A"
ctl B ha backup >/dev/null; ctl A ha master >/dev/null
ip -n "$NS_B" addr del $GW_ADDR/24 dev moat0
ip -n "$NS_A" addr add $GW_ADDR/24 dev moat0
ip -n "$G" neigh flush all
expect_match "after failing back to A the guest's new connection is still refused" '^(unreachable|timeout)$' \
	"$(tcp_probe "$G" $INET_HTTP 2222)"
expect_match "A audited the budget spent" '"event":"egress-budget-spent".*"sandbox":"web"' \
	"$(cat "$TOPO_TMP/A-audit.log")"

# --- the replication processes ran all along -------------------------------
children() { ctl "$1" status --json | python3 -c "import json,sys
c = [x for x in json.load(sys.stdin)['children'] if x['name'] in ('ha-recv', 'ha-send')]
print(' '.join(sorted('%s:%s' % (x['name'], 'up' if x['pid'] > 0 and x['restarts'] == 0 else 'restarted') for x in c)))"; }
expect_eq "A's ha-recv and ha-send never restarted" "ha-recv:up ha-send:up" "$(children A)"
expect_eq "nor B's" "ha-recv:up ha-send:up" "$(children B)"
tap_done
