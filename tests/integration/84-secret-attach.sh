#!/usr/bin/env bash
# secret attach / detach: a sandbox's owner puts a secret they own, or one
# shared with them, on their sandbox and takes it off again, without
# editing files: the drop-in keeps its comments and other settings, the
# proxy workers take it in place (same pids), the answer gives the line
# for the guest's environment, and the proxy injects for that sandbox only
# after the attach.  Someone else's secret, another member's sandbox and a
# change the configuration would refuse change nothing.  A grant to
# another sandbox leaves lab's intercepted connection alone.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh
. tests/harness/gw.sh

UA=msa$$ UB=msb$$
topo_up || { not_ok "topology"; exit 1; }
topo_members "$UA" "$UB" || { not_ok "members $UA and $UB"; exit 1; }
CTL=$(topo_pub build/gatewayd)
as() { local u=$1; shift; runuser -u "$u" -- "$CTL" ctl -s "$GW_SOCK" "$@"; }

topo_guest lab 10.77.0.13 52:54:00:00:00:0d mt-lab
proxy_certs || not_ok "test certificates"
PX_NO_DNS=1 proxy_servers || not_ok "test servers start"
topo_bg "$NS_INET" upstream python3 tests/harness/dns-upstream.py --addr 203.0.113.53
topo_wait_port "$NS_INET" 203.0.113.53 53
chmod 711 "$TOPO_TMP"
S=$PX_DIR/secrets; mkdir -p "$S" "$PX_DIR/state"; chmod 0700 "$S"
printf 'sk-ua-real-91c4\n' >"$S/ua"; printf 'sk-ub-real-27d0\n' >"$S/ub"
printf 'sk-shared-real-5f1e\n' >"$S/shared"; chmod 0600 "$S"/*
# Interception off: the guest names the proxy (curl -x) for the one
# request that shows the injection.
sed -e "s|proxy: { port = 3128; intercept = true; };|proxy: { port = 3128; intercept = false; upstream_ca = \"$PX_DIR/testca.crt\"; };|" \
    -e "s|^  exceptions = ( );|  exceptions = ( );\n  state_dir = \"$PX_DIR/state\";|" \
    -e '/^sandboxes = (/,$d' examples/demo.conf >"$GW_CONF"
cat >>"$GW_CONF" <<CONF
secrets = (
  { name = "ua"; file = "$S/ua"; hosts = [ "api.bound.test" ]; header = "Authorization";
    placeholder = "moat-ua-PLACEHOLDER"; owner = "$UA"; },
  { name = "ub"; file = "$S/ub"; hosts = [ "api.bound.test" ]; header = "X-Ub";
    placeholder = "moat-ub-PLACEHOLDER"; owner = "$UB"; },
  { name = "shared"; file = "$S/shared"; hosts = [ "api.bound.test" ]; header = "X-Shared";
    placeholder = "moat-shared-PLACEHOLDER"; owner = "$UB"; shared_with = [ "$UA" ]; }
);
sandboxes = (
  { name = "grantee"; mac = "52:54:00:00:00:0e"; address = "10.77.0.14"; tap = "mt-grantee";
    egress = "allowlist"; allow = [ "pypi.org" ]; }
);
CONF
mkdir -p "$TOPO_TMP/sandboxes.d"
LAB=$TOPO_TMP/sandboxes.d/lab.conf
printf '%s\n' '# lab: written by hand; this comment stays' \
	'mac = "52:54:00:00:00:0d"; address = "10.77.0.13"; tap = "mt-lab";' \
	'egress = "open";   # and so does this one' \
	"owner = \"$UA\";" >"$LAB"
chmod 0640 "$LAB"

gw_start; expect_eq "gatewayd starts" 0 $?
wait_for 30 topo_listening "$NS_GW" $GW_ADDR 3128
pids0=$(gw_proxy_pids)
call() { in_ns "$TOPO-lab" curl -sS --max-time 8 -x http://$GW_ADDR:3128 --cacert "$PX_DIR/bundle.crt" \
	-H "Authorization: Bearer moat-ua-PLACEHOLDER" https://api.bound.test/echo 2>&1; }
wait_for 20 test -s "$PX_DIR/state/proxy-ca.crt"
cat "$PX_DIR/state/proxy-ca.crt" "$PX_DIR/testca.crt" >"$PX_DIR/bundle.crt"
: >"$PX_DIR/bound.log"
call >/dev/null
expect_fail "before: lab holds no secret, nothing is injected" grep -q 'sk-ua-real' "$PX_DIR/bound.log"

out=$(as $UA secret attach lab ua 2>&1); rc=$?
expect_eq "$UA attaches their own secret to their sandbox" 0 "$rc"
expect_match "... and is given the line for the guest's environment" "^UA_API_KEY='moat-ua-PLACEHOLDER'$" "$out"
expect_match "the drop-in now lists it" '^secrets = \[ "ua" \];' "$(cat "$LAB")"
expect_match "... its comments stay" '^# lab: written by hand; this comment stays$' "$(cat "$LAB")"
expect_match "... and the other settings" 'egress = "open";   # and so does this one' "$(cat "$LAB")"
expect_eq "... its mode stays" 640 "$(stat -c %a "$LAB")"
expect_eq "the proxy workers took it in place (same pids)" "$pids0" "$(gw_proxy_pids)"
: >"$PX_DIR/bound.log"
injected() { call >/dev/null; grep -q 'sk-ua-real-91c4' "$PX_DIR/bound.log"; }
expect_ok "after: the proxy injects it for lab" wait_for 10 injected

# An intercepted connection of lab's (the proxy reads its requests and
# puts the secret in), held open across a grant to another sandbox and
# its taking back: the workers take grantee's list alone.
in_ns "$TOPO-lab" python3 tests/harness/tunnel.py $GW_ADDR 3128 \
	api.bound.test:443 api.bound.test "$TOPO_TMP/li" --for 120 \
	--tls "$PX_DIR/bundle.crt" &
TOPO_PIDS+=($!)
use() {	# use NAME N -- one request through tunnel NAME; waits for its verdict
	touch "$TOPO_TMP/$1.go-$2"
	wait_for 30 grep -Eqx "(ok|closed) $2" "$TOPO_TMP/$1"
}
wait_for 30 grep -qx 200 "$TOPO_TMP/li"
use li 1
expect_ok "lab holds an intercepted connection" grep -qx "ok 1" "$TOPO_TMP/li"
expect_match "another sandbox is granted a name" '^grantee may reach extra\.test' \
	"$(gw_ctl allow grantee extra.test --for 1m 2>&1)"
expect_match "...and it is taken back" 'grantee no longer reaches extra\.test' \
	"$(gw_ctl unallow grantee extra.test 2>&1)"
use li 2
expect_ok "lab's intercepted connection goes on" grep -qx "ok 2" "$TOPO_TMP/li"
expect_eq "...on the same proxy workers" "$pids0" "$(gw_proxy_pids)"
expect_eq "...and nothing was cut" 0 "$(grep -c '"event":"cut"' "$GW_AUDIT")"
touch "$TOPO_TMP/li.stop"

out=$(as $UA secret attach lab shared 2>&1)
expect_match "a secret shared with $UA can be attached" "^X_SHARED|^SHARED_API_KEY='moat-shared-PLACEHOLDER'$" "$out"
expect_match "... both in the list" '^secrets = \[ "ua", "shared" \];' "$(cat "$LAB")"
before=$(sha256sum <"$LAB")
out=$(as $UA secret attach lab ub 2>&1); rc=$?
expect_eq "$UB's own secret is refused to $UA" 1 "$rc"
expect_match "... saying why" 'no secret "ub" you may attach' "$out"
out=$(as $UB secret attach lab ub 2>&1); rc=$?
expect_eq "$UB cannot touch $UA's sandbox" 1 "$rc"
expect_match "... as if it did not exist" "no sandbox lab \(or not yours\)" "$out"
out=$(as $UA secret attach lab ua 2>&1)
expect_match "attaching twice says so" 'already holds secret "ua"' "$out"
expect_eq "none of these changed the file" "$before" "$(sha256sum <"$LAB")"

# Root may attach anything, but not what the configuration refuses: ub is
# neither $UA's nor shared with them, so the loader refuses lab holding it,
# and the file is put back exactly.
out=$(build/gatewayd ctl -s "$GW_SOCK" secret attach lab ub 2>&1); rc=$?
expect_eq "root's attach the configuration refuses fails" 1 "$rc"
expect_match "... nothing was changed" "nothing was changed" "$out"
expect_eq "... the file is as it was" "$before" "$(sha256sum <"$LAB")"
expect_ok "the configuration on disk still loads" in_ns "$NS_GW" build/gatewayd -n -c "$GW_CONF"

out=$(as $UA secret detach lab ua 2>&1); rc=$?
expect_eq "$UA detaches it" 0 "$rc"
expect_match "the list loses it" '^secrets = \[ "shared" \];' "$(cat "$LAB")"
: >"$PX_DIR/bound.log"
call >/dev/null
expect_fail "after detach nothing of ua's is injected" grep -q 'sk-ua-real' "$PX_DIR/bound.log"
expect_match "attach and detach are audited" '"event":"secret-detach".*"sandbox":"lab","secret":"ua"' "$(cat "$GW_AUDIT")"

# A comment an admin wrote in the list stays where it is: attach adds
# only its entry, detach takes only its entry out.
sed -i "s|^secrets = \[ \"shared\" \];|secrets = [ /* $UB shares it */ \"shared\" ];|" "$LAB"
cp "$LAB" "$TOPO_TMP/lab.commented"
expect_ok "$UA attaches ua again" as $UA secret attach lab ua
expect_match "... only its entry is added, the comment stays" \
	"^secrets = \[ /\* $UB shares it \*/ \"shared\", \"ua\" \];" "$(cat "$LAB")"
expect_ok "$UA detaches it again" as $UA secret detach lab ua
expect_ok "... the file is byte for byte as the admin wrote it" cmp "$TOPO_TMP/lab.commented" "$LAB"
tap_done
