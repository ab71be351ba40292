#!/usr/bin/env bash
# nft-rules verify on a gateway that gatewayd runs: it agrees with what
# gatewayd applied (exit 0), reports real drift in nft syntax, names the
# rule deleted by hand and nothing else, and its repair advice works:
# `gatewayd ctl reload` while gatewayd holds the tables (then nothing else
# may change them, `nft delete rule` included), `nft-rules apply` when no
# program does.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology comes up"; tap_done; exit 1; }
cp examples/demo.conf "$GW_CONF"
gw_start; expect_eq "gatewayd starts" 0 $?
verify() { in_ns "$NS_GW" build/nft-rules -c "$GW_CONF" verify 2>&1; }
drift() { printf '%s\n' "$1" | grep '^[-+]'; }
# repair OUTPUT -- run the command verify advises (gatewayd ctl on this
# run's socket).
repair() {
	local cmd
	cmd=$(printf '%s\n' "$1" | sed -n 's/^nft-rules: to repair: //p' | sed 's/ (.*//')
	case $cmd in
	"gatewayd ctl reload") gw_ctl reload ;;
	"nft-rules -c $GW_CONF apply") in_ns "$NS_GW" build/nft-rules -c "$GW_CONF" apply ;;
	*) echo "unexpected advice: $cmd"; return 1 ;;
	esac
}
rule_handle() { # rule_handle TEXT -- handle of the first guest_fwd rule matching TEXT
	in_ns "$NS_GW" nft -a list chain inet moat guest_fwd | grep -m1 -F "$1" |
		sed -n 's/.*# handle \([0-9]*\)$/\1/p'
}

out=$(verify); rc=$?
expect_eq "gatewayd running: verify exits 0" 0 $rc
expect_eq "... and shows no drift (gatewayd's per-sandbox sets lack 'constant': not drift)" "" "$(drift "$out")"
expect_match "gatewayd holds the tables (flag owner)" "flags owner" \
	"$(in_ns "$NS_GW" nft list table inet moat | head -3)"

# The config edited, not yet reloaded: drift, in nft syntax, and the
# advice is a reload, which repairs it.
sed -i 's|egress = "none"; }|egress = "open"; }|' "$GW_CONF"
out=$(verify); rc=$?
expect_eq "config changed, not reloaded: verify exits 1" 1 $rc
expect_match "... the map element in nft syntax, as the kernel has it" \
	'^\+element inet moat sandboxes \{ 10\.77\.0\.12 : goto refuse_none \}$' "$out"
expect_match "... and as the policy wants it" \
	'^-element inet moat sandboxes \{ 10\.77\.0\.12 : accept \}$' "$out"
expect_match "... advice: gatewayd ctl reload" \
	"^nft-rules: to repair: gatewayd ctl reload" "$out"
expect_fail "... not nft-rules apply (which gatewayd's tables refuse)" grep -q "nft-rules -c .* apply" <<<"$out"
expect_ok "the advised repair runs" repair "$out"
out=$(verify); rc=$?
expect_eq "... verify exits 0 again" 0 $rc

# While gatewayd holds the tables, a rule cannot be deleted by hand.
h=$(rule_handle 'udp dport 53 goto refuse_dns')
out=$(in_ns "$NS_GW" nft delete rule inet moat guest_fwd handle "${h:-0}" 2>&1); rc=$?
expect_eq "nft delete rule while gatewayd runs: refused" 1 $rc
expect_match "... Operation not permitted" "Operation not permitted" "$out"
expect_eq "... verify still exits 0" 0 "$(verify >/dev/null; echo $?)"

# gatewayd stopped: the policy stays, held by no one.  A rule deleted by
# hand is one line of drift, named in nft syntax; nft-rules apply is the
# repair and works.
kill "$GW_PID"; wait "$GW_PID" 2>/dev/null
expect_fail "gatewayd stopped: the tables have no owner" \
	grep -q "flags owner" <<<"$(in_ns "$NS_GW" nft list table inet moat | head -3)"
h=$(rule_handle 'udp dport 53 goto refuse_dns')
expect_ok "nft delete rule by hand (no owner now)" \
	in_ns "$NS_GW" nft delete rule inet moat guest_fwd handle "${h:-0}"
out=$(verify); rc=$?
expect_eq "rule deleted by hand: verify exits 1" 1 $rc
expect_match "... names that rule, in nft syntax, and nothing else" \
	"^-rule inet moat guest_fwd #[0-9]+: meta l4proto udp udp dport 53 goto refuse_dns$" "$(drift "$out")"
expect_match "... advice: nft-rules apply" "^nft-rules: to repair: nft-rules -c $GW_CONF apply$" "$out"
expect_ok "the advised repair runs" repair "$out"
expect_match "... the rule is back" "udp dport 53 goto refuse_dns" \
	"$(in_ns "$NS_GW" nft list chain inet moat guest_fwd)"
out=$(verify); rc=$?
expect_eq "... verify exits 0 again" 0 $rc

# A set that is not the policy's, shown in nft syntax.
in_ns "$NS_GW" nft add set inet moat extra '{ type ipv4_addr; flags interval; }'
out=$(verify)
expect_eq "an extra set: shown as nft would declare it" \
	"+set inet moat extra { type ipv4_addr; flags interval; }" "$(drift "$out")"
in_ns "$NS_GW" nft delete set inet moat extra

# gatewayd started again on tables nft-rules wrote: it replaces them, and
# verify agrees with it again.
gw_start; expect_eq "gatewayd starts again" 0 $?
out=$(verify); rc=$?
expect_eq "gatewayd restarted: verify exits 0" 0 $rc
expect_eq "... no drift" "" "$(drift "$out")"
tap_done
