#!/usr/bin/env bash
# Metrics: Prometheus text as a node_exporter textfile (replaced whole)
# and on a listener bound to a management address only, served by an
# unprivileged process; never reachable from a guest.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_guest locked 10.77.0.12 52:54:00:00:00:0c mt-locked
topo_services
PROM=$TOPO_TMP/textfile/moat.prom
mkdir -p "$TOPO_TMP/textfile"
# The LAN side's 192.168.77.1 stands in for the management network.
sed "s|^gateway: {|gateway: {\n  metrics: { textfile = \"$PROM\"; listen = \"192.168.77.1:9477\"; interval = 1; };|" \
	examples/demo.conf >"$GW_CONF"
expect_match "the config with metrics is valid" "OK" "$(in_ns "$NS_GW" build/gatewayd -n -c "$GW_CONF" 2>&1)"

# Wrong places for the listener are config errors.
bad() { sed "s|^gateway: {|gateway: {\n  metrics: { listen = \"$1\"; };|" examples/demo.conf >"$TOPO_TMP/bad.conf"
	in_ns "$NS_GW" build/gatewayd -n -c "$TOPO_TMP/bad.conf" 2>&1; }
expect_match "listen inside the sandbox network is refused, with file:line" \
	"bad.conf:[0-9]+: gateway.metrics: listen: expected an address on the management network, not inside gateway.network 10.77.0.0/24" \
	"$(bad 10.77.0.1:9477)"
expect_match "listen on every address is refused" \
	'gateway.metrics: listen: expected the gateway.s address on the management network, not "0.0.0.0"' \
	"$(bad 0.0.0.0:9477)"
sed "s|^gateway: {|gateway: {\n  metrics: { textfile = \"/tmp/x.txt\"; };|" examples/demo.conf >"$TOPO_TMP/bad.conf"
expect_match "a textfile not ending in .prom is refused" 'textfile: expected an absolute path ending in ".prom"' \
	"$(in_ns "$NS_GW" build/gatewayd -n -c "$TOPO_TMP/bad.conf" 2>&1)"

expect_match "-nv prints the metrics settings" "metrics: \{ textfile = \"$PROM\"; listen = \"192.168.77.1:9477\"; interval = 1; \};" "$(in_ns "$NS_GW" build/gatewayd -nv -c "$GW_CONF" 2>&1)"
gw_start; expect_eq "gatewayd starts with metrics" 0 $?
scrape() { in_ns "$1" env -i curl -s --max-time 3 "http://$2/metrics"; }
got_up() { scrape "$NS_LAN" 192.168.77.1:9477 | grep -q '^moat_up 1$'; }
wait_for 20 got_up
m=$(scrape "$NS_LAN" 192.168.77.1:9477)
expect_match "the management network scrapes moat_up" '^moat_up 1$' "$m"
expect_match "sandboxes and their egress are labelled" 'moat_sandbox_info\{sandbox="dev",egress="open"\} 1' "$m"
expect_match "the kernel's refusal counters are there" 'moat_refusals_total\{family="inet",counter="[a-z_-]+",reason="[^"]*"\} [0-9]+' "$m"
expect_match "children and their restarts" 'moat_child_restarts_total\{child="dnsd",slot="1"\} 0' "$m"
expect_match "reloads are counted" 'moat_reloads_total\{result="ok"\} 0' "$m"
expect_eq "other paths are 404" 404 \
	"$(in_ns "$NS_LAN" env -i curl -s -o /dev/null -w '%{http_code}' --max-time 3 http://192.168.77.1:9477/x)"
mpid=$(gw_child_pid metrics)
expect_eq "the metrics process runs as moat-mon" moat-mon "$(ps -o user= -p "${mpid:-1}" 2>/dev/null | tr -d ' ')"
expect_match "and under seccomp, no_new_privs" 'NoNewPrivs:	1.*Seccomp:	2' \
	"$(tr '\n' ' ' </proc/${mpid:-1}/status 2>/dev/null)"

# Never from a guest: not the management address, not the gateway's.
expect_eq "a guest (open) cannot reach the metrics listener" unreachable \
	"$(tcp_probe $TOPO-dev 192.168.77.1 9477)"
expect_eq "nor on the gateway's sandbox-side address" unreachable \
	"$(tcp_probe $TOPO-dev $GW_ADDR 9477)"
expect_eq "an allowlist guest neither" unreachable "$(tcp_probe $TOPO-web 192.168.77.1 9477)"

# Refusals show per sandbox: the nflog reader's events are counted.
tcp_probe $TOPO-dev $LAN_HOST 22 >/dev/null
counted() { scrape "$NS_LAN" 192.168.77.1:9477 | grep -Eq 'moat_events_total\{source="nflog",event="refusal",sandbox="dev",secret=""\} [1-9]'; }
expect_ok "a guest's refusal is counted for its sandbox" wait_for 10 counted

# The textfile: 0644, replaced whole (a new inode each time), never partial.
expect_match "the textfile is written" '^moat_up 1$' "$(cat "$PROM" 2>&1)"
expect_eq "the textfile is 0644" 644 "$(stat -c %a "$PROM")"
ino=$(stat -c %i "$PROM")
changed() { [ "$(stat -c %i "$PROM" 2>/dev/null)" != "$ino" ]; }
expect_ok "it is replaced by rename (new inode)" wait_for 10 changed
expect_eq "no temporary file is left beside it" 1 "$(ls "$TOPO_TMP/textfile" | wc -l)"
gw_ctl reload >/dev/null
reloaded() { scrape "$NS_LAN" 192.168.77.1:9477 | grep -q 'moat_reloads_total{result="ok"} 1'; }
expect_ok "a reload shows in the metrics" wait_for 10 reloaded

# A silent client holds a slot only for a few seconds, and 16 idle ones
# do not keep a scraper out for longer than that.
in_ns "$NS_LAN" python3 -c '
import socket, time
s = [socket.create_connection(("192.168.77.1", 9477)) for _ in range(20)]
time.sleep(7)' &
hold=$!
sleep 1
late() { scrape "$NS_LAN" 192.168.77.1:9477 | grep -q '^moat_up 1$'; }
expect_ok "idle connections are dropped after their deadline" wait_for 15 late
wait $hold 2>/dev/null
kill -0 "$mpid" 2>/dev/null; expect_eq "the metrics process survived them" 0 $?
# Every metric the example dashboard queries is one gatewayd serves.  The
# canary's are served only with gateway.canary: 29-gatewayd-canary.sh
# checks those.
m=$(scrape "$NS_LAN" 192.168.77.1:9477)
missing=$(python3 -c '
import json, re, sys
d = json.load(open("examples/grafana-moat.json"))
names = set()
for p in d["panels"]:
    for t in p["targets"]:
        names |= set(re.findall(r"moat_[a-z_]+", t["expr"]))
have = set(re.findall(r"^# TYPE (moat_[a-z_]+)", sys.stdin.read(), re.M))
print(" ".join(sorted(n for n in names - have if not n.startswith("moat_canary_"))))' <<<"$m")
expect_eq "the example Grafana dashboard queries only served metrics" "" "$missing"
tap_done
