#!/usr/bin/env bash
# gatewayd -n / -nv: the first user of the config loader, as an operator
# runs it.  No network is touched.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
T=$(mktemp -d /tmp/moat-check.XXXXXX)
trap 'rm -rf "$T"' EXIT

out=$(build/gatewayd -n -c examples/demo.conf 2>&1); rc=$?
expect_eq "valid config: exit 0" 0 $rc
expect_match "summary lists each sandbox with its mode" \
	'web +10\.77\.0\.10 +allowlist' "$out"
expect_match "summary says OK" 'config examples/demo.conf: OK' "$out"

# stdout only: warnings (owners unknown on this host, the network) go to stderr.
out=$(build/gatewayd -nv -c examples/demo.conf 2>"$T/nv.err")
expect_eq "-nv prints the normalised config (golden)" \
	"$(cat tests/golden/demo.conf.nv)" "$out"
printf '%s\n' "$out" >"$T/again.conf"
expect_eq "-nv output is itself a valid config printing the same" \
	"$out" "$(build/gatewayd -nv -c "$T/again.conf" 2>/dev/null)"

# A secret is summarised by name; its value never appears anywhere.
printf 'sk-live-DO-NOT-PRINT-4242' >"$T/openai"; chmod 600 "$T/openai"
sed -e "s|^secrets = .*||" examples/demo.conf >"$T/s.conf"
cat >>"$T/s.conf" <<CONF
secrets = ( { name = "openai"; file = "$T/openai"; hosts = [ "api.openai.com" ];
              placeholder = "moat-openai-PLACEHOLDER"; } );
CONF
out=$(build/gatewayd -n -c "$T/s.conf" 2>&1); rc=$?
expect_eq "config with a secret: exit 0" 0 $rc
expect_match "secret listed by name" 'secrets \(1\): openai' "$out"
out="$out$(build/gatewayd -nv -c "$T/s.conf" 2>&1)"
case "$out" in *DO-NOT-PRINT*) not_ok "secret value never printed" "$out" ;;
	*) ok "secret value never printed (-n and -nv)" ;; esac

# A broken config: exit 1, every error as FILE:LINE on stderr, nothing on stdout.
sed -e 's|address = "10.77.0.11"|address = "10.78.0.11"|' \
    -e 's|egress = "none"|egress = "closed"|' examples/demo.conf >"$T/bad.conf"
build/gatewayd -n -c "$T/bad.conf" >"$T/out" 2>"$T/err"; rc=$?
expect_eq "invalid config: exit 1" 1 $rc
expect_eq "invalid config: nothing on stdout" "" "$(cat "$T/out")"
expect_match "error names file and line of the bad address" \
	"^$T/bad.conf:18: sandbox \"dev\": address: expected an address inside gateway.network 10.77.0.0/24" \
	"$(cat "$T/err")"
expect_match "second error reported too" \
	"$T/bad.conf:21: sandbox \"locked\": egress: expected \"open\", \"allowlist\" or \"none\", got \"closed\"" \
	"$(cat "$T/err")"
expect_match "error count" "configuration invalid \(2 errors\)" "$(cat "$T/err")"

build/gatewayd -n -c "$T/missing.conf" 2>"$T/err"; rc=$?
expect_eq "missing file: exit 1" 1 $rc
expect_match "missing file: says so, without a line number" \
	"missing.conf: cannot read file: No such file" "$(cat "$T/err")"
expect_fail "missing file: no fake :0: line" grep -q ':0:' "$T/err"

# Typos that validate: an owner who is not a user, an admin group that is
# not a group.  A warning on stderr, exit 0.
sed -e 's|owner = "bob"|owner = "nosuchuser-moat"|' examples/demo.conf >"$T/typo.conf"
sed -i '0,/^gateway *[:=] *{/s||&\n  admin_group = "nosuchgroup-moat";|' "$T/typo.conf"
build/gatewayd -n -c "$T/typo.conf" >"$T/out" 2>"$T/err"; rc=$?
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
out=$(runuser -u nobody -- build/gatewayd -n -c "$T/m.conf" 2>&1); rc=$?
expect_eq "non-root -n with an unreadable secret file: exit 0" 0 $rc
expect_match "non-root -n: the secret file is a warning" \
	"m.conf:[0-9]+: warning: secret \"k\": file: $T/secrets/k is not readable by uid" "$out"
out=$(build/gatewayd -n -c "$T/m.conf" 2>&1); rc=$?
expect_eq "root -n checks the same secret file: exit 0" 0 $rc

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
