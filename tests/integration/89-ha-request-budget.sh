#!/usr/bin/env bash
# The request budget of a secret on a pair: each box counts it on its own
# (replication carries allowlist elements, egress totals and
# registrations, not request counts), so a failover hands a budgeted
# secret at most one more window's worth, never more.  Both boxes run the
# same secret "gh" (bound to api.bound.test) with 3 requests a minute.
# The guest spends the 3 through box A (the 4th is refused, 429); A goes
# backup and B master; exactly 3 more go through B, the next is refused;
# back on A, nothing more.  The budgets' clock is a file
# (gatewayd --test-clock) that stands still, so the minute never rolls
# over during the test.  No keepalived: roles are given by hand
# (`gatewayd ctl ha`) and the gateway address is moved by hand.
#
#   guest ns "agent": br0 10.77.0.10 -- ga --> box A mt-agent (moat0)
#                                    -- gb --> box B mt-agent (moat0)
#   A up0 203.0.113.1 <-> inet eth0     B up0 198.51.100.1 <-> inet eth1
#   A peer0 192.168.200.1 <-- replication, TLS --> B peer0 192.168.200.2
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh
. tests/harness/gw.sh

NS_A=$NS_GW
NS_B=$TOPO-gwb
G=$TOPO-agent
topo_up || { not_ok "topology"; exit 1; }
ip -n "$NS_A" addr del $GW_ADDR/24 dev moat0
topo_ns "$NS_B" || { not_ok "box B"; exit 1; }
in_ns "$NS_B" sysctl -qw net.ipv4.ip_forward=1
ip -n "$NS_B" link add moat0 type bridge
ip -n "$NS_B" link set moat0 up
topo_link "$NS_B" up0 "$NS_INET" eth1
ip -n "$NS_B" addr add 198.51.100.1/24 dev up0
ip -n "$NS_INET" addr add 198.51.100.2/24 dev eth1
ip -n "$NS_B" route add default via 198.51.100.2
topo_link "$NS_A" peer0 "$NS_B" peer0
ip -n "$NS_A" addr add 192.168.200.1/24 dev peer0
ip -n "$NS_B" addr add 192.168.200.2/24 dev peer0
topo_ns "$G"
topo_link "$NS_A" mt-agent "$G" ga
topo_link "$NS_B" mt-agent "$G" gb
ip -n "$G" link add br0 type bridge
ip -n "$G" link set br0 address 52:54:00:00:00:0a
ip -n "$G" link set ga master br0
ip -n "$G" link set gb master br0
ip -n "$G" link set br0 up
ip -n "$G" addr add 10.77.0.10/24 dev br0
ip -n "$G" route add default via $GW_ADDR
for ns in "$NS_A" "$NS_B"; do
	ip -n "$ns" link set mt-agent master moat0
	ip -n "$ns" link set mt-agent type bridge_slave isolated on
done
proxy_certs || { not_ok "test certificates"; exit 1; }
proxy_servers || { not_ok "test servers start"; exit 1; }

# --- keys for the replication link -----------------------------------------
PKI=$TOPO_TMP/pki
mkdir -p "$PKI"
mkcert() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-subj "/CN=$1" -days 2 -keyout "$PKI/$1.key" -out "$PKI/$1.crt" 2>/dev/null
}
pin() {
	echo "sha256:$(openssl x509 -in "$PKI/$1.crt" -pubkey -noout |
		openssl pkey -pubin -outform DER | sha256sum | cut -d' ' -f1)"
}
mkcert a; mkcert b

GH_PH=moat-gh-PLACEHOLDER
GH_REAL=ghp-real-value-89
CLOCK=$TOPO_TMP/clock
echo $(( 1800000000 - 1800000000 % 60 + 5 )) >"$CLOCK"	# 5 s into a minute
bash gatewayd/install-users.sh
declare -A PID SOCK
box_conf() {	# box_conf X LISTEN PEER PEERKEY -- $TOPO_TMP/X/moat.conf
	local x=${1,,}
	mkdir -p "$TOPO_TMP/$1/secrets" && chmod 0700 "$TOPO_TMP/$1/secrets"
	printf '%s\n' "$GH_REAL" >"$TOPO_TMP/$1/secrets/gh"
	chmod 0600 "$TOPO_TMP/$1/secrets/gh"
	{ sed -e "s|^gateway: {|gateway: { state_dir = \"$TOPO_TMP/state-$1\";\n  ha: { enabled = true; listen = \"$2\"; peer = \"$3\";\n    peer_key = \"$4\"; cert = \"$PKI/$x.crt\"; key = \"$PKI/$x.key\"; };|" \
	    -e "s|proxy: { port = 3128; intercept = true; };|proxy: { port = 3128; intercept = false; upstream_ca = \"$PX_DIR/testca.crt\"; };|" \
	    -e '/^sandboxes = (/,$d' examples/demo.conf
	  cat <<CONF
secrets = (
  { name = "gh"; file = "$TOPO_TMP/$1/secrets/gh"; hosts = [ "api.bound.test" ];
    header = "Authorization"; placeholder = "$GH_PH";
    requests = [ "GET /repos/acme/*" ];
    budget = { requests_per_minute = 3; requests_per_day = 100; }; }
);
sandboxes = (
  { name = "agent"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10"; tap = "mt-agent";
    egress = "open"; secrets = [ "gh" ]; }
);
CONF
	} >"$TOPO_TMP/$1/moat.conf"
}
box_start() {	# box_start X NS
	SOCK[$1]=$TOPO_TMP/$1.sock
	moat_daemon "$2" build/gatewayd -d -c "$TOPO_TMP/$1/moat.conf" -s "${SOCK[$1]}" \
	    -a "$TOPO_TMP/$1-audit.log" --test-clock "$CLOCK" >>"$TOPO_TMP/$1-gatewayd.log" 2>&1 &
	PID[$1]=$!
	TOPO_PIDS+=("${PID[$1]}")
	wait_for 30 build/gatewayd ctl -s "${SOCK[$1]}" status >/dev/null 2>&1
}
ctl() { local x=$1; shift; build/gatewayd ctl -s "${SOCK[$x]}" "$@"; }
proxy_up() {	# proxy_up X NS -- X's proxy runs and listens on 3128
	ctl "$1" status --json | python3 -c "import json,sys
sys.exit(not any(c['name'] == 'proxy' and c['pid'] > 0 for c in json.load(sys.stdin)['children']))" &&
	in_ns "$2" ss -Hltn 'sport = :3128' | grep -q .
}
box_conf A 192.168.200.1:7444 192.168.200.2:7444 "$(pin b)"
box_conf B 192.168.200.2:7444 192.168.200.1:7444 "$(pin a)"
box_start A "$NS_A"; expect_eq "box A's gatewayd starts" 0 $?
box_start B "$NS_B"; expect_eq "box B's gatewayd starts" 0 $?
expect_ok "A's proxy listens" wait_for 30 proxy_up A "$NS_A"
expect_ok "B's proxy listens" wait_for 30 proxy_up B "$NS_B"
ctl A ha master >/dev/null; ctl B ha backup >/dev/null
ip -n "$NS_A" addr add $GW_ADDR/24 dev moat0
# Each box made its own interception CA; the guest trusts both.
cat "$TOPO_TMP/state-A/proxy-ca.crt" "$TOPO_TMP/state-B/proxy-ca.crt" \
	"$PX_DIR/testca.crt" >"$PX_DIR/bundle.crt"

# gh N -- the guest's Nth request with the placeholder; its status code
gh() {
	px_curl agent "https://api.bound.test/repos/acme/r$1" \
	    -H "Authorization: Bearer $GH_PH" -o "$TOPO_TMP/body" -w '%{http_code}'
	cat "$TOPO_TMP/body" >>"$TOPO_TMP/bodies"
}
reached() { grep -c "^GET /repos/acme/r$1 HTTP" "$PX_DIR/bound.log" 2>/dev/null; }
declare -A NS=([A]=$NS_A [B]=$NS_B)
failover() {	# failover FROM TO -- TO becomes master and takes the address
	ctl "$1" ha backup >/dev/null; ctl "$2" ha master >/dev/null
	ip -n "${NS[$1]}" addr del $GW_ADDR/24 dev moat0
	ip -n "${NS[$2]}" addr add $GW_ADDR/24 dev moat0
	ip -n "$G" neigh flush all
}
through() {	# through X -- the guest's gateway address is X's bridge
	[ "$(ip -n "${NS[$1]}" -br link show moat0 | awk '{print $3}')" = \
	  "$(ip -n "$G" neigh show $GW_ADDR | awk '{print $5}')" ]
}
: >"$PX_DIR/bound.log"

# --- A master: the whole minute's budget, then 429 ---------------------------
for n in 1 2 3; do
	expect_eq "request $n through A is answered (200)" 200 "$(gh $n)"
done
expect_ok "through A indeed" through A
expect_eq "the 4th of the minute through A is over budget (429)" 429 "$(gh 4)"
expect_match "... the body names the secret and the budget" \
	'secret "gh": budget of 3 requests per minute spent' "$(cat "$TOPO_TMP/body")"
expect_eq "... and it never reached the server" 0 "$(reached 4)"
expect_match "A counts 3 of 3" '^gh .*budget 3/3 per minute, 3/100 per day' "$(ctl A secret list)"
expect_match "B (backup) counted nothing: the counts are each box's own" \
	'^gh .*budget 0/3 per minute, 0/100 per day' "$(ctl B secret list)"

# --- failover to B: at most one more window's worth --------------------------
failover A B
expect_match "B is master" '^ha +master' "$(ctl B status | grep '^ha ')"
for n in 5 6 7; do
	expect_eq "request $n, through B after the failover, is answered (200)" 200 "$(gh $n)"
done
expect_ok "through B indeed" through B
expect_eq "the next through B is over budget (429): one window's worth more, no more" 429 "$(gh 8)"
expect_match "... the body names the secret and the budget" \
	'secret "gh": budget of 3 requests per minute spent' "$(cat "$TOPO_TMP/body")"
expect_eq "... and it never reached the server" 0 "$(reached 8)"
expect_eq "and again (429)" 429 "$(gh 9)"
expect_match "B counts 3 of 3" '^gh .*budget 3/3 per minute, 3/100 per day' "$(ctl B secret list)"

# --- back to A: its own count stands; nothing fresh ---------------------------
failover B A
expect_eq "failing back to A gives nothing more (429)" 429 "$(gh 10)"
expect_ok "through A indeed" through A
expect_eq "in all, the server got 6 requests: two windows' worth for the pair, no more" 6 \
	"$(grep -c '^GET /repos/acme/r[0-9]* HTTP' "$PX_DIR/bound.log")"
expect_eq "each with the real value" 6 \
	"$(grep -c "^Authorization: Bearer $GH_REAL" "$PX_DIR/bound.log")"

# --- the real secret never reached the guest or a log ------------------------
expect_match "the guest got the echoed heads back" '^GET /repos/acme/r7 HTTP' \
	"$(tr -d '\r' <"$TOPO_TMP/bodies")"
expect_fail "but never the real value" grep -qF "$GH_REAL" "$TOPO_TMP/bodies"
expect_fail "nor does it appear in either box's logs" grep -qF "$GH_REAL" \
	"$TOPO_TMP/A-gatewayd.log" "$TOPO_TMP/B-gatewayd.log" \
	"$TOPO_TMP/A-audit.log" "$TOPO_TMP/B-audit.log"
tap_done
