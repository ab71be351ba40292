#!/usr/bin/env bash
# One answer for what a member may not see (issue 40 finding 7): every
# verb a member can aim at another member's secret or sandbox answers
# byte for byte as it does when that object does not exist.  Member $UB
# asks each question twice: once before $UA's secret "zkey" and sandbox
# "zsb" exist, once after; the two answers (text and exit status) must be
# the same.  `secret set` of a name that is taken cannot succeed, so its
# first answer is for a name a stray file holds; neither says whose.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

UA=msa$$ UB=msb$$
topo_up || { not_ok "topology"; exit 1; }
topo_members "$UA" "$UB" || { not_ok "members $UA and $UB"; exit 1; }
CTL=$(topo_pub build/gatewayd)
as() { local u=$1; shift; runuser -u "$u" -- "$CTL" ctl -s "$GW_SOCK" "$@"; }
chmod 711 "$TOPO_TMP"
S=$TOPO_TMP/secrets; mkdir -p "$S" "$TOPO_TMP/state"; chmod 0700 "$S"
printf 'sk-ub-real-27d0\n' >"$S/bkey"; chmod 0600 "$S/bkey"
sed -e "s|^  exceptions = ( );|  exceptions = ( );\n  state_dir = \"$TOPO_TMP/state\";|" \
    -e '/^sandboxes = (/,$d' examples/demo.conf >"$GW_CONF"
cat >>"$GW_CONF" <<CONF
secrets = (
  { name = "bkey"; file = "$S/bkey"; hosts = [ "api.bound.test" ]; header = "X-B";
    placeholder = "moat-bkey-PLACEHOLDER"; owner = "$UB"; }
);
CONF
mkdir -p "$TOPO_TMP/sandboxes.d" "$TOPO_TMP/secrets.d"
printf '%s\n' 'mac = "52:54:00:00:00:0d"; address = "10.77.0.13"; tap = "mt-blab";' \
	'egress = "open";' "owner = \"$UB\";" >"$TOPO_TMP/sandboxes.d/blab.conf"
gw_start; expect_eq "gatewayd starts" 0 $?

# Each question $UB can ask about zkey (a secret) and zsb (a sandbox).
QUESTIONS=(
	"secret attach blab zkey"
	"secret detach blab zkey"
	"secret set zkey --host api.bound.test"
	"secret attach zsb bkey"
	"secret detach zsb bkey"
	"refused zsb"
	"refused zsb --json"
	"names zsb"
	"names zsb --as-allow"
	"allow zsb x.test"
	"unallow zsb x.test"
	"start zsb"
	"stop zsb"
	"destroy zsb"
)
declare -A BEFORE
ask_all() {	# ask_all ARRAY -- each question's exit status and text
	local -n into=$1; local q
	for q in "${QUESTIONS[@]}"; do
		# shellcheck disable=SC2086
		into[$q]="$(printf 'sk-b-other-value\n' | as "$UB" $q 2>&1; echo "rc=$?")"
	done
}
# A name a stray file holds: what `secret set` says for a name not free.
printf '# left here by hand\n' >"$TOPO_TMP/secrets.d/zkey.conf"
ask_all BEFORE
rm -f "$TOPO_TMP/secrets.d/zkey.conf"

out=$(printf 'sk-ua-real-91c4\n' | as "$UA" secret set zkey --host api.bound.test 2>&1)
expect_match "$UA makes secret zkey" '^secret zkey: placeholder ' "$out"
printf '%s\n' 'mac = "52:54:00:00:00:0e"; address = "10.77.0.14"; tap = "mt-zsb";' \
	'egress = "open";' "owner = \"$UA\";" >"$TOPO_TMP/sandboxes.d/zsb.conf"
out=$(gw_ctl reload 2>&1); expect_eq "a reload takes $UA's sandbox zsb" 0 $?
expect_match "zsb is configured" '^zsb ' "$(gw_ctl sandboxes)"

declare -A AFTER
ask_all AFTER
for q in "${QUESTIONS[@]}"; do
	expect_eq "$UB: \"$q\" answers the same whether $UA's object exists" \
		"${BEFORE[$q]}" "${AFTER[$q]}"
	expect_match "... and is refused" 'rc=[12]$' "${AFTER[$q]}"
	case ${AFTER[$q]} in *"$UA"*|*"someone else"*|*belongs*)
		not_ok "\"$q\" names the owner or says the object is someone's" "${AFTER[$q]}";;
	esac
done
expect_match "secret set names no owner, only that the name is not free" \
	'the name "zkey" is not available to you' "${AFTER[secret set zkey --host api.bound.test]}"
expect_eq "$UA's secret kept its value" "sk-ua-real-91c4" "$(cat "$TOPO_TMP/state/secrets/zkey")"
expect_fail "blab holds no zkey" grep -q zkey "$TOPO_TMP/sandboxes.d/blab.conf"
expect_fail "zsb holds no bkey" grep -q bkey "$TOPO_TMP/sandboxes.d/zsb.conf"
tap_done
