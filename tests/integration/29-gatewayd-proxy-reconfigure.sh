#!/usr/bin/env bash
# A reload that changes only sandboxes (a sandbox added, as provision create
# or a registration does) keeps the running proxy: its open tunnels go on,
# however old.  A tunnel whose own sandbox changed is cut at once.  A change
# to anything else the proxy was started on (a gateway setting) still
# replaces the proxy, and the old one drains; a secret's new value is taken
# in place (its intercepted connections are cut: 28-gatewayd-team).
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology"; exit 1; }
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_guest web 10.77.0.12 52:54:00:00:00:0c mt-web
topo_guest added 10.77.0.13 52:54:00:00:00:0d mt-added
ip -n "$NS_INET" addr add 203.0.113.200/24 dev eth0
topo_bg "$NS_INET" echo-inet socat TCP-LISTEN:7000,fork,reuseaddr PIPE
topo_wait_port "$NS_INET" 0.0.0.0 7000 || not_ok "echo server starts"
chmod 711 "$TOPO_TMP"
mkdir -p "$TOPO_TMP/etc"
printf 'sk-reconf-test-VALUE\n' >"$TOPO_TMP/etc/api.secret"
chmod 600 "$TOPO_TMP/etc/api.secret"

# conf WEB_EGRESS EXTRA_SANDBOX AUDIT_KB [TREAT_AS_PUBLIC]
conf() {
	local treat=${4-'"203.0.113.0/24"'}
	cat >"$GW_CONF" <<EOF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ $treat ];
  state_dir = "$TOPO_TMP/state";
  audit_max_kb = $3;
};
secrets = ( { name = "api"; file = "$TOPO_TMP/etc/api.secret";
  hosts = [ "api.bound.test" ]; placeholder = "moat-api-PLACEHOLDER"; } );
sandboxes = (
  $2
  { name = "dev"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11";
    tap = "mt-dev"; egress = "open"; secrets = [ "api" ]; },
  { name = "web"; mac = "52:54:00:00:00:0c"; address = "10.77.0.12";
    tap = "mt-web"; egress = "$1"; }
);
EOF
}
ADDED='{ name = "added"; mac = "52:54:00:00:00:0d"; address = "10.77.0.13"; tap = "mt-added"; egress = "open"; },'
conf open "" 1024
gw_start; expect_eq "gatewayd starts" 0 $?

# A tunnel through the proxy's CONNECT to the echo server, kept open; each
# step lets it send once more and records the answer.
tunnel() {	# tunnel NAME GUEST STEPS
	local n=$1 g=$2 k gos=()
	for k in $(seq 0 $(($3 - 1))); do gos+=("$TOPO_TMP/go-$n-$k"); done
	ip netns exec $TOPO-$g python3 tests/harness/echo-flow.py 10.77.0.1 3128 \
	    "$TOPO_TMP/res-$n" --connect 203.0.113.200:7000 "${gos[@]}" &
	TOPO_PIDS+=($!)
	wait_for 20 grep -qs before: "$TOPO_TMP/res-$n"
	expect_eq "tunnel $n from $g through the proxy" "before:200 one" "$(cat "$TOPO_TMP/res-$n")"
}
step() {	# step NAME K -- one more echo through tunnel NAME; its answer
	touch "$TOPO_TMP/go-$1-$2"
	wait_for 20 grep -qs "after$2:" "$TOPO_TMP/res-$1"
	sed -n "s/^after$2://p" "$TOPO_TMP/res-$1"
}

tunnel d dev 4
tunnel w web 2
P1=$(gw_proxy_pids)
expect_match "the proxy workers run" '^[0-9]+( [0-9]+)*$' "$P1"

# (A change to anything but sandboxes also starts a new proxy; and every
# proxy, draining or not, cuts at once what the new policy refuses.)
# 1. A sandbox added: the proxy stays, both tunnels go on.
conf open "$ADDED" 1024
expect_ok "reload with a sandbox added" gw_ctl reload
expect_eq "each worker took the new sandboxes in place" "$(wc -w <<<"$P1")" \
	"$(grep -c "proxy [0-9]*: only sandboxes changed, reconfigured in place" "$GW_LOG")"
expect_eq "... they are the same workers" "$P1" "$(gw_proxy_pids)"
expect_eq "dev's tunnel goes on" "step0" "$(step d 0)"
expect_eq "web's tunnel goes on" "step0" "$(step w 0)"
tunnel a added 0

# 2. web's egress narrowed to none: its tunnel is cut now, dev's goes on.
conf none "$ADDED" 1024
expect_ok "reload with web's egress none" gw_ctl reload
wait_for 20 grep -q '"event":"cut"' "$GW_AUDIT"
expect_eq "... still the same workers" "$P1" "$(gw_proxy_pids)"
expect_match "web's tunnel is cut" "^(closed|error)" "$(step w 1)"
expect_eq "dev's tunnel goes on" "step1" "$(step d 1)"
expect_match "the cut is audited with its reason" \
	'"event":"cut","sandbox":"web".*"reason":"sandbox changed"' "$(grep '"cut"' "$GW_AUDIT")"

# 3. The secret's file rewritten: the same workers take the new value in
# place; dev holds the secret, but its tunnel is spliced (the proxy reads
# nothing of it, so it cannot carry the value) and goes on.
printf 'sk-reconf-test-OTHER\n' >"$TOPO_TMP/etc/api.secret"
expect_ok "reload after the secret's file changed" gw_ctl reload
expect_eq "a changed secret file keeps the workers" "$P1" "$(gw_proxy_pids)"
expect_eq "... each sent the new value" "$(wc -w <<<"$P1")" \
	"$(grep -c "proxy [0-9]*: 1 new secret value(s) sent, reconfigured in place" "$GW_LOG")"
expect_eq "... and dev's spliced tunnel goes on" "step2" "$(step d 2)"
P2=$P1

# 4. A gateway setting changed: a new proxy again; a tunnel opened on the
# previous one goes on while it drains.
tunnel e dev 2
conf none "$ADDED" 2048
expect_ok "reload with a gateway setting changed" gw_ctl reload
wait_for 20 gw_proxy_new "$P2"
P3=$(gw_proxy_pids)
expect_ok "a changed gateway setting starts new workers ($P2 -> $P3)" gw_proxy_new "$P2"
expect_eq "... and the tunnel on the draining proxy still answers" "step0" "$(step e 0)"

# 5. The echo server's range no longer public: the tunnels to it are cut
# at once, on the running proxy and on the ones still draining, not when
# their drain ends.
tunnel f dev 1
before=$(grep -c '"event":"cut"' "$GW_AUDIT")
conf none "$ADDED" 2048 ""
expect_ok "reload with 203.0.113.0/24 no longer public" gw_ctl reload
three_cut() { [ "$(grep -c '"event":"cut"' "$GW_AUDIT")" -ge $((before + 3)) ]; }
wait_for 20 three_cut
expect_match "the running proxy's tunnel to it is cut" "^(closed|error)" "$(step f 0)"
expect_match "... and the draining proxies' tunnels too" "^(closed|error)" "$(step d 3)"
expect_match "... both of them" "^(closed|error)" "$(step e 1)"
expect_eq "... each audited with the admission's reason" 3 \
	"$(tail -n +1 "$GW_AUDIT" | grep '"event":"cut"' | grep -c '"sandbox":"dev".*"reason":"[a-z]')"
expect_eq "no secret value in the audit log" 0 "$(grep -c 'sk-reconf-test' "$GW_AUDIT")"

tap_done
