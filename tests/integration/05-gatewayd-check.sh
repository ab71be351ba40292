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
expect_match "missing file: says so" "missing.conf:0: cannot read file: No such file" "$(cat "$T/err")"

build/gatewayd --bogus >/dev/null 2>&1; rc=$?
expect_eq "usage error: exit 2" 2 $rc
expect_match "--help fits a screen and shows -c" '-c, --config FILE' "$(build/gatewayd --help)"
tap_done
