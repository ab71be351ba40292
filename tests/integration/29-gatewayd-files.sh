#!/usr/bin/env bash
# Only gatewayd's root parent reads the configuration, the secret files
# and the CA key.  Under strace, a start and a reload show every open and
# stat of each process: no child (dnsd, the proxy, the signer, the nflog
# reader) touches moat.conf, sandboxes.d, a secret file or the CA key,
# while the parent does (the control that proves the trace sees them).
# The proxy still injects the secret it was sent.
cd "$(dirname "$0")/../.."
KEEP=${KEEP:-}
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

command -v strace >/dev/null || { not_ok "strace is installed"; tap_done; exit 1; }
topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
chmod 711 "$TOPO_TMP"
bash gatewayd/install-users.sh
mkdir -p "$TOPO_TMP/etc/sandboxes.d" "$TOPO_TMP/state"
printf 'sk-files-test-VALUE\n' >"$TOPO_TMP/etc/api.secret"
chmod 600 "$TOPO_TMP/etc/api.secret"
GW_CONF=$TOPO_TMP/etc/moat.conf
cat >"$GW_CONF" <<CONF
gateway: {
  uplink = "up0"; network = "10.77.0.0/24"; bridge = "moat0";
  dns: { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24" ];
  state_dir = "$TOPO_TMP/state";
};
secrets = ( { name = "api"; file = "$TOPO_TMP/etc/api.secret";
  hosts = [ "api.bound.test" ]; placeholder = "moat-api-PLACEHOLDER"; } );
CONF
cat >"$TOPO_TMP/etc/sandboxes.d/web.conf" <<'CONF'
mac = "52:54:00:00:00:0a"; address = "10.77.0.10"; tap = "mt-web";
egress = "open"; secrets = [ "api" ];
CONF

# gatewayd under strace: the trace's first pid is the parent.
TRACE=$TOPO_TMP/trace
moat_daemon "$NS_GW" strace -f -qq -o "$TRACE" \
	-e trace=open,openat,openat2,stat,lstat,newfstatat,statx \
	build/gatewayd -d -c "$GW_CONF" -s "$GW_SOCK" -a "$GW_AUDIT" >>"$GW_LOG" 2>&1 &
TOPO_PIDS+=($!)
children_up() {	# children_up [OLD_PROXY] -- dnsd and a proxy (not OLD) running
	local deadline=$((SECONDS + 60)) p d
	while [ $SECONDS -lt $deadline ]; do
		p=$(gw_proxy_pids 2>/dev/null); d=$(gw_child_pid dnsd 2>/dev/null)
		[ -n "$p" ] && [ -n "$d" ] && gw_proxy_new "${1:-}" 2>/dev/null &&
		    { echo "$p"; return 0; }
		sleep 0.2
	done
	return 1
}
proxy1=$(children_up) || { not_ok "gatewayd starts its children under strace" "$(tail -5 "$GW_LOG")"; tap_done; exit 1; }
ok "gatewayd starts its children under strace"
# The secret's file rewritten with a new value: the reload keeps the
# running workers, and the parent sends each the new value; the workers
# wipe the old one (no connection holds it).
printf 'sk-files-test-ROTATED\n' >"$TOPO_TMP/etc/api.secret.new"
chmod 600 "$TOPO_TMP/etc/api.secret.new"
mv "$TOPO_TMP/etc/api.secret.new" "$TOPO_TMP/etc/api.secret"
expect_ok "reload" gw_ctl reload
sent() { [ "$(grep -c 'new secret value(s) sent' "$GW_LOG")" -ge "$(wc -w <<<"$proxy1")" ]; }
wait_for 20 sent
expect_eq "the same proxy workers after the reload" "$proxy1" "$(gw_proxy_pids)"
# The proxy got the secret's value from the parent: it is in its memory.
val=$(printf 'sk-files-test-ROTATED' | od -An -tx1 | tr -d ' \n')
old=$(printf 'sk-files-test-VALUE' | od -An -tx1 | tr -d ' \n')
for p in $proxy1; do
	expect_eq "proxy worker $p holds the new value it was sent" found \
		"$(python3 tests/harness/memscan.py "$p" "$val")"
	expect_eq "... and no longer the old one" absent \
		"$(python3 tests/harness/memscan.py "$p" "$old")"
done
gw_ctl status >/dev/null
kill -TERM "${TOPO_PIDS[-1]}"
deadline=$((SECONDS + 30))
while kill -0 "${TOPO_PIDS[-1]}" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done

parent=$(head -1 "$TRACE" | awk '{print $1}')
touches() {	# touches PATTERN -- pids (other than the parent) that named it
	grep -F "$1" "$TRACE" | awk -v p="$parent" '$1 != p {print $1}' | sort -u | tr '\n' ' '
}
expect_match "the parent reads moat.conf (control)" "^$parent .*$GW_CONF" "$(grep -F "$GW_CONF" "$TRACE")"
expect_match "the parent reads the secret file (control)" "^$parent " "$(grep -F api.secret "$TRACE")"
expect_match "the parent reads the CA key (control)" "^$parent " "$(grep -F proxy-ca.key "$TRACE")"
expect_eq "no child opens or stats moat.conf" "" "$(touches "$GW_CONF")"
expect_eq "no child opens or stats sandboxes.d" "" "$(touches sandboxes.d)"
expect_eq "no child opens or stats the secret file" "" "$(touches api.secret)"
expect_eq "no child opens or stats the CA key" "" "$(touches proxy-ca.key)"
expect_eq "no child opens or stats anything under the config folder" "" "$(touches "$TOPO_TMP/etc")"
nkids=$(awk -v p="$parent" '$1 != p {print $1}' "$TRACE" | sort -u | wc -l)
if [ "$nkids" -ge 6 ]; then ok "the trace followed the children ($nkids processes)"
else not_ok "the trace followed the children" "$nkids other processes"; fi
tap_done
