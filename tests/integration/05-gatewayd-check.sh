#!/usr/bin/env bash
# gatewayd -n / -nv: the first user of the config loader, as an operator
# runs it.  No network is touched.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
T=$(mktemp -d /tmp/moat-check.XXXXXX)
# -n checks the config against the host's interfaces too: run it in a
# namespace of ours that has the demo's uplink (up0) and a LAN.
NS=moat$$-check
trap 'ip netns del "$NS" 2>/dev/null; rm -rf "$T"' EXIT
ip netns add "$NS" && ip -n "$NS" link set lo up &&
	ip -n "$NS" link add up0 type bridge && ip -n "$NS" link add lan0 type bridge &&
	ip -n "$NS" addr add 203.0.113.1/24 dev up0 &&
	ip -n "$NS" addr add 192.168.77.1/24 dev lan0 || not_ok "namespace for -n"
gwd() { ip netns exec "$NS" build/gatewayd "$@"; }

out=$(gwd -n -c examples/demo.conf 2>&1); rc=$?
expect_eq "valid config: exit 0" 0 $rc
expect_match "summary lists each sandbox with its mode" \
	'web +10\.77\.0\.10 +allowlist' "$out"
expect_match "summary says OK" 'config examples/demo.conf: OK' "$out"

# stdout only: warnings (owners unknown on this host, the network) go to stderr.
out=$(gwd -nv -c examples/demo.conf 2>"$T/nv.err")
expect_eq "-nv prints the normalised config (golden)" \
	"$(cat tests/golden/demo.conf.nv)" "$out"
printf '%s\n' "$out" >"$T/again.conf"
expect_eq "-nv output is itself a valid config printing the same" \
	"$out" "$(gwd -nv -c "$T/again.conf" 2>/dev/null)"

# A secret is summarised by name; its value never appears anywhere.
printf 'sk-live-DO-NOT-PRINT-4242' >"$T/openai"; chmod 600 "$T/openai"
sed -e "s|^secrets = .*||" examples/demo.conf >"$T/s.conf"
cat >>"$T/s.conf" <<CONF
secrets = ( { name = "openai"; file = "$T/openai"; hosts = [ "api.openai.com" ];
              placeholder = "moat-openai-PLACEHOLDER"; } );
CONF
out=$(gwd -n -c "$T/s.conf" 2>&1); rc=$?
expect_eq "config with a secret: exit 0" 0 $rc
expect_match "secret listed by name" 'secrets \(1\): openai' "$out"
out="$out$(gwd -nv -c "$T/s.conf" 2>&1)"
case "$out" in *DO-NOT-PRINT*) not_ok "secret value never printed" "$out" ;;
	*) ok "secret value never printed (-n and -nv)" ;; esac

# A broken config: exit 1, every error as FILE:LINE on stderr, nothing on stdout.
sed -e 's|address = "10.77.0.11"|address = "10.78.0.11"|' \
    -e 's|egress = "none"|egress = "closed"|' examples/demo.conf >"$T/bad.conf"
gwd -n -c "$T/bad.conf" >"$T/out" 2>"$T/err"; rc=$?
expect_eq "invalid config: exit 1" 1 $rc
expect_eq "invalid config: nothing on stdout" "" "$(cat "$T/out")"
expect_match "error names file and line of the bad address" \
	"^$T/bad.conf:18: sandbox \"dev\": address: expected an address inside gateway.network 10.77.0.0/24" \
	"$(cat "$T/err")"
expect_match "second error reported too" \
	"$T/bad.conf:21: sandbox \"locked\": egress: expected \"open\", \"allowlist\" or \"none\", got \"closed\"" \
	"$(cat "$T/err")"
expect_match "error count" "configuration invalid \(2 errors\)" "$(cat "$T/err")"

gwd -n -c "$T/missing.conf" 2>"$T/err"; rc=$?
expect_eq "missing file: exit 1" 1 $rc
expect_match "missing file: says so, without a line number" \
	"missing.conf: cannot read file: No such file" "$(cat "$T/err")"
expect_fail "missing file: no fake :0: line" grep -q ':0:' "$T/err"

# Typos that validate: an owner who is not a user, an admin group that is
# not a group.  A warning on stderr, exit 0.
sed -e 's|owner = "bob"|owner = "nosuchuser-moat"|' examples/demo.conf >"$T/typo.conf"
sed -i '0,/^gateway *[:=] *{/s||&\n  admin_group = "nosuchgroup-moat";|' "$T/typo.conf"
gwd -n -c "$T/typo.conf" >"$T/out" 2>"$T/err"; rc=$?
expect_eq "unknown owner / admin_group: still valid (exit 0)" 0 $rc
expect_match "unknown owner: a warning with file:line" \
	"^$T/typo.conf:[0-9]+: warning: sandbox \"dev\": owner \"nosuchuser-moat\" is not a user" "$(cat "$T/err")"
expect_match "unknown admin_group: a warning" \
	"warning: gateway.admin_group \"nosuchgroup-moat\" is not a group" "$(cat "$T/err")"

# A member of group moat checks the config: the secret files (0600 root,
# in a 0700 folder) are not readable to them.  A warning, not an error.
mkdir -p "$T/secrets"; chmod 700 "$T/secrets"
printf 'sk-x' >"$T/secrets/k"; chmod 600 "$T/secrets/k"
sed -e "s|^secrets = .*||" examples/demo.conf >"$T/m.conf"
cat >>"$T/m.conf" <<CONF
secrets = ( { name = "k"; file = "$T/secrets/k"; hosts = [ "api.example.com" ];
              placeholder = "moat-k-PLACEHOLDER"; } );
CONF
chmod 755 "$T"; chmod 644 "$T/m.conf"
out=$(ip netns exec "$NS" runuser -u nobody -- build/gatewayd -n -c "$T/m.conf" 2>&1); rc=$?
expect_eq "non-root -n with an unreadable secret file: exit 0" 0 $rc
expect_match "non-root -n: the secret file is a warning" \
	"m.conf:[0-9]+: warning: secret \"k\": file: $T/secrets/k is not readable by uid" "$out"
out=$(gwd -n -c "$T/m.conf" 2>&1); rc=$?
expect_eq "root -n checks the same secret file: exit 0" 0 $rc

# The config against this host: the uplink must be one of its interfaces
# (the error lists them), and the sandbox network no network it already
# has, except on the bridge.  Each an error with file:line, exit 1.
sed -e 's|uplink  = "up0"|uplink  = "upO"|' examples/demo.conf >"$T/upO.conf"
gwd -n -c "$T/upO.conf" >"$T/out" 2>"$T/err"; rc=$?
expect_eq "an uplink this host lacks: exit 1" 1 $rc
expect_match "... file:line, and the interfaces there are" \
	"^$T/upO.conf:6: gateway: uplink: no interface \"upO\" on this host \(it has: lo, up0, lan0\) and no IPv4 default route; set uplink to the interface towards the internet" \
	"$(cat "$T/err")"
# (its own state_dir: were it to start, nothing of it lands on the host)
sed "0,/^};/s|^};|  state_dir = \"$T/state\";\n};|" "$T/upO.conf" >"$T/upO-start.conf"
out=$(timeout 20 ip netns exec "$NS" build/gatewayd -d -c "$T/upO-start.conf" -s "$T/gw.sock" -a "$T/audit.log" 2>&1); rc=$?
expect_eq "gatewayd started with that uplink: exit 1" 1 $rc
expect_match "... the same error, naming the interfaces there are" \
	'upO-start.conf:6: gateway: uplink: no interface "upO" on this host \(it has: lo, up0, lan0\)' "$out"
expect_match "... and it does not start" "not starting" "$out"
sed -e 's|10\.77\.0\.|192.168.77.|g' examples/demo.conf >"$T/lan.conf"
gwd -n -c "$T/lan.conf" >"$T/out" 2>"$T/err"; rc=$?
expect_eq "a sandbox network equal to the LAN's: exit 1" 1 $rc
expect_match "... file:line, the interface and its network" \
	"^$T/lan.conf:7: gateway: network: 192.168.77.0/24 overlaps 192.168.77.0/24, the network of 192.168.77.1/24 on interface lan0 \(expected a sandbox network that no interface but the bridge moat0 uses\)" \
	"$(cat "$T/err")"
ip -n "$NS" link add moat0 type bridge
ip -n "$NS" addr add 10.77.0.1/24 dev moat0
expect_ok "the sandbox network on the bridge itself is fine" gwd -n -c examples/demo.conf
ip -n "$NS" link del moat0

# The shipped config: closed (no sandbox, no exception) and valid once
# uplink names an interface; until then the error says what to fill in.
out=$(gwd -n -c examples/moat.conf 2>&1); rc=$?
expect_eq "shipped moat.conf on a host without eth0: exit 1" 1 $rc
expect_match "... names uplink and the interfaces to choose from" \
	'examples/moat.conf:[0-9]+: gateway: uplink: no interface "eth0" on this host \(it has: lo, up0, lan0\)' "$out"
# With a default route the error proposes its interface, as a line to
# paste into moat.conf; pasted, -n passes.
ip -n "$NS" link set up0 up && ip -n "$NS" route add default via 203.0.113.254 dev up0 ||
	not_ok "a default route in the namespace"
out=$(gwd -n -c examples/moat.conf 2>&1); rc=$?
expect_eq "shipped moat.conf, default route via up0: exit 1" 1 $rc
expect_match "... the fix-it line names the default route's interface" \
	'examples/moat.conf:[0-9]+: gateway: uplink: no interface "eth0" on this host \(it has: lo, up0, lan0\); the default route leaves through up0: set uplink = "up0";$' "$out"
fix=$(printf '%s\n' "$out" | sed -n 's/.*: set \(uplink = "[^"]*";\)$/\1/p')
sed -e "s|^\( *\)uplink *= *\"eth0\";|\1$fix|" examples/moat.conf >"$T/fixed.conf"
expect_ok "... the proposed line, pasted in, passes -n" gwd -n -c "$T/fixed.conf"
ip -n "$NS" route del default; ip -n "$NS" link set up0 down
sed -e 's|"eth0"|"up0"|' examples/moat.conf >"$T/shipped.conf"
out=$(gwd -n -c "$T/shipped.conf" 2>/dev/null); rc=$?
expect_eq "shipped moat.conf with uplink filled in: exit 0" 0 $rc
expect_match "... no exception" "^0 exception\(s\)" "$out"
expect_match "... no sandbox" "^sandboxes \(0\):" "$out"
expect_eq "... and the uplink is the only line that changed" 1 \
	"$(diff examples/moat.conf "$T/shipped.conf" | grep -c '^>')"

# Conventions shared by every program.
for p in gatewayd dnsd nft-rules provision moat-proxy containment-check; do
	expect_eq "$p --version prints the Makefile's version" \
		"$p $(sed -n 's/^VERSION[[:space:]]*=[[:space:]]*//p' Makefile)" "$(build/$p --version 2>&1)"
done
h=$(build/gatewayd ctl --help); rc=$?
expect_eq "gatewayd ctl --help: exit 0" 0 $rc
for v in status sandboxes counters log reload create start stop destroy "secret set" "secret list"; do
	expect_match "gatewayd ctl --help shows $v" "$v" "$h"
done
expect_match "gatewayd --help lists the ctl verbs README uses" \
	'ctl verbs: status, sandboxes, list, counters, log \[-f\], reload' "$(build/gatewayd --help)"
out=$(build/gatewayd ctl -s "$T/nosock" status 2>&1); rc=$?
expect_eq "ctl without a daemon: exit 3" 3 $rc
expect_match "ctl without a daemon: asks whether it runs" "is gatewayd running" "$out"

build/gatewayd --bogus >/dev/null 2>&1; rc=$?
expect_eq "usage error: exit 2" 2 $rc
expect_match "--help fits a screen and shows -c" '-c, --config FILE' "$(build/gatewayd --help)"
tap_done
