#!/usr/bin/env bash
# moat-proxy over guests' IPv6 (gateway.ipv6), under moat's real policy
# (nft-rules apply) and as the proxy's own user: a guest with secrets has
# IPv6 (fd77:0:0:1::a) and reaches the proxy on the gateway's IPv6
# address, explicitly and by the redirect of its tcp 443 to public IPv6;
# the proxy knows it by its IPv6 source and injects the real key for the
# secret-bound host over IPv6 (the upstream sees it, the guest never
# does).  An allowlist guest's tcp 443 over IPv6 is name-checked by the
# proxy as over IPv4.  IPv6 literals for the gateway host, a LAN host on a global
# prefix, another guest and a unique-local address are refused by the
# proxy (403), and the proxy's user cannot reach the LAN or the host over
# IPv6 itself (the output chain) while it reaches public IPv6.  Happy
# eyeballs: a dual-stack name whose IPv6 is blackholed, refused or
# unreachable is served over IPv4 within a second, and a name without
# AAAA is not asked for it again on every connection.  With the proxy gone, another user
# listening on its IPv6 port cannot answer guests.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh
NFTR=$PWD/build/nft-rules
[ -x "$NFTR" ] && [ -x "$PX_BIN" ] || { not_ok "nft-rules and moat-proxy are built" "run make"; tap_done; exit 1; }
id moat-proxy >/dev/null 2>&1 || { not_ok "the moat-proxy user exists" "run make install-users"; tap_done; exit 1; }

NET6=fd77:0:0:1
GW6=$NET6::1
BOUND6=2606:4700:20::20		# api.bound.test's AAAA, an HTTPS echo server
DARK6=2606:4700:66::66		# dark.test's AAAA: blackholed
RST6=2606:4700:77::77		# rst.test's AAAA: nothing listens there
UNREACH6=2606:4700:88::88	# unreach.test's AAAA: no route from the gateway
LAN6_HOST=2001:db8:77:5::2
ULA=fd00:99::2

topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest agent 10.77.0.10 52:54:00:00:00:0a mt-agent
topo_guest plain 10.77.0.11 52:54:00:00:00:0b mt-plain
topo_guest listed 10.77.0.12 52:54:00:00:00:0c mt-listed
in_ns "$NS_GW" sysctl -qw net.ipv6.conf.all.forwarding=1
ip -n "$NS_GW" addr add $GW6/64 dev moat0 nodad
ip -n "$NS_GW" addr add 2001:db8:77:5::1/64 dev lan0 nodad
ip -n "$NS_LAN" addr add $LAN6_HOST/64 dev eth0 nodad
ip -n "$NS_LAN" addr add $ULA/64 dev eth0 nodad
ip -n "$NS_LAN" -6 route add default via 2001:db8:77:5::1
ip -n "$NS_GW" -6 route add fd00:99::/64 via $LAN6_HOST
for g in agent:a plain:b listed:c; do
	ip -n "$TOPO-${g%%:*}" addr add $NET6::${g#*:}/64 dev eth0 nodad
	ip -n "$TOPO-${g%%:*}" -6 route add default via $GW6
	in_ns "$TOPO-${g%%:*}" sysctl -qw net.ipv6.conf.eth0.accept_ra=0
done
ip -n "$NS_INET" addr add $BOUND6/128 dev eth0 nodad
ip -n "$NS_INET" addr add $RST6/128 dev eth0 nodad
ip -n "$NS_INET" -6 route add blackhole $DARK6/128
ip -n "$NS_GW" -6 route add unreachable $UNREACH6/128
for ns in "$NS_GW:moat0" "$TOPO-agent:eth0" "$TOPO-plain:eth0" "$TOPO-listed:eth0" "$NS_LAN:eth0"; do
	topo_wait_dad "${ns%:*}" "${ns#*:}" || { not_ok "link-local ready in ${ns%:*}"; exit 1; }
done

proxy_certs || not_ok "test certificates"
proxy_conf "$TOPO_TMP/moat.conf"
sed -i -e 's|^  treat_as_public = \[ "203.0.113.0/24" \];|  treat_as_public = [ "203.0.113.0/24", "2001:db8::/32" ];\n  ipv6 = { network = "'$NET6'::/64"; uplink_mode = "nat66"; };|' \
	"$TOPO_TMP/moat.conf"
grep -q 'ipv6 = {' "$TOPO_TMP/moat.conf" || not_ok "moat.conf has gateway.ipv6"
PX_NO_DNS=1 proxy_servers || not_ok "test servers start"
topo_bg "$NS_INET" px-dns6 python3 tests/harness/cc-dns.py 203.0.113.53 \
    api.bound.test=$PX_BOUND api.bound.test=$BOUND6 other.test=$PX_OTHER \
    dark.test=$PX_OTHER dark.test=$DARK6 rst.test=$PX_OTHER rst.test=$RST6 \
    unreach.test=$PX_OTHER unreach.test=$UNREACH6 \
    --lifetime 900
topo_bg "$NS_INET" px-bound6 python3 tests/harness/proxy-server.py $BOUND6 443 \
    --cert "$PX_DIR/api.bound.test.crt" --key "$PX_DIR/api.bound.test.key" \
    --log "$PX_DIR/bound6.log" --leak "$PX_DIR/secrets/api" --lifetime 900
topo_wait_port "$NS_INET" $BOUND6 443 || not_ok "the IPv6 echo server starts"
topo_bg "$NS_GW" gw6 socat TCP6-LISTEN:2222,bind=[$GW_UP6],fork,reuseaddr SYSTEM:"echo gw6"
topo_bg "$NS_LAN" lan6 socat TCP6-LISTEN:2222,bind=[$LAN6_HOST],fork,reuseaddr SYSTEM:"echo lan6"
topo_bg "$TOPO-plain" plain6 socat TCP6-LISTEN:443,bind=[$NET6::b],fork,reuseaddr SYSTEM:"echo plain6"

expect_ok "apply moat's policy with gateway.ipv6" in_ns "$NS_GW" "$NFTR" -c "$TOPO_TMP/moat.conf" apply
proxy_start "$TOPO_TMP/moat.conf" --user moat-proxy || { not_ok "moat-proxy starts"; tap_done; exit 1; }
expect_ok "moat-proxy listens on the gateway's IPv6 address" topo_wait_port "$NS_GW" $GW6 3128

px6() {	# px6 GUEST URL [curl args] -- through the proxy's IPv6 address
	local g=$1 url=$2; shift 2
	in_ns "$TOPO-$g" curl -sS --max-time 8 -x "http://[$GW6]:3128" \
	    --cacert "$PX_DIR/bundle.crt" "$@" "$url"
}

# --- the secret over IPv6 -------------------------------------------------
: >"$PX_DIR/bound.log"
out=$(px6 agent https://api.bound.test/echo -H "Authorization: Bearer $PX_PLACEHOLDER" 2>&1)
expect_match "explicit over IPv6: the bound host, dialled over IPv6, receives the real secret" \
	"Authorization: Bearer $PX_SECRET" "$(cat "$PX_DIR/bound6.log" 2>/dev/null)"
expect_eq "... and not over IPv4 (IPv6 is tried first)" "" "$(cat "$PX_DIR/bound.log")"
expect_match "... the guest's echo shows the placeholder" "Bearer $PX_PLACEHOLDER" "$out"
expect_fail "... the guest never sees the real value" grep -q "$PX_SECRET" <<<"$out"
expect_match "... the proxy knew the guest by its IPv6 source" \
	"\"event\":\"inject\".*\"sandbox\":\"agent\".*\"src\":\"$NET6::a\"" \
	"$(cat "$TOPO_TMP/moat-proxy.log")"

: >"$PX_DIR/bound6.log"
out=$(in_ns "$TOPO-agent" curl -sS --max-time 8 --cacert "$PX_DIR/bundle.crt" \
	--resolve "api.bound.test:443:[$BOUND6]" https://api.bound.test/echo \
	-H "Authorization: Bearer $PX_PLACEHOLDER" 2>&1)
expect_match "transparent over IPv6 (tcp 443 redirected): the bound host receives the real secret" \
	"Authorization: Bearer $PX_SECRET" "$(cat "$PX_DIR/bound6.log" 2>/dev/null)"
expect_match "... the guest sees the placeholder" "Bearer $PX_PLACEHOLDER" "$out"
expect_fail "... and never the real value" grep -q "$PX_SECRET" <<<"$out"

# --- an allowlist guest's tcp 443 over IPv6 is name-checked by the proxy --
# as over IPv4: the redirect comes before its allow6_ set, so an address
# is no way around the names it may reach.  The address is opened in its
# set first, as an AAAA answer for the allowed name would open it.
expect_ok "the allowed name's IPv6 address is in allow6_listed (as an answer puts it)" \
	in_ns "$NS_GW" nft add element inet moat allow6_listed "{ $BOUND6 timeout 120s }"
out=$(in_ns "$TOPO-listed" curl -sS --max-time 8 --cacert "$PX_DIR/bundle.crt" \
	--resolve "api.bound.test:443:[$BOUND6]" https://api.bound.test/echo 2>&1)
expect_match "allowlist over IPv6: an allowed name (tcp 443 redirected) is served" "GET /echo" "$out"
: >"$PX_DIR/bound6.log"
out=$(in_ns "$TOPO-listed" curl -sS --max-time 8 --insecure \
	--resolve "other.test:443:[$BOUND6]" https://other.test/echo 2>&1)
rc=$?
[ "$rc" != 0 ] && ! grep -q "GET /echo" "$PX_DIR/bound6.log"
expect_eq "... a name off its list at the same IPv6 address is refused (curl rc $rc), nothing reaches the server" 0 $?
expect_match "... refused by name, audited with its IPv6 source" \
	"\"event\":\"refuse\".*\"src\":\"$NET6::c\"" "$(cat "$TOPO_TMP/moat-proxy.log")"

# --- IPv6 literals the guest may not reach --------------------------------
connect6() {	# connect6 GUEST ADDR PORT -- the proxy's answer to CONNECT
	in_ns "$TOPO-$1" curl -s --max-time 8 -o /dev/null -w '%{http_connect}' \
	    -x "http://[$GW6]:3128" "https://[$2]:$3/" 2>/dev/null
}
expect_eq "control: a public IPv6 literal is connected (200)" 200 "$(connect6 agent $BOUND6 443)"
expect_eq "the gateway host's uplink IPv6 address is refused (403)" 403 "$(connect6 agent $GW_UP6 2222)"
expect_eq "a LAN host on a global prefix is refused (403)" 403 "$(connect6 agent $LAN6_HOST 2222)"
expect_eq "another guest's IPv6 address is refused (403)" 403 "$(connect6 agent $NET6::b 443)"
expect_eq "a unique-local address is refused (403)" 403 "$(connect6 agent $ULA 2222)"
expect_eq "the gateway's own IPv6 address is refused (403)" 403 "$(connect6 agent $GW6 3128)"
expect_match "the refusals are audited with the guest's IPv6 source" \
	"\"event\":\"refuse\".*\"src\":\"$NET6::a\".*gateway host" "$(cat "$TOPO_TMP/moat-proxy.log")"

# --- the proxy's user, in the kernel's output chain ----------------------
as_proxy() {	# as_proxy ADDR PORT -- what the proxy's user reaches there
	in_ns "$NS_GW" setpriv --reuid="$(id -u moat-proxy)" --regid="$(id -g moat-proxy)" \
	    --clear-groups timeout 5 socat -u TCP6:"[$1]":"$2",connect-timeout=3 STDOUT 2>/dev/null
}
expect_eq "the proxy's user does not reach the LAN over IPv6 (output chain)" "" "$(as_proxy $LAN6_HOST 2222)"
expect_eq "control: root does" lan6 "$(in_ns "$NS_GW" timeout 5 socat -u TCP6:"[$LAN6_HOST]":2222 STDOUT 2>/dev/null)"
expect_eq "the proxy's user does not reach another guest over IPv6" "" "$(as_proxy $NET6::b 443)"
expect_eq "control: root does" plain6 "$(in_ns "$NS_GW" timeout 5 socat -u TCP6:"[$NET6::b]":443 STDOUT 2>/dev/null)"
expect_ok "the proxy's user reaches public IPv6" in_ns "$NS_GW" setpriv \
	--reuid="$(id -u moat-proxy)" --regid="$(id -g moat-proxy)" --clear-groups \
	timeout 5 socat -u OPEN:/dev/null TCP6:"[$BOUND6]":443,connect-timeout=3

# --- happy eyeballs ---------------------------------------------------------
timed() {	# timed GUEST URL -- "CODE SECONDS" through the proxy's IPv6
	in_ns "$TOPO-$1" curl -s --max-time 8 -o /dev/null -w '%{http_code} %{time_total}' \
	    -x "http://[$GW6]:3128" "$2" 2>/dev/null
}
for n in dark:blackholed rst:refused unreach:unreachable; do
	r=$(timed agent "http://${n%%:*}.test/echo")
	expect_eq "a dual-stack name whose IPv6 is ${n#*:} is served over IPv4 ($r)" 200 "${r%% *}"
	expect_eq "... within a second" True \
		"$(awk -v t="${r#* }" 'BEGIN { print (t + 0 < 1.0) ? "True" : "False" }')"
done
r=$(timed plain "http://dark.test/echo")
expect_eq "the same for a guest without secrets ($r)" 200 "${r%% *}"

# A name without AAAA is asked for it once, not on every connection:
# count the AAAA questions for other.test (qtype at UDP payload byte 24).
in_ns "$NS_INET" nft -f - <<'NFT' || not_ok "AAAA counter installed"
table inet pxaaaa {
	counter aaaa { }
	chain in {
		type filter hook input priority 0;
		udp dport 53 @th,256,16 0x001c counter name aaaa
	}
}
NFT
aaaa() { in_ns "$NS_INET" nft list counter inet pxaaaa aaaa | awk '/packets/ {print $2}'; }
for i in 1 2 3; do
	expect_eq "a name with only an A record is served ($i)" 200 "$(timed agent http://other.test/echo | cut -d' ' -f1)"
done
expect_eq "... and its AAAA was asked once (no records is cached too)" 1 "$(aaaa)"

# --- only the proxy's user answers guests from the proxy port -------------
pid=$(in_ns "$NS_GW" ss -Hltnp "src [$GW6]:3128" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
[ -n "$pid" ] && kill "$pid"
wait_for 10 eval '! topo_listening "$NS_GW" $GW6 3128'
topo_bg "$NS_GW" impostor6 setpriv --reuid=65534 --regid=65534 --clear-groups \
    socat TCP6-LISTEN:3128,bind=[$GW6],fork,reuseaddr SYSTEM:"echo impostor"
topo_wait_port "$NS_GW" $GW6 3128 || not_ok "the impostor listens"
expect_eq "control: another user's listener on the proxy's IPv6 port answers locally" impostor \
	"$(in_ns "$NS_GW" timeout 5 socat -u TCP6:"[$GW6]":3128,connect-timeout=3 STDOUT 2>/dev/null)"
expect_eq "... but never a guest (svcreply)" "" \
	"$(in_ns "$TOPO-agent" timeout 5 socat -u TCP6:"[$GW6]":3128,connect-timeout=3 STDOUT 2>/dev/null)"

expect_ok "flush" in_ns "$NS_GW" "$NFTR" -c "$TOPO_TMP/moat.conf" flush
tap_done
