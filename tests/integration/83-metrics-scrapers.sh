#!/usr/bin/env bash
# The metrics listener keeps answering its scrapers whatever a local user
# does (issue 40, finding 3: 48 connections cycling against the 16 slots
# gave 0 of 20 scrapes): at most 4 connections per source, a request head
# within 2 s, gateway.metrics.allow refusing every other source before it
# takes a slot, and slots kept for the scrapers allow names one by one.
# Every request but GET /metrics gets the status gatewayd(8) names.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology"; exit 1; }
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
# The LAN side stands in for the management network: the scraper is
# $LAN_HOST (192.168.77.2); a local user of the gateway box connects from
# the box's own 192.168.77.1, and from 40 more of its addresses.
LISTEN=192.168.77.1:9477
# The metrics group on a line of its own, after the "gateway: {" line,
# where gw_start puts this run's state_dir: that stays as it is.
metrics() { sed -i "/^  metrics:/d" "$GW_CONF"
	sed -i "/^gateway: {/a\\  metrics: { listen = \"$LISTEN\"; interval = 1; $1 };" "$GW_CONF"
	[ -z "$GW_PID" ] || grep -q "state_dir = \"$TOPO_TMP/state\"" "$GW_CONF" ||
		{ not_ok "the config keeps this run's state_dir"; exit 1; }; }
cp examples/demo.conf "$GW_CONF"
metrics ""
gw_start; expect_eq "gatewayd starts with a metrics listener" 0 $?

scrape() { in_ns "$NS_LAN" env -i curl -s --max-time 3 "http://$LISTEN/metrics"; }
got_up() { scrape | grep -q '^moat_up 1$'; }
wait_for 20 got_up
status() { # status METHOD PATH -- the status code (and Allow) of one request
	in_ns "$NS_LAN" env -i curl -s -o /dev/null -X "$1" -w '%{http_code} %header{allow}' \
	    --max-time 3 "http://$LISTEN$2" | sed 's/ $//'; }
head_of() { # head_of BYTES -- the status line answering these raw bytes
	in_ns "$NS_LAN" python3 -c '
import socket, sys
s = socket.create_connection(("192.168.77.1", 9477), timeout=3)
s.sendall(sys.argv[1].encode().decode("unicode_escape").encode("latin-1"))
print(s.makefile("rb").readline().decode().strip())' "$1"; }

# --- what is answered -------------------------------------------------------
expect_eq "GET /metrics is 200" 200 "$(status GET /metrics)"
expect_eq "GET /metrics?query is 200" 200 "$(status GET '/metrics?name[]=moat_up')"
expect_eq "HEAD /metrics is 200" 200 "$(in_ns "$NS_LAN" env -i curl -s -I -o /dev/null \
	-w '%{http_code}' --max-time 3 "http://$LISTEN/metrics")"
expect_eq "GET / is 404, as gatewayd(8) says" 404 "$(status GET /)"
expect_eq "GET /other is 404" 404 "$(status GET /other)"
expect_eq "POST /metrics is 405 with Allow: GET, HEAD" "405 GET, HEAD" "$(status POST /metrics)"
expect_eq "DELETE / is 405 too" "405 GET, HEAD" "$(status DELETE /)"
expect_eq "a request line that is not HTTP/1.x is 400" "HTTP/1.0 400 Bad Request" \
	"$(head_of 'GET /metrics\r\n\r\n')"
expect_eq "a head over 2 KiB is 400" "HTTP/1.0 400 Bad Request" \
	"$(head_of "GET /metrics HTTP/1.1\r\nX: $(head -c 3000 /dev/zero | tr '\0' a)\r\n\r\n")"
expect_match "gatewayd(8) names each of these statuses" \
	'any other path gets 404.*any other method 405' "$(tr '\n' ' ' <docs/gatewayd.8.md)"

# --- a silent client is dropped after 2 s -------------------------------------
silent() { # silent NS -- seconds until the server closes a silent connection
	in_ns "$1" python3 -c '
import socket, time
s = socket.create_connection(("192.168.77.1", 9477), timeout=10)
t = time.time(); s.recv(1); print("%.1f" % (time.time() - t))'; }
t=$(silent "$NS_LAN")
expect_ok "a connection that sends no request is closed after 2 s (took ${t}s)" \
	python3 -c "import sys; sys.exit(not 1.5 <= $t <= 3.5)"

# --- one source, many connections -----------------------------------------------
hog() { # hog SOURCES N SECONDS -- the hostile local client, in the gateway's namespace
	rm -f "$TOPO_TMP/hog"
	# ip netns exec becomes python: $! is the hog itself, for kill.
	ip netns exec "$NS_GW" python3 tests/harness/conn-hog.py 192.168.77.1 9477 "$2" \
	    --src "$1" --for "$3" --status "$TOPO_TMP/hog" &
	HOG=$!
	wait_for 10 grep -qs '^up' "$TOPO_TMP/hog"
	sleep 0.5
}
scrapes() { # scrapes -- how many of 20 scrapes in a row got moat_up
	local i n=0
	for i in $(seq 20); do scrape | grep -q '^moat_up 1$' && n=$((n + 1)); done
	echo "$n"
}
hog 192.168.77.1 48 40
n=$(scrapes)
expect_eq "48 connections from one local source leave every scrape answered" "20 of 20" "$n of 20"
kill "$HOG" 2>/dev/null; wait "$HOG" 2>/dev/null
mpid=$(gw_child_pid metrics)
expect_ok "the metrics process survived them" kill -0 "${mpid:-0}"

# --- many local sources, and metrics.allow ----------------------------------------
srcs=
for i in $(seq 100 139); do
	ip -n "$NS_GW" addr add 192.168.77.$i/24 dev lan0
	srcs=$srcs${srcs:+,}192.168.77.$i
done
# The scraper named alone, and the whole LAN as well: the local user's
# 41 addresses are allowed, but the scraper keeps slots of its own.
metrics "allow = [ \"$LAN_HOST\", \"192.168.77.0/24\" ];"
expect_match "-nv prints the allow list" \
	"allow = \[ \"$LAN_HOST/32\", \"192.168.77.0/24\" \];" "$(in_ns "$NS_GW" build/gatewayd -nv -c "$GW_CONF" 2>&1)"
expect_ok "a reload takes the allow list" gw_ctl reload
new_child() { p=$(gw_child_pid metrics); [ -n "$p" ] && [ "$p" != "$mpid" ]; }
expect_ok "with a new metrics process" wait_for 10 new_child
wait_for 10 got_up
hog "$srcs" 160 40
n=$(scrapes)
expect_eq "160 connections from 40 allowed sources: the named scraper's slots stay its own" "20 of 20" "$n of 20"
kill "$HOG" 2>/dev/null; wait "$HOG" 2>/dev/null

# Only the scraper: every other source is closed as it is accepted,
# long before the 2 s a silent client of its own gets.
metrics "allow = [ \"$LAN_HOST\" ];"
mpid=$(gw_child_pid metrics)
expect_ok "a reload narrows it to the scraper" gw_ctl reload
expect_ok "with a new metrics process" wait_for 10 new_child
wait_for 10 got_up
t=$(silent "$NS_GW")
expect_ok "a source outside metrics.allow is closed at once (took ${t}s)" \
	python3 -c "import sys; sys.exit(not $t < 0.5)"
expect_eq "and is never answered" "000" "$(in_ns "$NS_GW" env -i curl -s -o /dev/null \
	-w '%{http_code}' --max-time 3 "http://$LISTEN/metrics")"
hog "$srcs,192.168.77.1" 160 40
n=$(scrapes)
expect_eq "160 connections from 41 refused sources: every scrape answered" "20 of 20" "$n of 20"
kill "$HOG" 2>/dev/null; wait "$HOG" 2>/dev/null

# --- the key's errors name file:line ------------------------------------------------
BADLINE=$(($(grep -n '^gateway: {' examples/demo.conf | cut -d: -f1) + 1))
bad() { cp examples/demo.conf "$TOPO_TMP/bad.conf"
	sed -i "s|^gateway: {|gateway: {\n  metrics: { $1 };|" "$TOPO_TMP/bad.conf"
	in_ns "$NS_GW" build/gatewayd -n -c "$TOPO_TMP/bad.conf" 2>&1; }
expect_match "an entry that is not an address or network is refused with file:line" \
	"bad.conf:$BADLINE: gateway.metrics: allow: expected an address or prefix like" \
	"$(bad "listen = \"$LISTEN\"; allow = [ \"scraper.lan\" ];")"
expect_match "a network with host bits set is refused" \
	"bad.conf:$BADLINE: gateway.metrics: allow: expected an address or prefix .* got \"192.168.77.2/24\"" \
	"$(bad "listen = \"$LISTEN\"; allow = [ \"192.168.77.2/24\" ];")"
expect_match "allow without listen is refused" \
	"bad.conf:$BADLINE: gateway.metrics: allow: expected only with listen" \
	"$(bad "textfile = \"$TOPO_TMP/x.prom\"; allow = [ \"$LAN_HOST\" ];")"
expect_match "an empty allow is refused" \
	"bad.conf:$BADLINE: gateway.metrics: allow: expected at least one address" \
	"$(bad "listen = \"$LISTEN\"; allow = [ ];")"
expect_match "a scraper among the guests is refused" \
	"bad.conf:$BADLINE: gateway.metrics: allow: expected scrapers on the management network, not \"10.77.0.0/16\"" \
	"$(bad "listen = \"$LISTEN\"; allow = [ \"10.77.0.0/16\" ];")"
expect_match "moat.conf(5) documents metrics.allow" '^`allow`' "$(sed -n '/^### metrics/,/^### /p' docs/moat.conf.5.md)"
tap_done
