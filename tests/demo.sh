#!/usr/bin/env bash
# demo.sh -- `make demo`: the whole appliance on an embedded default
# config, in network namespaces this run creates and removes.  Every
# packet stays in those namespaces.
#
# gatewayd runs the appliance (policy, dnsd, the proxy, the audit log);
# each program then shows its part (tests/demo.d/*.sh, sourced in order):
# which probes from the guests were allowed or refused, and why.
set -u
cd "$(dirname "$0")/.."
. tests/harness/tap.sh		# for wait_for
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh

BIN=build
DEMO_DIR=$TOPO_TMP/etc
DEMO_CONF=$DEMO_DIR/moat.conf
DEMO_STATE=$TOPO_TMP/state
GW_CONF=$DEMO_CONF
. tests/harness/gw.sh
GW_SOCK=$TOPO_TMP/run/gatewayd.sock
GW_AUDIT=$DEMO_STATE/audit.log
bold() { printf '\n\033[1m== %s ==\033[0m\n' "$*"; }

# demo_http GUEST ADDR -- who answered a plain GET to ADDR:80: with
# interception on the gateway's proxy takes the connection and refuses with
# a reply of its own (header X-Moat-Refused), as containment-check tells.
demo_http() {
	local head why
	head=$(in_ns "$TOPO-$1" curl -s --max-time 3 -o /dev/null -D - "http://$2/" | tr -d '\r')
	why=$(printf '%s\n' "$head" | sed -n 's/^[Xx]-[Mm]oat-[Rr]efused: //p')
	if [ -n "$why" ]; then
		echo "REFUSED   (by the gateway's proxy: $why)"
	elif [ -n "$head" ]; then
		echo "ALLOWED   ($(printf '%s\n' "$head" | head -1 | cut -d' ' -f1-3) from the server)"
	else
		echo "ALLOWED   (connected)"
	fi
}

# demo_probe GUEST ADDR PORT WHAT -- one TCP connection from a guest,
# classified the way containment-check does.
demo_probe() {
	local verdict
	case $(tcp_probe "$TOPO-$1" "$2" "$3") in
	connected)	[ "$3" = 80 ] && verdict=$(demo_http "$1" "$2") ||
			    verdict="ALLOWED   (connected)" ;;
	unreachable)	verdict="REFUSED   (ICMP admin-prohibited from the gateway)" ;;
	refused)	verdict="CLOSED    (a host answered: port closed)" ;;
	*)		verdict="NO ANSWER (dropped or timed out)" ;;
	esac
	printf '  %-7s -> %-20s %-30s %s\n' "$1" "$2:$3" "$4" "$verdict"
}

demo_probes() {
	local g
	for g in web dev locked; do
		demo_probe $g $INET_HTTP 80 "internet web server"
		demo_probe $g $LAN_HOST 22 "LAN host ssh"
		demo_probe $g $GW_ADDR 22 "the gateway host's ssh"
	done
	demo_probe web 10.77.0.11 8080 "another guest (dev)"
	demo_probe dev 169.254.169.254 80 "cloud metadata"
}

# The embedded default (examples/demo.conf) plus what only a running demo
# can provide: a secret file, the proxy's test CA, a state folder.
demo_config() {
	mkdir -p "$DEMO_DIR/sandboxes.d" "$DEMO_STATE" "$TOPO_TMP/run" &&
	proxy_certs && proxy_conf "$TOPO_TMP/proxy-unused.conf" || return 1
	sed -e "s|^  exceptions = ( );|  exceptions = ( );\n  state_dir = \"$DEMO_STATE\";\n  web: { listen = \"192.168.77.1:8443\"; };\n  verify: { repair_network = true; };|" \
	    -e "s|proxy: { port = 3128; intercept = true; };|proxy: { port = 3128; intercept = true; upstream_ca = \"$PX_DIR/testca.crt\"; };|" \
	    -e 's|allow = \[ "pypi.org", "\*.github.test" \]; owner = "alice"; },|allow = [ "pypi.org", "*.github.test", "api.bound.test", "other.test", "lan.test" ];\n    secrets = [ "api", "gh" ]; owner = "alice"; },|' \
	    examples/demo.conf >"$DEMO_CONF"
	cat >>"$DEMO_CONF" <<CONF

# Added by the demo: the real value lives in a root-only file.
secrets = (
  { name = "api"; file = "$PX_DIR/secrets/api"; hosts = [ "api.bound.test" ];
    header = "Authorization"; placeholder = "$PX_PLACEHOLDER"; },
  # Only these requests, and (small, for the demo) 2 a minute.
  { name = "gh"; file = "$PX_DIR/secrets/gh"; hosts = [ "api.bound.test" ];
    header = "Authorization"; placeholder = "moat-gh-PLACEHOLDER";
    requests = [ "GET /repos/acme/*", "POST /repos/acme/*/issues/*/comments" ];
    budget = { requests_per_minute = 2; requests_per_day = 2000; }; }
);
CONF
}

bold "1. Configuration"
topo_trap
demo_config || { echo "demo: could not write the configuration" >&2; exit 1; }
echo "  examples/demo.conf, plus a secret bound to api.bound.test -> $DEMO_CONF"

bold "2. Topology (network namespaces, prefix $TOPO)"
topo_up || { echo "demo: could not build the topology" >&2; exit 1; }
# -n checks the config against the host's interfaces (the uplink, the
# networks already in use), so it runs on the gateway.
echo "  \$ gatewayd -n -c moat.conf   (on the gateway)"
in_ns "$NS_GW" $BIN/gatewayd -n -c "$DEMO_CONF" | sed 's/^/  /' || exit 1
chmod 711 "$TOPO_TMP"
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_guest locked 10.77.0.12 52:54:00:00:00:0c mt-locked
topo_services
topo_banner "$TOPO-dev" 10.77.0.11 8080 "guest-dev-service"
topo_banner "$NS_GW" $GW_ADDR 22 "SSH-2.0-gateway-host"
topo_bg "$NS_INET" upstream-dns python3 tests/harness/dns-upstream.py \
	--addr 203.0.113.53 --log "$TOPO_TMP/upstream.queries"
topo_wait_port "$NS_INET" 203.0.113.53 53
PX_NO_DNS=1 proxy_servers
cat <<TXT
  guests web (10.77.0.10, allowlist), dev (10.77.0.11, open), locked (10.77.0.12, none)
        |  veth "taps", bridge port isolation on
  [gateway: moat0 10.77.0.1] --up0--> [internet 203.0.113.0/24: HTTP .10, DNS .53,
                             |          HTTPS APIs api.bound.test .20, other.test .21]
                             --lan0-> [LAN 192.168.77.0/24: ssh and http on .2]
TXT

bold "3. Probes from the guests before moat is running"
demo_probes

export MOAT_WEB_ROOT=$PWD/web
bold "4. gatewayd: the appliance (policy, dnsd, proxy, audit)"
echo "  \$ gatewayd -d -c $DEMO_CONF"
gw_start || exit 1
demo_children_up() { [ -n "$(gw_child_pid dnsd)" ] && [ -n "$(gw_child_pid proxy)" ]; }
wait_for 30 demo_children_up
topo_wait_port "$NS_GW" $GW_ADDR 3128
echo "  \$ gatewayd ctl status"
gw_ctl status | sed 's/^/    /'
# The web console, on the LAN side (the demo's management network); it
# stays up until the teardown.
echo "  \$ gatewayd ctl web-login    (the web console; from the LAN namespace:"
echo "     ip netns exec $NS_LAN chromium --ignore-certificate-errors URL)"
gw_ctl web-login | sed 's/^/    /'

for part in tests/demo.d/*.sh; do
	[ -e "$part" ] || continue
	. "$part"
done

bold "11. The audit log (gatewayd ctl log)"
echo "  one line of each kind (JSON lines; secrets by name only):"
cp "$GW_AUDIT" "$TOPO_TMP/audit.copy"   # gatewayd ctl log shows only the end
for ev in start '"refusal","reason":"private"' '"refusal","reason":"host"' \
    refusals-suppressed dns-refused inject '"refuse"' request request-refused \
    request-over-budget reload; do
	grep -m1 "\"event\":$(case $ev in \"*) echo "$ev" ;; *) echo "\"$ev\"" ;; esac)" \
	    "$TOPO_TMP/audit.copy" | cut -c1-190 | sed 's/^/  /'
done
echo "  $(wc -l <"$GW_AUDIT") events in all, by kind:"
grep -o '"event":"[a-z-]*"\(,"reason":"[a-z0-9]*"\)\?' "$GW_AUDIT" | sort | uniq -c |
	sort -rn | sed 's/"event"://; s/,"reason":/ /; s/"//g; s/^/    /'

bold "Teardown"
kill -TERM "$GW_PID" 2>/dev/null; wait "$GW_PID" 2>/dev/null
echo "  gatewayd stopped (the policy stays in the kernel until flushed)"
topo_down
echo "  all namespaces and processes of this run removed"
