#!/usr/bin/env bash
# Per-sandbox traffic accounting: the kernel counts each guest's bytes and
# the packets that open connections, both ways, in the counters of the
# accounting sets' elements; `ctl sandboxes` (text and --json) and the
# metrics show them per sandbox, a reload that adds a sandbox keeps the
# others' counts, and `nft-rules verify` does not take counts for drift.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_guest locked 10.77.0.12 52:54:00:00:00:0c mt-locked
topo_services
N=3000000
head -c $N /dev/urandom >"$TOPO_TMP/www-$INET_HTTP-80/big.bin"
# A sink on the internet for the guest's upload.
topo_bg "$NS_INET" sink socat -u TCP-LISTEN:9000,bind=$INET_HTTP,fork,reuseaddr OPEN:/dev/null
topo_wait_port "$NS_INET" $INET_HTTP 9000
mkdir -p "$TOPO_TMP/sandboxes.d"
# Interception off: the downloads below are counted on the forward path
# (and the last one runs under nft-rules alone, with no proxy to take it).
sed -e "s|^gateway: {|gateway: {\n  metrics: { listen = \"192.168.77.1:9477\"; interval = 1; };|" \
    -e 's/intercept = true;/intercept = false;/' examples/demo.conf >"$GW_CONF"
gw_start; expect_eq "gatewayd starts" 0 $?

# field SANDBOX KEY -- one number from ctl sandboxes --json
field() { gw_ctl sandboxes --json | python3 -c "import json,sys
for s in json.load(sys.stdin):
    if s['name']=='$1': print(s['$2'])"; }
conns0=$(field dev conns_out)
expect_match "ctl sandboxes --json has the traffic fields" '"bytes_in":[0-9]+,"bytes_out":[0-9]+,"packets_in":[0-9]+,"packets_out":[0-9]+,"conns_in":[0-9]+,"conns_out":[0-9]+' \
	"$(gw_ctl sandboxes --json)"

# --- a download: N bytes in for dev, about nothing for the others --------
got=$(in_ns "$TOPO-dev" curl -s --max-time 20 -o /dev/null -w '%{size_download}' "http://$INET_HTTP/big.bin")
expect_eq "dev downloads $N bytes from the internet" "$N" "$got"
bin=$(field dev bytes_in); bout=$(field dev bytes_out)
expect_ok "dev's bytes_in ($bin) >= $N" test "${bin:-0}" -ge $N
expect_ok "and not far over it, headers and framing included ($bin < $((N + N / 10)))" test "${bin:-0}" -lt $((N + N / 10))
expect_ok "dev's bytes_out ($bout) counts its request and ACKs, not the download" \
	test "${bout:-0}" -gt 0 -a "${bout:-0}" -lt $((N / 10))
# Offloads may merge segments, so packets are fewer than N / MTU.
expect_ok "dev's packets_in counts them too" test "$(field dev packets_in)" -gt 20
expect_ok "web, which sent nothing, has about 0 in ($(field web bytes_in) < 2000)" \
	test "$(field web bytes_in)" -lt 2000
expect_eq "locked has 0 out" 0 "$(field locked bytes_out)"
expect_ok "the download was counted as a connection out" test "$(field dev conns_out)" -gt "${conns0:-0}"

# --- an upload: N bytes out ----------------------------------------------
conns1=$(field dev conns_out)
head -c $N /dev/zero | in_ns "$TOPO-dev" timeout 20 socat -u - TCP:$INET_HTTP:9000
bout=$(field dev bytes_out)
expect_ok "after an upload of $N bytes, dev's bytes_out ($bout) >= $N" test "${bout:-0}" -ge $N
for i in 1 2 3; do in_ns "$TOPO-dev" curl -s --max-time 5 -o /dev/null "http://$INET_HTTP/"; done
c=$(field dev conns_out)
expect_ok "four connections more are counted ($conns1 -> $c)" test "${c:-0}" -ge $((conns1 + 4))
# A connection counts once: five datagrams of one UDP flow are one.
c=$(field dev conns_out)
in_ns "$TOPO-dev" python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(5): s.sendto(b"x", ("'$INET_HTTP'", 9001))'
expect_eq "five datagrams of one UDP flow count as one connection" $((c + 1)) "$(field dev conns_out)"
# A refused attempt counts as well (it is also in the refusal counter).
c=$(field locked conns_out)
tcp_probe $TOPO-locked $INET_HTTP 80 >/dev/null
expect_ok "egress none: the refused attempt is counted as a connection out" test "$(field locked conns_out)" -gt "${c:-0}"
# Towards a guest: the host opening a connection to it.
c=$(field dev conns_in)
tcp_probe "$NS_GW" 10.77.0.11 22 >/dev/null
expect_ok "a connection from the gateway host to dev is counted in" test "$(field dev conns_in)" -gt "${c:-0}"

expect_match "ctl sandboxes (text) shows it" "^dev +10\.77\.0\.11 +mt-dev +open +bob +in [0-9]{7,} B, out [0-9]{7,} B, connections out [0-9]+, in [1-9]" \
	"$(gw_ctl sandboxes)"

# --- the metrics say the same ---------------------------------------------
scrape() { in_ns "$NS_LAN" env -i curl -s --max-time 3 http://192.168.77.1:9477/metrics; }
# Rendered every second: wait for one made after the last connection.
fresh() { v=$(scrape | sed -n 's/^moat_sandbox_connections_total{sandbox="dev",direction="in"} //p'); [ "${v:-0}" -ge 1 ]; }
expect_ok "the metrics show the connection to dev" wait_for 15 fresh
m=$(scrape)
v=$(sed -n 's/^moat_sandbox_bytes_total{sandbox="dev",direction="in"} //p' <<<"$m")
expect_ok "moat_sandbox_bytes_total dev in ($v) >= $N" test "${v:-0}" -ge $N
v=$(sed -n 's/^moat_sandbox_bytes_total{sandbox="web",direction="in"} //p' <<<"$m")
expect_ok "and web's about 0 ($v)" test -n "$v" -a "${v:-9999}" -lt 2000
v=$(sed -n 's/^moat_sandbox_connections_total{sandbox="dev",direction="out"} //p' <<<"$m")
expect_ok "moat_sandbox_connections_total dev out ($v) >= 5" test "${v:-0}" -ge 5
v=$(sed -n 's/^moat_sandbox_bytes_total{sandbox="dev",direction="out"} //p' <<<"$m")
expect_ok "moat_sandbox_bytes_total dev out ($v) >= $N" test "${v:-0}" -ge $N
expect_match "they are counters" '# TYPE moat_sandbox_bytes_total counter' "$m"

# --- live connections: a gauge per sandbox --------------------------------
gauge() { scrape | sed -n 's/^moat_sandbox_connections{sandbox="dev"} //p'; }
flag=$TOPO_TMP/hold.flag; : >"$flag"
in_ns $TOPO-dev timeout 70 python3 tests/harness/tcp-idle.py "$flag" $INET_HTTP:9000 \
	$INET_HTTP:9000 >"$TOPO_TMP/hold.out" 2>&1 &
hold=$!
wait_for 10 grep -q "^up 2" "$TOPO_TMP/hold.out"
expect_match "dev holds 2 connections to the sink" "^up 2" "$(cat "$TOPO_TMP/hold.out")"
# Rendered every second: the gauge agrees with ctl sandboxes.
same() { g=$(gauge); [ -n "$g" ] && [ "$g" -ge 2 ] && [ "$g" = "$(field dev connections_live)" ]; }
expect_ok "moat_sandbox_connections dev counts them, as connections_live does" wait_for 5 same
held=$(gauge)
expect_match "it is a gauge" '# TYPE moat_sandbox_connections gauge' "$(scrape)"
rm -f "$flag"; wait "$hold"
dropped() { g=$(gauge); [ -n "$g" ] && [ "$g" -le $((${held:-0} - 2)) ]; }
expect_ok "once they close it drops by 2 (from ${held:-?})" wait_for 5 dropped

# --- a reload that adds a sandbox keeps the others' counts -----------------
before=$(field dev bytes_in)
loglines=$(wc -l <"$GW_LOG")
cat >"$TOPO_TMP/sandboxes.d/extra.conf" <<'EOC'
mac = "52:54:00:00:00:0d"; address = "10.77.0.13"; tap = "mt-extra";
egress = "open";
EOC
expect_ok "reload with a sandbox added" gw_ctl reload
expect_match "the reload was a delta" 'policy: updated, [0-9]+ message' "$(tail -n +$((loglines + 1)) "$GW_LOG")"
expect_ok "dev's count survived it ($before -> $(field dev bytes_in))" test "$(field dev bytes_in)" -ge "$before"
expect_eq "the new sandbox starts at 0" 0 "$(field extra bytes_in)"
expect_match "its element has a counter" '10\.77\.0\.13 counter packets 0 bytes 0' \
	"$(in_ns "$NS_GW" nft list set inet moat acct_in)"

# --- nft-rules alone: counts are not drift ---------------------------------
kill "$GW_PID"; wait "$GW_PID" 2>/dev/null
sed 's/intercept = true;/intercept = false;/' examples/demo.conf >"$TOPO_TMP/plain.conf"
in_ns "$NS_GW" build/nft-rules -c "$TOPO_TMP/plain.conf" --proxy-user - --dns-user - apply
expect_eq "nft-rules applies the policy" 0 $?
got=$(in_ns "$TOPO-dev" curl -s --max-time 20 -o /dev/null -w '%{size_download}' "http://$INET_HTTP/big.bin")
expect_eq "dev downloads again under nft-rules' policy" "$N" "$got"
expect_match "the kernel counted it" '10\.77\.0\.11 counter packets [0-9]+ bytes [0-9]{7,}' \
	"$(in_ns "$NS_GW" nft list set inet moat acct_in)"
out=$(in_ns "$NS_GW" build/nft-rules -c "$TOPO_TMP/plain.conf" --proxy-user - --dns-user - verify 2>&1)
expect_eq "verify finds no drift with non-zero counters" 0 $?
expect_eq "and prints nothing" "" "$out"
h=$(in_ns "$NS_GW" nft -a list chain inet moat acct_local | grep -o '@acct_in # handle [0-9]*' | grep -o '[0-9]*$')
in_ns "$NS_GW" nft delete rule inet moat acct_local handle "${h:-0}"
out=$(in_ns "$NS_GW" build/nft-rules -c "$TOPO_TMP/plain.conf" --proxy-user - --dns-user - verify 2>&1)
expect_eq "a missing accounting rule is drift" 1 $?
expect_match "named in the diff" '^-.*acct_local.*@acct_in' "$out"
in_ns "$NS_GW" build/nft-rules flush
tap_done
